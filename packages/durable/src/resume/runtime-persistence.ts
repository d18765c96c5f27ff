import type { Runtime, RuntimeOptions, RuntimeSnapshot, TaskResult } from "@toolnexus/agents"
import { type Answer, AnswerConflictError, ConfigError, StoreError } from "@toolnexus/core"
import type { DurableStore, RuntimeHold } from "../durable-store.js"
import { RuntimeCollisionError } from "../errors.js"
import { settledRequestError } from "../store-engine/claim-refusals.js"
import { checkAnswer } from "../store-engine/option-checks.js"
import { CascadeWrites } from "./cascade-writes.js"
import { resumeClaimed } from "./claimed-resume.js"

/**
 * Saves the runtime's handle tree under `key`, with the requests its parked handles hold, so
 * that any delivery of their answers is routed to this runtime (see `deliverAnswer`).
 * Conversations are already in the runtime's store; pass that same durable store here so
 * one database holds everything.
 *
 * @example
 * const rt = createRuntime({ registry, store })
 * // … a handle parks …
 * await saveRuntime(store, "order-42", rt)
 */
export async function saveRuntime(store: DurableStore, key: string, rt: Runtime): Promise<void> {
  const snapshot = rt.snapshot()
  const holds = holdsOf(rt)
  await refuseCollisions(store, key, rt, snapshot, holds)
  await store.putSnapshot(key, snapshot, { holds })
}

/**
 * Refuses a tree that shares conversations with another runtime (or a plain conversation):
 * a handle's conversation waits on a request the handle neither holds nor cancelled, or a
 * request the tree holds is saved with another runtime key.
 */
async function refuseCollisions(
  store: DurableStore,
  key: string,
  rt: Runtime,
  snapshot: RuntimeSnapshot,
  holds: RuntimeHold[],
): Promise<void> {
  for (const h of snapshot.handles) {
    if (h.id === rt.root.id) continue
    const conversationId = rt.conversationId({ id: h.id })
    const waiting = await store.getPending(conversationId)
    if (waiting === undefined || waiting.id === h.pending?.id || waiting.id === h.cancelled?.id) continue
    throw new RuntimeCollisionError(
      key,
      conversationId,
      waiting.id,
      `(handle ${h.id}) waits on request ${waiting.id}, which this tree does not hold`,
    )
  }
  for (const hold of holds) {
    const entry = await store.findRequest(hold.requestId)
    if (entry?.runtimeKey === undefined || entry.runtimeKey === key) continue
    throw new RuntimeCollisionError(
      key,
      hold.conversationId,
      hold.requestId,
      `holds request ${hold.requestId}, which is saved with the runtime ${JSON.stringify(entry.runtimeKey)}`,
    )
  }
}

/**
 * Rebuilds a runtime saved by {@link saveRuntime}, in this or another process, reconciled
 * with the store. A resume commits its conversations and the snapshot in one store call, so
 * they always agree; a tree stored by an older version, whose resume wrote them separately,
 * may hold a request whose answer a worker applied before it died (its handles saved, the
 * runtime not): it is taken from the store, nothing runs again, and the runtime is saved
 * again. The runtime uses `store` for its conversations unless `opts.store` says otherwise.
 *
 * @throws StoreError when nothing is saved under `key`; SchemaVersionError for an unknown snapshot version.
 */
export async function loadRuntime(store: DurableStore, key: string, opts: RuntimeOptions): Promise<Runtime> {
  const rt = await restore(store, key, opts)
  await reconcileOldRows(store, key, rt)
  return rt
}

/**
 * Options of {@link resumeRuntime}: the runtime's options plus the claim's lease (renewed
 * every `leaseMs / 3`; default 30 s), the attempts before the request is `failed`
 * (default 3), and a signal that aborts the cascade.
 */
export type ResumeRuntimeOptions = RuntimeOptions & {
  /**
   * How long the claim holds before another delivery may take it over, in ms; default 30 000, renewed every
   * `leaseMs / 3`.
   */
  leaseMs?: number
  /** Claims (attempts) before the request is `failed` and waits for `retryFailed`; default 3. */
  maxAttempts?: number
  /** Aborts the cascade; the claim is then released with the abort error, counting an attempt. */
  signal?: AbortSignal
}

/**
 * Loads the runtime saved under `key`, resumes it with the answer, and saves it again.
 * Resolves with the runtime once the cascade has settled (done, or parked on a new request).
 *
 * Exactly once across processes: the request is claimed on the conversation of the topmost
 * handle holding it, and that handle's save — the last of the cascade — consumes the claim
 * (passed to it explicitly). A delivery racing it gets `AnswerConflictError`, and so does a
 * repeated delivery after success. If the cascade fails, the claim is released and the saved
 * runtime is left as it was, so the answer can be delivered again; handles that had already
 * applied it are then taken from the store, not re-run.
 *
 * While the cascade runs the claim is renewed; a lost claim aborts it (`ClaimLostError`). A
 * failed cascade releases the claim with its error, counting an attempt: after
 * `maxAttempts` the request is `failed` and waits for `retryFailed`.
 *
 * @throws UnknownRequestError when no parked handle holds `answer.id`.
 * @throws AnswerConflictError when another delivery holds or already applied the answer.
 * @throws AnswerExpiredError for `ok: true` after the request's `expiresAt` (nothing claimed),
 *   unless an earlier delivery claimed it in time.
 * @throws AnswerInvalidError for an answer not of the wire shape; nothing is changed.
 * @throws ClaimLostError when the claim was taken over or could not be renewed mid-cascade.
 * @example
 * const rt = await resumeRuntime(store, "order-42", { id: req.id, ok: true }, { registry, llm })
 */
