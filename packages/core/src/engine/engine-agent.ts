import type { Client } from "../client/client.js"
import type { DurableExecutor } from "../client/executor.js"
import type { StreamEvent } from "../client/run-result.js"
import { type HostAgent, type HostAgentOptions, hostAgent } from "../host/host-agent.js"

/** §15's name of {@link HostAgentOptions}, kept as an alias (`Event` defaults to `StreamEvent` as before). */
export type EngineAgentOptions<Tree extends object = object, Event = StreamEvent> = HostAgentOptions<
  Tree,
  Event
>

/** §15's name of {@link HostAgent}, kept as an alias. */
export type EngineAgent<Options extends HostAgentOptions<object, never> = EngineAgentOptions> =
  HostAgent<Options>

/**
 * §15's name of {@link hostAgent}, kept as an alias.
 *
 * @example
 * const agent = defineEngineAgent({ name: "refunds", client, toolkit })
 */
export const defineEngineAgent: typeof hostAgent = hostAgent

/** The part of an agents runtime an engine run drives (`createRuntime` of `@toolnexus/agents`). */
export interface EngineTreeRuntime<Result> {
  /** The tree's root handle. */
  readonly root: unknown
  /** Spawns a handle of registry def `def` under `parent`. */
  spawn(parent: never, def: string): unknown
  /** Gives a handle its prompt. */
  wake(handle: never, prompt: string): void
  /** Settles when the handle's run ends (or suspends). */
  wait(handle: never): Promise<Result>
  /** Closes a handle and its subtree. */
  close(handle: never, opts: { force: boolean }): Promise<unknown>
}

/** An executor that remembers the first engine fault (see {@link engineExecutor}). */
export interface EngineExecutor extends DurableExecutor {
  /** The first engine fault seen, or undefined. */
  fault(): unknown
}

/**
 * An engine's executor for one run of `agent`: its `maxStepBytes`, and a guard. A child
 * handle's failure reaches its parent as data, and an engine fault (`isFault`: the engine lost
 * the run, was cancelled, or replayed out of step) must not: once one is seen every later
 * step and wait fails with it, and {@link runEngineAgent} fails the run with it.
 */
export function engineExecutor(
  agent: EngineAgent<EngineAgentOptions<object, never>>,
  base: DurableExecutor,
  isFault: (error: unknown) => boolean,
): EngineExecutor {
  let fault: { error: unknown } | undefined
  const guard = async <T>(op: () => Promise<T>): Promise<T> => {
    if (fault) throw fault.error
    try {
      return await op()
    } catch (error) {
      if (isFault(error)) fault ??= { error }
      throw error
    }
  }
  const executor: EngineExecutor = {
    id: base.id,
    step: (name, fn) => guard(() => base.step(name, fn)),
    wait: (request) => guard(() => base.wait(request)),
    fault: () => fault?.error,
  }
  const maxStepBytes = agent.options.maxStepBytes ?? base.maxStepBytes
  return maxStepBytes === undefined ? executor : { ...executor, maxStepBytes }
}

/**
 * Runs `agent` on `prompt` under `executor`: `client.run`, or a runtime tree (`createRuntime`
 * passed in, so core never loads `@toolnexus/agents`). An engine fault seen on the way fails
 * the run, whatever the loop made of it.
 */
export async function runEngineAgent<Result>(
  agent: EngineAgent<EngineAgentOptions<object, never>>,
  prompt: string,
  executor: EngineExecutor,
  createRuntime: () => Promise<(opts: object) => EngineTreeRuntime<Result>>,
): Promise<Result | Awaited<ReturnType<Client["run"]>>> {
  const { client, toolkit, runtime } = agent.options
  const onEvent = agent.options.onEvent as ((ev: unknown) => void) | undefined
  const listener = onEvent
    ? (ev: unknown) => {
        try {
          onEvent(ev)
        } catch {
          // Observers cannot change a run.
        }
      }
    : undefined
  const checked = <T>(result: T): T => {
    const fault = executor.fault()
    if (fault !== undefined) throw fault
    return result
  }
  if (client) return checked(await client.run(prompt, { toolkit, executor, onEvent: listener }))
  const { root, ...options } = runtime as { root: string }
  const rt = (await createRuntime())({ ...options, executor, onEvent: listener })
  try {
    const handle = rt.spawn(rt.root as never, root)
    rt.wake(handle as never, prompt)
    return checked(await rt.wait(handle as never))
  } finally {
    await rt.close(rt.root as never, { force: true })
  }
}
