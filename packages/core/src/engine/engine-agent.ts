import type { Client } from "../client/client.js"
import type { DurableExecutor } from "../client/executor.js"
import type { StreamEvent } from "../client/run-result.js"
import { ConfigError } from "../errors.js"
import type { Toolkit } from "../tools/toolkit.js"

const AGENT_NAME = /^[a-zA-Z0-9_-]{1,64}$/

/**
 * What an engine agent runs: one client run, or a runtime tree from its `root` def. `Tree` is
 * the agents runtime's options and `Event` its events; an engine package fills both in.
 */
export interface EngineAgentOptions<Tree extends object = object, Event = StreamEvent> {
  /** The agent's name (`start(agent, …)`); `^[a-zA-Z0-9_-]{1,64}$`. */
  name: string
  /** A run is `client.run(prompt, { toolkit, executor })`. Exactly one of `client`, `runtime`. */
  client?: Client
  /** The tools of a `client` run. */
  toolkit?: Toolkit
  /** A run is a runtime tree: spawn(`root`) → wake(prompt) → wait (needs `@toolnexus/agents`). */
  runtime?: Tree & {
    /** The registry's def the tree is spawned from. */
    root: string
  }
  /** Every event of the run (replayed steps' events are not repeated). A throw is ignored. */
  onEvent?: (ev: Event) => void
  /** The largest journal step, in bytes of its JSON; default 1 MiB. */
  maxStepBytes?: number
}

/** A validated agent definition, served by an engine worker (`serveRestate`, `launchDbos`). */
export interface EngineAgent<Options extends EngineAgentOptions<object, never> = EngineAgentOptions> {
  /** The agent's name, as `start(agent, …)` names it. */
  readonly name: string
  /** The options it was defined with. */
  readonly options: Options
}

/**
 * Validates an engine agent definition (`restateAgent`, `dbosAgent` are this).
 *
 * @throws ConfigError for a bad name or `maxStepBytes`, or unless exactly one of `client` and
 *   `runtime` (with a `root`) is set.
 * @example
 * const agent = defineEngineAgent({ name: "refunds", client, toolkit })
 */
export function defineEngineAgent<Options extends EngineAgentOptions<object, never>>(
  opts: Options,
): EngineAgent<Options> {
  if (typeof opts?.name !== "string" || !AGENT_NAME.test(opts.name))
    throw new ConfigError(`agent name must match ${AGENT_NAME}, got ${JSON.stringify(opts?.name)}`)
  if ((opts.client === undefined) === (opts.runtime === undefined))
    throw new ConfigError(`agent ${opts.name}: set exactly one of \`client\` and \`runtime\``)
  if (opts.runtime !== undefined && typeof opts.runtime.root !== "string")
    throw new ConfigError(`agent ${opts.name}: \`runtime.root\` must name the registry's root def`)
  if (opts.maxStepBytes !== undefined && !(Number.isInteger(opts.maxStepBytes) && opts.maxStepBytes > 0))
    throw new ConfigError(`agent ${opts.name}: maxStepBytes must be a positive integer`)
  return { name: opts.name, options: opts }
}

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
