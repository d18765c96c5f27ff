import type { RuntimeEvent, RuntimeOptions } from "@toolnexus/agents"
import type { StreamEvent } from "@toolnexus/core"
import {
  type EngineAgent as CoreEngineAgent,
  type EngineAgentOptions as CoreEngineAgentOptions,
  defineEngineAgent,
} from "@toolnexus/core/engine"

/** What an engine agent runs: one client run, or a runtime tree from its `root` def. */
export type EngineAgentOptions = CoreEngineAgentOptions<
  Omit<RuntimeOptions, "store" | "executor" | "namespace">,
  StreamEvent | RuntimeEvent
>

/** A validated agent definition, served by `serveRestate`. */
export type EngineAgent = CoreEngineAgent<EngineAgentOptions>

/**
 * Defines an agent whose runs are Restate workflows.
 *
 * @throws ConfigError for a bad name, or unless exactly one of `client` and `runtime` is set.
 * @example
 * const agent = restateAgent({ name: "refunds", client, toolkit })
 */
export function restateAgent(opts: EngineAgentOptions): EngineAgent {
  return defineEngineAgent(opts)
}
