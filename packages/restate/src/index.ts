import type { EngineAgent, EngineAgentOptions } from "@toolnexus/agents"
import { hostAgent } from "@toolnexus/core"

/**
 * `hostAgent` (core) under this engine's name: declares an agent whose runs are Restate
 * workflows (one client run, or a runtime tree from its `root` def).
 *
 * @throws ConfigError for a bad name, or unless exactly one of `client` and `runtime` is set.
 * @example
 * const agent = restateAgent({ name: "refunds", client, toolkit })
 */
export const restateAgent: (opts: EngineAgentOptions) => EngineAgent = hostAgent
export type { EngineAgent, EngineAgentOptions } from "@toolnexus/agents"
export { serveRestate } from "./serve-restate.js"
export type { RestateWorker, ServeRestateOptions } from "./serve-restate.js"
export { connectRestate } from "./connect-restate.js"
export type { ConnectRestateOptions } from "./connect-restate.js"
export { EngineRunError } from "@toolnexus/core"
export type { EngineConnection, PendingEntry, RunHost } from "@toolnexus/core"
