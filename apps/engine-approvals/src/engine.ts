import type { EngineConnection } from "@toolnexus/core"
import { connectDbos, dbosAgent, launchDbos } from "@toolnexus/dbos"
import { connectRestate, restateAgent, serveRestate } from "@toolnexus/restate"
import { createModel } from "../../approvals/src/model.js"
import { createApprovalToolkit } from "../../approvals/src/tools.js"

/** Which engine runs the agent, and where it is; read from the environment. */
export interface EngineSettings {
  engine: "restate" | "dbos"
  /** Restate: the ingress and admin URLs, and this worker's endpoint port. */
  ingress: string
  admin: string
  workerPort: number
  /** DBOS: its system database. */
  databaseUrl: string
}

export function engineSettings(env: NodeJS.ProcessEnv = process.env): EngineSettings {
  const engine = env.ENGINE ?? "restate"
  if (engine !== "restate" && engine !== "dbos")
    throw new Error(`ENGINE must be restate or dbos, got ${engine}`)
  return {
    engine,
    ingress: env.RESTATE_INGRESS ?? "http://127.0.0.1:8080",
    admin: env.RESTATE_ADMIN ?? "http://127.0.0.1:9070",
    workerPort: Number(env.WORKER_PORT ?? 29080),
    databaseUrl: env.DBOS_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/engine_approvals",
  }
}

/** The agent every run starts: the inbox's refund agent, on the scripted model unless a key is set. */
export const AGENT = "refunds"

/** Serves the refund agent on the engine until the process ends (kill it at any point). */
export async function startWorker(settings: EngineSettings): Promise<{ close(): Promise<void> }> {
  const { client } = createModel({})
  const toolkit = await createApprovalToolkit()
  if (settings.engine === "restate") {
    const agent = restateAgent({ name: AGENT, client, toolkit })
    return serveRestate({
      agents: [agent],
      port: settings.workerPort,
      admin: settings.admin,
      ingress: settings.ingress,
    })
  }
  const agent = dbosAgent({ name: AGENT, client, toolkit })
  return launchDbos({ agents: [agent], systemDatabaseUrl: settings.databaseUrl })
}

/** The inbox's connection to the engine. */
export function connectEngine(settings: EngineSettings): EngineConnection<unknown> {
  return settings.engine === "restate"
    ? connectRestate({ ingress: settings.ingress, admin: settings.admin })
    : connectDbos({ systemDatabaseUrl: settings.databaseUrl })
}
