import type { RuntimeEvent, RuntimeOptions } from "@toolnexus/agents"
import { type HostAgent, type HostAgentOptions, type StreamEvent, hostAgent } from "@toolnexus/core"

/** What an engine agent runs: one client run, or a runtime tree from its `root` def. */
export type EngineAgentOptions = HostAgentOptions<
  Omit<RuntimeOptions, "store" | "executor" | "namespace">,
  StreamEvent | RuntimeEvent
>

/** A validated agent definition, served by `serveRestate`. */
export type EngineAgent = HostAgent<EngineAgentOptions>

/**
 * `hostAgent` (core), typed for this engine: defines an agent whose runs are Restate workflows.
 *
 * @throws ConfigError for a bad name, or unless exactly one of `client` and `runtime` is set.
 * @example
 * const agent = restateAgent({ name: "refunds", client, toolkit })
 */
export function restateAgent(opts: EngineAgentOptions): EngineAgent {
  return hostAgent(opts)
}
