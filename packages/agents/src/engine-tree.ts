import type { Message } from "@toolnexus/core"
import type { EngineTreeRunner } from "@toolnexus/core/engine"
import { createRuntime } from "./runtime.js"
import type { RuntimeEvent } from "./runtime-events.js"
import type { RuntimeOptions, TaskResult } from "./types.js"

/**
 * Runs one turn of a runtime tree under an engine's executor (core's engine seam calls it; the
 * engine packages import it only for a `runtime` agent): spawn the `root` def, wake it with the
 * prompt, wait, and return its result with the root's conversation; the tree is closed after.
 *
 * @example
 * const turn = await runEngineAgent(agent, prompt, executor, async () => (await import("@toolnexus/agents")).runEngineTree)
 */
export const runEngineTree: EngineTreeRunner<TaskResult> = async ({ runtime, prompt, executor, onEvent }) => {
  const { root, ...options } = runtime as Omit<RuntimeOptions, "store" | "executor" | "namespace"> & {
    root: string
  }
  const rt = createRuntime({
    ...options,
    executor,
    ...(onEvent ? { onEvent: onEvent as (ev: RuntimeEvent) => void } : {}),
  })
  try {
    const handle = rt.spawn(rt.root, root)
    rt.wake(handle, prompt)
    const result = await rt.wait(handle)
    const messages: Message[] = (await rt.store.get(rt.conversationId(handle))) ?? []
    return { result, messages }
  } finally {
    await rt.close(rt.root, { force: true })
  }
}
