import type { EngineAgent, EngineAgentOptions } from "@toolnexus/agents"
import { hostAgent } from "@toolnexus/core"

/**
 * `hostAgent` (core) under this engine's name: declares an agent whose runs are DBOS workflows
 * (one client run, or a runtime tree from its `root` def).
 *
 * @throws ConfigError for a bad name, or unless exactly one of `client` and `runtime` is set.
 * @example
 * const agent = dbosAgent({ name: "refunds", client, toolkit })
 */
export const dbosAgent: (opts: EngineAgentOptions) => EngineAgent = hostAgent
export type { EngineAgent, EngineAgentOptions } from "@toolnexus/agents"
export { launchDbos } from "./launch-dbos.js"
export type { LaunchDbosOptions } from "./launch-dbos.js"
export { connectDbos } from "./connect-dbos.js"
export type { ConnectDbosOptions } from "./connect-dbos.js"
export { EngineRunError } from "@toolnexus/core"
export type { EngineConnection, PendingEntry, RunHost } from "@toolnexus/core"
