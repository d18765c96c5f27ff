import type { Client } from "../client/client.js"
import type { StreamEvent } from "../client/run-result.js"
import { ConfigError } from "../errors.js"
import type { Toolkit } from "../tools/toolkit.js"
import type { RuntimeEvent } from "./host-types.js"

const AGENT_NAME = /^[a-zA-Z0-9_-]{1,64}$/

/**
 * One declaration of an agent for every host (`createStoreHost`, `serveRestate`, `launchDbos`):
 * one client run, or a runtime tree from its `root` def. `Tree` is the agents runtime's
 * options (a host package fills it in: `RuntimeOptions` less what the host supplies) and
 * `Event` the events its runs emit.
 */
export interface HostAgentOptions<Tree extends object = object, Event = StreamEvent | RuntimeEvent> {
  /** The agent's name (`start(agent, …)`); `^[a-zA-Z0-9_-]{1,64}$`. */
  name: string
  /** A run is one client run (`client.run`, or `client.ask` on a store host). Exactly one of `client`, `runtime`. */
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
  /** The largest journal step on an engine, in bytes of its JSON; default 1 MiB. */
  maxStepBytes?: number
}

/** A validated agent declaration, served by any host. */
export interface HostAgent<Options extends HostAgentOptions<object, never> = HostAgentOptions> {
  /** The agent's name, as `start(agent, …)` names it. */
  readonly name: string
  /** The options it was declared with. */
  readonly options: Options
}

/**
 * Declares an agent for any host (`restateAgent`, `dbosAgent` and core's `defineEngineAgent`
 * are this).
 *
 * @throws ConfigError for a bad name or `maxStepBytes`, or unless exactly one of `client` and
 *   `runtime` (with a `root`) is set.
 * @example
 * const agent = hostAgent({ name: "refunds", client, toolkit })
 */
export function hostAgent<Options extends HostAgentOptions<object, never>>(
  opts: Options,
): HostAgent<Options> {
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
