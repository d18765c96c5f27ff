import type { TaskResult } from "@toolnexus/agents"
import {
  type Answer,
  ConfigError,
  type DurableExecutor,
  type PendingEntry,
  type Request,
  type RunResult,
} from "@toolnexus/core"
import type { DBOSConfig } from "@dbos-inc/dbos-sdk"
import type { EngineAgent } from "./engine-agent.js"
import { type RunInput, namespaceOf, requestsDdl } from "./protocol.js"

/** Options of {@link launchDbos}. */
export interface LaunchDbosOptions {
  /** The agents this process runs, with distinct names. */
  agents: EngineAgent[]
  /** The PostgreSQL database DBOS keeps its system tables in (the requests table lives there too). */
  systemDatabaseUrl: string
  /** Names the workflow (`<namespace>.run`), the queue and the requests schema; default `toolnexus`. */
  namespace?: string
  /** Further DBOS settings (`name` defaults to the namespace). */
  config?: Partial<DBOSConfig>
}

/** How long one `recv` waits before it is asked again (a wait without `expiresAt` never ends). */
const RECV_SECONDS = 24 * 3600

let launched = false

/**
 * Launches DBOS in this process (its one `DBOS.launch()`) with `agents` as the workflow
 * `<namespace>.run` on queue `<namespace>`; runs this executor left pending are recovered.
 *
 * @throws ConfigError for an empty or duplicate agent list, a bad namespace, or a second launch.
 * @example
 * const dbos = await launchDbos({ agents: [agent], systemDatabaseUrl: "postgres://postgres@127.0.0.1:5432/app" })
 */
export async function launchDbos(opts: LaunchDbosOptions): Promise<{
  /** Shuts DBOS down in this process; running workflows resume on the next launch. */
  close(): Promise<void>
}> {
  const namespace = namespaceOf(opts.namespace)
  const { agents, systemDatabaseUrl } = opts
  if (!Array.isArray(agents) || agents.length === 0)
    throw new ConfigError("launchDbos needs at least one agent")
  if (new Set(agents.map((a) => a.name)).size !== agents.length)
    throw new ConfigError("launchDbos: two agents share a name")
  if (launched) throw new ConfigError("launchDbos: DBOS launches once per process")
  launched = true
  const { DBOS } = await import("@dbos-inc/dbos-sdk")
  const pg = await import("pg")
  const Pool = pg.default?.Pool ?? (pg as unknown as { Pool: typeof import("pg").Pool }).Pool
  const pool = new Pool({ connectionString: systemDatabaseUrl, max: 4 })
  try {
    await pool.query(requestsDdl(namespace))
  } catch (error) {
    await pool.end()
    launched = false
    throw error
  }
  const byName = new Map(agents.map((a) => [a.name, a]))

  const run = DBOS.registerWorkflow(
    async (input: RunInput): Promise<RunResult | TaskResult> => {
      const agent = byName.get(input?.agent)
      if (!agent) throw new Error(`no worker defines agent ${JSON.stringify(input?.agent)}`)
      const runId = DBOS.workflowID as string
      return runAgent(agent, input.prompt, dbosExecutor(DBOS, pool, namespace, runId, agent))
    },
    { name: `${namespace}.run` },
  )
  void run
  DBOS.setConfig({ name: namespace, systemDatabaseUrl, logLevel: "warn", ...opts.config })
  await DBOS.launch()
  await DBOS.registerQueue(namespace)
  return {
    async close() {
      await DBOS.shutdown()
      await pool.end()
      launched = false
    },
  }
}

type Dbos = typeof import("@dbos-inc/dbos-sdk")["DBOS"]
type PgPool = import("pg").Pool

/** A step is `DBOS.runStep` (retries off: core's policy is the one); the wait is `recv(request id)`. */
function dbosExecutor(
  DBOS: Dbos,
  pool: PgPool,
  ns: string,
  runId: string,
  agent: EngineAgent,
): DurableExecutor {
  const executor: DurableExecutor = {
    id: runId,
    step: (name, fn) => DBOS.runStep(fn, { name, retriesAllowed: false }),
    async wait(request: Request): Promise<Answer> {
      // The entry's row, written once: its `since` is decided in the step.
      await DBOS.runStep(
        async () => {
          const entry = entryOf(runId, request, new Date().toISOString())
          await pool.query(
            `INSERT INTO ${ns}.requests (request_id, run_id, entry, since) VALUES ($1, $2, $3, $4)
             ON CONFLICT (request_id) DO NOTHING`,
            [request.id, runId, JSON.stringify(entry), entry.since],
          )
        },
        { name: `register:${request.id}`, retriesAllowed: false },
      )
      const deadline = expiryOf(request)
      for (;;) {
        // An absolute deadline: the same on every replay.
        const answer = await DBOS.recv<Answer>(
          request.id,
          deadline === undefined ? RECV_SECONDS : { deadlineEpochMS: deadline },
        )
        if (answer !== null) return answer
        if (deadline === undefined) continue
        // The engine's timer fired: the decline is the first decision unless one came first
        // (then its message is on the way, in the transaction that recorded it).
        const declined = await DBOS.runStep(
          async () => {
            const decision = { ok: false, reason: "expired" }
            const { rowCount } = await pool.query(
              `UPDATE ${ns}.requests SET decision = $2 WHERE request_id = $1 AND decision IS NULL`,
              [request.id, JSON.stringify(decision)],
            )
            return rowCount === 1
          },
          { name: `expire:${request.id}`, retriesAllowed: false },
        )
        if (declined) return { id: request.id, ok: false, reason: "expired" }
        const late = await DBOS.recv<Answer>(request.id, RECV_SECONDS)
        if (late !== null) return late
      }
    },
  }
  if (agent.options.maxStepBytes !== undefined)
    return { ...executor, maxStepBytes: agent.options.maxStepBytes }
  return executor
}

/** `expiresAt` in epoch ms; an unparseable one is now (a deadline nobody can read is past). */
function expiryOf(request: Request): number | undefined {
  if (request.expiresAt === undefined) return undefined
  const at = Date.parse(request.expiresAt)
  return Number.isFinite(at) ? at : 0
}

function entryOf(runId: string, request: Request, since: string): PendingEntry {
  const path = request.data?.path
  const entry: PendingEntry = { request, conversationId: runId, since, attempts: 0, state: "open" }
  if (Array.isArray(path) && path.every((p) => typeof p === "string")) {
    entry.conversationId = `${runId}/${path.join("/")}`
    entry.runtimeKey = runId
    entry.path = path as string[]
  }
  return entry
}

async function runAgent(
  agent: EngineAgent,
  prompt: string,
  executor: DurableExecutor,
): Promise<RunResult | TaskResult> {
  const { client, toolkit, runtime, onEvent } = agent.options
  const listener = onEvent
    ? (ev: Parameters<typeof onEvent>[0]) => {
        try {
          onEvent(ev)
        } catch {
          // Observers cannot change a run.
        }
      }
    : undefined
  if (client) return client.run(prompt, { toolkit, executor, onEvent: listener })
  const { createRuntime } = await import("@toolnexus/agents")
  const { root, ...options } = runtime as NonNullable<typeof runtime>
  const rt = createRuntime({ ...options, executor, onEvent: listener })
  try {
    const handle = rt.spawn(rt.root, root)
    rt.wake(handle, prompt)
    return await rt.wait(handle)
  } finally {
    await rt.close(rt.root, { force: true })
  }
}
