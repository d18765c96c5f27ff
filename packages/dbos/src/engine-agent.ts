import type { RuntimeEvent, RuntimeOptions } from "@toolnexus/agents"
import { type Client, ConfigError, type StreamEvent, type Toolkit } from "@toolnexus/core"

const AGENT_NAME = /^[a-zA-Z0-9_-]{1,64}$/

/** What an engine agent runs: one client run, or a runtime tree from its `root` def. */
export interface EngineAgentOptions {
  /** The agent's name (`start(agent, …)`); `^[a-zA-Z0-9_-]{1,64}$`. */
  name: string
  /** A run is `client.run(prompt, { toolkit, executor })`. Exactly one of `client`, `runtime`. */
  client?: Client
  /** The tools of a `client` run. */
  toolkit?: Toolkit
  /** A run is a runtime tree: spawn(`root`) → wake(prompt) → wait (needs `@toolnexus/agents`). */
  runtime?: Omit<RuntimeOptions, "store" | "executor" | "namespace"> & {
    /** The registry's def the tree is spawned from. */
    root: string
  }
  /** Every event of the run (replayed steps' events are not repeated). A throw is ignored. */
  onEvent?: (ev: StreamEvent | RuntimeEvent) => void
  /** The largest journal step, in bytes of its JSON; default 1 MiB. */
  maxStepBytes?: number
}

/** A validated agent definition, served by `launchDbos`. */
export interface EngineAgent {
  /** The agent's name, as `start(agent, …)` names it. */
  readonly name: string
  /** The options it was defined with. */
  readonly options: EngineAgentOptions
}

/**
 * Defines an agent whose runs are DBOS workflows.
 *
 * @throws ConfigError for a bad name, or unless exactly one of `client` and `runtime` is set.
 * @example
 * const agent = dbosAgent({ name: "refunds", client, toolkit })
 */
export function dbosAgent(opts: EngineAgentOptions): EngineAgent {
  if (typeof opts.name !== "string" || !AGENT_NAME.test(opts.name))
    throw new ConfigError(`agent name must match ${AGENT_NAME}, got ${JSON.stringify(opts.name)}`)
  if ((opts.client === undefined) === (opts.runtime === undefined))
    throw new ConfigError(`agent ${opts.name}: set exactly one of \`client\` and \`runtime\``)
  if (opts.runtime !== undefined && typeof opts.runtime.root !== "string")
    throw new ConfigError(`agent ${opts.name}: \`runtime.root\` must name the registry's root def`)
  if (opts.maxStepBytes !== undefined && !(Number.isInteger(opts.maxStepBytes) && opts.maxStepBytes > 0))
    throw new ConfigError(`agent ${opts.name}: maxStepBytes must be a positive integer`)
  return { name: opts.name, options: opts }
}
