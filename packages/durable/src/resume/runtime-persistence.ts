import type { Runtime, RuntimeOptions } from "@toolnexus/agents"
import { type Answer, ConfigError, StoreError, UnknownRequestError } from "@toolnexus/core"
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
  const snapshot = await store.getSnapshot(key)
  if (snapshot === undefined) throw new StoreError(`no runtime is saved under key ${JSON.stringify(key)}`)
  const agents = await loadAgents()
  return agents.restoreRuntime(snapshot as Parameters<typeof agents.restoreRuntime>[0], {
    ...opts,
    store: opts.store ?? store,
  })
}

/**
 * Loads the runtime saved under `key`, resumes it with the answer, and saves it again.
 * Resolves with the runtime once the cascade has settled (done, or parked on a new request).
 *
 * The answer is first claimed on the conversation of the deepest handle holding the request,
 * so two processes delivering the same answer at once resume the tree once: the other gets
 * `AnswerConflictError`. A failed resume releases the claim for the next delivery.
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
  const rt = await loadRuntime(store, key, runtimeOpts)
  const holder = deepestHolder(rt, answer.id)
  if (!holder)
    throw new UnknownRequestError(answer.id, `no handle of runtime ${JSON.stringify(key)} holds it`)
  const claim = await store.claimAnswer(holder, answer, { leaseMs })
  try {
    await rt.resume(claim.answer)
  } catch (error) {
    await store.releaseClaim(holder, claim.token).catch(() => {})
    throw error
  }
  await saveRuntime(store, key, rt)
  return rt
}

/** The id of the deepest parked handle whose request is `requestId`. */
function deepestHolder(rt: Runtime, requestId: string): string | undefined {
  let found: string | undefined
  for (const view of rt.list()) {
    if (view.state !== "suspended" || view.pending?.id !== requestId) continue
    if (!found || view.id.split("/").length > found.split("/").length) found = view.id
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
