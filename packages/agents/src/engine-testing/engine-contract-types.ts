import type { EngineConnection, RunResult } from "@toolnexus/core"
import type { TaskResult } from "../types.js"
import type { DefineEngineAgent } from "./contract-agents.js"

/**
 * What an engine package gives the contract suite's worker processes, as the default exports
 * of a module (its path is {@link EngineContractInit.adapter}): how to define an agent, and how
 * to serve agents in this process with the engine's settings in `env`.
 */
export interface EngineAdapter {
  /** The engine package's agent definer (`restateAgent`, `dbosAgent`). */
  define: DefineEngineAgent
  /** Serves `agents` in a worker process with the engine's `env`; resolves once it serves. */
  serve(
    agents: unknown[],
    env: NodeJS.ProcessEnv,
  ): Promise<{
    /** Stops serving. */
    close(): Promise<void>
  }>
}

/** A running engine the suite's workers serve, started once per suite. */
export interface ContractEngine {
  /** Settings a worker process needs (e.g. the admin URL and port, the database URL). */
  env: Record<string, string>
  /** A connection to the engine's runs. */
  connect(): EngineConnection<RunResult | TaskResult>
  /** Stops the engine and removes what it made. */
  stop(): Promise<void>
}

/** How an engine package's test file plugs into `describeEngineContract`. */
export interface EngineContractInit {
  /** The path of the adapter module (an {@link EngineAdapter}) workers load. */
  adapter: string
  /** Starts the engine (a server, a database of its own). */
  start(): Promise<ContractEngine>
  /** When set, the suite is skipped and this reason printed once. */
  skip?: string
}