export async function resumeRuntime(
  store: DurableStore,
  key: string,
  answer: Answer,
  opts: ResumeRuntimeOptions,
): Promise<Runtime> {
  return (await resumeSavedRuntime(store, key, answer, opts)).rt
}

/**
 * @internal {@link resumeRuntime}, also returning the result of the topmost handle the
 * cascade resumed: what `deliverAnswer` reports.
 */
export async function resumeSavedRuntime(
  store: DurableStore,
  key: string,
  answer: Answer,
  opts: ResumeRuntimeOptions,
): Promise<{ rt: Runtime; result: TaskResult }> {
  checkAnswer(answer)
  const { leaseMs, maxAttempts, signal, ...runtimeOpts } = opts
  if (runtimeOpts.store !== undefined && runtimeOpts.store !== store) {
    throw new ConfigError(
      "resumeRuntime: `store` must be the store the runtime is saved in (a resume commits its conversations and snapshot together)",
    )
  }
  const writes = new CascadeWrites(store)
  const rt = await restore(store, key, { ...runtimeOpts, store: writes })
  const parked = rt.parked().find((p) => p.request.id === answer.id)
  if (parked === undefined) {
    throw await settledRequestError(store, answer.id, `no handle of runtime ${JSON.stringify(key)} holds it`)
  }
  // The claim judges the answer once (a late first approval is refused, one claimed in time
  // honoured, also when a sweep completes it). The cascade runs under it, and what it changed
  // — its conversations, the snapshot and the claim's consumption — is written by one
  // `commitResume` while the claim is still held. A cascade that throws or ends in an error
  // writes nothing and releases the claim.
  let result: TaskResult
  try {
    result = await resumeClaimed(
      store,
      parked.topConversationId,
      answer,
      { leaseMs, maxAttempts, signal, runtimeKey: key },
      async ({ claim, signal }) => {
        writes.hold()
        let top: TaskResult
        try {
          top = await rt.resume(claim.answer, { claim: claim.token, signal })
        } catch (error) {
          writes.drop()
          throw error
        }
        if (cascadeFailure(top) !== undefined) {
          writes.drop()
          return top
        }
        await store.commitResume({
          saves: writes.take(),
          snapshot: { key, value: rt.snapshot(), holds: holdsOf(rt) },
        })
        return top
      },
      cascadeFailure,
    )
  } catch (error) {
    // A tree stored by an older version may still hold a request whose answer was applied
    // before its worker died: repair it from the store, then refuse as the claim did.
    if (AnswerConflictError.isInstance(error) && error.decision !== undefined) {
      await reconcileOldRows(store, key, rt)
    }
    throw error
  }
  return { rt, result }
}

/** Why a cascade did not apply the answer: it ended in an error, or was interrupted (aborted). */
function cascadeFailure(top: TaskResult): Error | undefined {
  if (top.status !== "error" && top.status !== "interrupted") return undefined
  return new Error(top.text || `the resume ended ${top.status}`)
}

async function restore(store: DurableStore, key: string, opts: RuntimeOptions): Promise<Runtime> {
  const snapshot = await store.getSnapshot(key)
  if (snapshot === undefined) throw new StoreError(`no runtime is saved under key ${JSON.stringify(key)}`)
  const agents = await loadAgents()
  return agents.restoreRuntime(snapshot as RuntimeSnapshot, { ...opts, store: opts.store ?? store })
}

/**
 * Reading old rows: answers a worker of an older version applied before it died (its handles
 * saved, the runtime not) are taken from the store by the runtime itself — the store's
 * decision is what was applied — and the runtime is saved again.
 */
async function reconcileOldRows(store: DurableStore, key: string, rt: Runtime): Promise<void> {
  const recovered = await rt.reconcile(async (requestId) => {
    const decision = await store.getDecision(requestId)
    return (
      decision && { id: requestId, ok: decision.ok, ...(decision.reason ? { reason: decision.reason } : {}) }
    )
  })
  if (recovered.length > 0) await saveRuntime(store, key, rt)
}

/** Per parked request id, the deepest handle holding it, as the store's request index keeps it. */
function holdsOf(rt: Runtime): RuntimeHold[] {
  return rt.parked().map(({ request, conversationId, path }) => ({
    requestId: request.id,
    conversationId,
    ...(path.length > 0 ? { path } : {}),
  }))
}

async function loadAgents(): Promise<typeof import("@toolnexus/agents")> {
  try {
    return await import("@toolnexus/agents")
  } catch (error) {
    throw new ConfigError("runtime persistence needs @toolnexus/agents: npm install @toolnexus/agents", {
      cause: error,
    })
  }
}
