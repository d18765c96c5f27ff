import type { HostAgent, HostAgentOptions, StreamEvent } from "@toolnexus/core"
import type { RuntimeEvent } from "./runtime-events.js"
import type { RuntimeOptions } from "./types.js"

/**
 * What an agent a host runs is declared with (`hostAgent`, and the engines' `restateAgent` /
 * `dbosAgent`): one client run, or a runtime tree from its `root` def, with this runtime's
 * options less what the host supplies (`store`, `executor`, `namespace`).
 */
export type EngineAgentOptions = HostAgentOptions<
  Omit<RuntimeOptions, "store" | "executor" | "namespace">,
  StreamEvent | RuntimeEvent
>

/** An agent declared for a host: `hostAgent(opts)` with {@link EngineAgentOptions}. */
export type EngineAgent = HostAgent<EngineAgentOptions>
