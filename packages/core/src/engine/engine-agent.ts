import type { DurableExecutor } from "../client/executor.js"
import type { RunResult, StreamEvent } from "../client/run-result.js"
import { ConfigError } from "../errors.js"
import type { RuntimeEvent } from "../host/host-types.js"
import type { Message, Prompt } from "../types.js"
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

/**
 * What runs a runtime tree's turn under an engine: `runEngineTree` of `@toolnexus/agents`,
 * which owns the runtime it drives (core never loads agents: an engine imports it for trees
 * only, so a client-only worker needs no agents install).
 */
export type EngineTreeRunner<Result> = (input: {
  /** The agent's `runtime` options (its `root` def included). */
  runtime: { root: string }
  /** The tree's prompt. */
  prompt: string
  /** The run's executor (the tree's steps and waits go through it). */
  executor: DurableExecutor
  /** Every event of the tree; a throw is ignored by the caller's listener. */
  onEvent?: ((ev: never) => void) | undefined
}) => Promise<EngineTurn<Result>>

/** What one engine turn of an agent ran to: its result, and the conversation it leaves. */
export interface EngineTurn<Result> {
  /** The run's result (`RunResult` of a client agent, the root's `TaskResult` of a tree). */
  result: Result
  /** The conversation after the turn: the client run's messages, or the tree root's. */
  messages: Message[]
}

/** Options of {@link runEngineAgent}. */
export interface EngineTurnOptions {
  /** Earlier turns of the conversation (a client agent's later turn, `RunHost.send`). */
  history?: Message[]
  /** Every event of the run, besides the agent's own `onEvent` (the workers' event log). A throw is ignored. */
  onEvent?: (ev: StreamEvent | RuntimeEvent) => void
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
    wait: (request, context) => guard(() => base.wait(request, context)),
    fault: () => fault?.error,
  }
  const maxStepBytes = agent.options.maxStepBytes ?? base.maxStepBytes
  return maxStepBytes === undefined ? executor : { ...executor, maxStepBytes }
}

/**
 * Runs `agent` on `prompt` under `executor`: `client.run` (after `opts.history`), or a runtime
 * tree through `runTree` (passed in, so core never loads `@toolnexus/agents`). An engine fault
 * seen on the way fails the run, whatever the loop made of it.
 *
 * @throws ConfigError for a later turn (`history`) or content parts given to a runtime tree.
 */
export async function runEngineAgent<Result>(
  agent: EngineAgent<EngineAgentOptions<object, never>>,
  prompt: Prompt,
  executor: EngineExecutor,
  runTree: () => Promise<EngineTreeRunner<Result>>,
  opts: EngineTurnOptions = {},
): Promise<EngineTurn<Result | RunResult>> {
  const { client, toolkit, runtime } = agent.options
  const listeners = [agent.options.onEvent as ((ev: unknown) => void) | undefined, opts.onEvent].filter(
    (l): l is (ev: unknown) => void => l !== undefined,
  )
  const listener =
    listeners.length === 0
      ? undefined
      : (ev: unknown) => {
          for (const l of listeners) {
            try {
              l(ev)
            } catch {
              // Observers cannot change a run.
            }
          }
        }
  const checked = <T>(turn: T): T => {
    const fault = executor.fault()
    if (fault !== undefined) throw fault
    return turn
  }
  if (client) {
    const result = checked(
      await client.run(prompt, { toolkit, executor, onEvent: listener, history: opts.history ?? [] }),
    )
    return { result, messages: result.messages }
  }
  if (opts.history !== undefined)
    throw new ConfigError(`agent ${agent.name} runs a runtime tree: it takes no further turns`)
  if (typeof prompt !== "string")
    throw new ConfigError(`agent ${agent.name} runs a runtime tree: its prompt must be text`)
  const run = await runTree()
  return checked(await run({ runtime: runtime as { root: string }, prompt, executor, onEvent: listener }))
}
