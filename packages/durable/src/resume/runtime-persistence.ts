import type { Runtime, RuntimeOptions, RuntimeSnapshot } from "@toolnexus/agents"
import {
  type Answer,
  AnswerConflictError,
  ConfigError,
  type ConversationStore,
  StoreError,
  UnknownRequestError,
} from "@toolnexus/core"
import type { DurableStore } from "../durable-store.js"

/**
 * Saves the runtime's handle tree under `key`. Conversations are already in the runtime's
 * store; pass that same durable store here so one database holds everything.
 *
 * @example
 * const rt = createRuntime({ registry, store })
 * // … a handle parks …
 * await saveRuntime(store, "order-42", rt)
 */
export async function saveRuntime(store: DurableStore, key: string, rt: Runtime): Promise<void> {
  await store.putSnapshot(key, rt.snapshot())
}

/**
 * Rebuilds a runtime saved by {@link saveRuntime}, in this or another process. The runtime
 * uses `store` for its conversations unless `opts.store` says otherwise.
 *
 * @throws StoreError when nothing is saved under `key`; SchemaVersionError for an unknown snapshot version.
 */
export async function loadRuntime(store: DurableStore, key: string, opts: RuntimeOptions): Promise<Runtime> {
  return restore(await readSnapshot(store, key), store, opts)
}

async function readSnapshot(store: DurableStore, key: string): Promise<RuntimeSnapshot> {
  const snapshot = await store.getSnapshot(key)
  if (snapshot === undefined) throw new StoreError(`no runtime is saved under key ${JSON.stringify(key)}`)
  return snapshot as RuntimeSnapshot
}

async function restore(
  snapshot: RuntimeSnapshot,
  store: DurableStore,
  opts: RuntimeOptions,
): Promise<Runtime> {
  const agents = await loadAgents()
  return agents.restoreRuntime(snapshot, { ...opts, store: opts.store ?? store })
}

/**
 * Loads the runtime saved under `key`, resumes it with the answer, and saves it again.
 * Resolves with the runtime once the cascade has settled (done, or parked on a new request).
 *
 * Exactly once across processes: the answer is claimed on the conversation of the topmost
 * handle holding the request, and that handle's save — the last of the cascade — consumes
 * the claim. A delivery racing it gets `AnswerConflictError`. If the cascade fails, the
 * claim is released and the saved runtime is left as it was, so the answer can be delivered
 * again; handles that had already applied it are then taken from the store, not re-run. A
 * redelivery after a worker died between the last save and the runtime's save brings the
 * saved runtime up to date and is refused with `AnswerConflictError`.
 *
 * @throws UnknownRequestError when no parked handle holds `answer.id`.
 * @throws AnswerConflictError when another delivery holds or already applied the answer.
 * @example
 * const rt = await resumeRuntime(store, "order-42", { id: req.id, ok: true }, { registry, llm })
 */
export async function resumeRuntime(
  store: DurableStore,
  key: string,
  answer: Answer,
  opts: RuntimeOptions & { leaseMs?: number },
): Promise<Runtime> {
  const { leaseMs, ...runtimeOpts } = opts
  const fence: { id?: string; token?: string } = {}
  const fenced: ConversationStore & Pick<DurableStore, "getPending"> = {
    get: (id) => store.get(id),
    getPending: (id) => store.getPending(id),
    save: (id, messages, meta) => {
      if (id !== fence.id || fence.token === undefined) return store.save(id, messages, meta)
      const claim = fence.token
      fence.token = undefined
      return store.save(id, messages, { ...meta, claim })
    },
  }
  const snapshot = await readSnapshot(store, key)
  const rt = await restore(snapshot, store, { ...runtimeOpts, store: runtimeOpts.store ?? fenced })
  const top = topmostHolder(rt, answer.id)
  if (!top) throw new UnknownRequestError(answer.id, `no handle of runtime ${JSON.stringify(key)} holds it`)
  fence.id = `${snapshot.namespace ?? ""}${top}`
  const claim = await store.claimAnswer(fence.id, answer, { leaseMs }).catch(async (error: unknown) => {
    if (
      AnswerConflictError.isInstance(error) &&
      (await store.getPending(fence.id as string))?.id !== answer.id
    ) {
      // Applied by a worker that died before it saved the runtime: bring the saved runtime
      // up to date (every handle is taken from the store, nothing runs), then refuse.
      await rt.resume(answer)
      await saveRuntime(store, key, rt)
    }
    throw error
  })
  fence.token = claim.token
  await rt.resume(claim.answer)
  const outcome = await rt.wait({ id: top })
  if (fence.token !== undefined || outcome.status === "error") {
    // The top's save never consumed the claim: keep the saved runtime, free the answer.
    await store.releaseClaim(fence.id, claim.token).catch(() => {})
    return rt
  }
  await saveRuntime(store, key, rt)
  return rt
}

/** The id of the topmost parked handle whose request is `requestId`: the cascade's last step. */
function topmostHolder(rt: Runtime, requestId: string): string | undefined {
  let found: string | undefined
  for (const view of rt.list()) {
    if (view.state !== "suspended" || view.pending?.id !== requestId) continue
    if (!found || view.id.split("/").length < found.split("/").length) found = view.id
  }
  return found
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
