import type { EngineAgent, TaskResult } from "@toolnexus/agents"
import {
  type Answer,
  ConfigError,
  type Logger,
  type Message,
  type Request,
  type RunResult,
  type WaitContext,
  expiryTime,
  isToolnexusError,
} from "@toolnexus/core"
import {
  EXPIRED,
  type EngineEventLog,
  type EngineExecutor,
  type EngineRunInput,
  engineEntryOf,
  engineEventLog,
  engineExecutor,
  runEngineAgent,
} from "@toolnexus/core/engine"
import type { DBOSConfig } from "@dbos-inc/dbos-sdk"
import { engineDdl, namespaceOf } from "./protocol.js"

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
  /** Failed runs at `error` with their code (a worker's event log that lost a write too). */
  logger?: Logger
  /**
   * Append the runs' events to `<namespace>.events` for `connectDbos`'s `events` and `onEvent`
   * (default true); `false` saves those writes, and those streams end empty.
   */
  events?: boolean
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
  const sdk = await import("@dbos-inc/dbos-sdk")
  const { DBOS } = sdk
  const pg = await import("pg")
  const Pool = pg.default?.Pool ?? (pg as unknown as { Pool: typeof import("pg").Pool }).Pool
  const pool = new Pool({ connectionString: systemDatabaseUrl, max: 4 })
  try {
    await pool.query(engineDdl(namespace))
  } catch (error) {
    await pool.end()
    launched = false
    throw error
  }
  const byName = new Map(agents.map((a) => [a.name, a]))

  const { logger } = opts
  const run = DBOS.registerWorkflow(
    async (input: EngineRunInput): Promise<RunResult | TaskResult> => {
      const workflowId = DBOS.workflowID as string
      const runId = input?.runId ?? workflowId
      const turn = input?.turn ?? 1
      const agent = byName.get(input?.agent)
      if (!agent) {
        logger?.error(`run ${runId} failed: no worker defines agent ${JSON.stringify(input?.agent)}`, {
          runId,
          agent: input?.agent,
          code: "TNX_ENGINE_RUN",
        })
        throw new Error(`no worker defines agent ${JSON.stringify(input?.agent)}`)
      }
      const step = <T>(name: string, fn: () => Promise<T>) =>
        DBOS.runStep(fn, { name, retriesAllowed: false })
      // The run's row (the connection wrote it at start; kept whole here for a run it did not).
      const history = await step(`turn:${turn}`, async () => {
        const { rows } = await pool.query(
          `INSERT INTO ${namespace}.runs (run_id, agent, turn, kind) VALUES ($1, $2, $3, $4)
           ON CONFLICT (run_id) DO UPDATE SET kind = EXCLUDED.kind RETURNING transcript`,
          [runId, agent.name, turn, agent.options.client ? "client" : "runtime"],
        )
        return turn > 1 ? ((rows[0]?.transcript as Message[] | null) ?? []) : null
      })
      const log =
        opts.events === false
          ? undefined
          : engineEventLog(
              async (events) => {
                await pool.query(
                  `INSERT INTO ${namespace}.events (workflow_id, event)
             SELECT $1, e FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS t(e, i) ORDER BY i`,
                  [workflowId, JSON.stringify(events)],
                )
              },
              (error) =>
                logger?.error(`the event log of ${workflowId} lost events: ${(error as Error)?.message}`, {
                  workflowId,
                }),
            )
      let stepError: unknown
      const executor = dbosExecutor(sdk, pool, namespace, runId, agent, {
        ...(log ? { log } : {}),
        failed: (error) => {
          stepError = error
        },
      })
      try {
        const { result, messages } = await runEngineAgent(
          agent,
          input.prompt,
          executor,
          async () => (await import("@toolnexus/agents")).runEngineTree,
          { ...(history ? { history } : {}), ...(log ? { onEvent: (ev) => log.emit(ev) } : {}) },
        )
        await log?.flush()
        await step(`settle:${turn}`, async () => {
          await pool.query(`UPDATE ${namespace}.runs SET transcript = $2, parked = NULL WHERE run_id = $1`, [
            runId,
            JSON.stringify(messages),
          ])
        })
        return result
      } catch (error) {
        await log?.flush()
        if (!(error instanceof sdk.Error.DBOSError)) {
          const cause = stepError ?? error
          logger?.error(`run ${runId} failed: ${(error as Error)?.message}`, {
            runId,
            agent: agent.name,
            code: isToolnexusError(cause) ? cause.code : "TNX_ENGINE_RUN",
          })
        }
        throw error
      }
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
type DbosErrors = typeof import("@dbos-inc/dbos-sdk")["Error"]
type PgPool = import("pg").Pool

/**
 * @internal A step is `DBOS.runStep` (retries off: core's policy is the one); the wait is
 * `recv(request id)`. DBOS's own errors (the run cancelled, replayed out of step, its database
 * lost) are engine faults: once one is seen the run fails with it.
 */
export function dbosExecutor(
  sdk: { DBOS: Pick<Dbos, "runStep" | "recv" | "workflowID">; Error: Pick<DbosErrors, "DBOSError"> },
  pool: Pick<PgPool, "query">,
  ns: string,
  runId: string,
  agent: EngineAgent,
  hooks: { log?: EngineEventLog; failed?: (error: unknown) => void } = {},
): EngineExecutor {
  const { DBOS } = sdk
  const workflowId = DBOS.workflowID ?? runId
  const base = {
    id: workflowId,
    step: <T>(name: string, fn: () => Promise<T>) =>
      DBOS.runStep(
        async () => {
          try {
            return await fn()
          } catch (error) {
            hooks.failed?.(error)
            throw error
          }
        },
        { name, retriesAllowed: false },
      ),
    async wait(request: Request, context?: WaitContext): Promise<Answer> {
      // A connection tailing the log stops once the run parks: it has every event by then.
      await hooks.log?.flush()
      // The entry's row, written once: its `since` is decided in the step.
      await DBOS.runStep(
        async () => {
          const entry = engineEntryOf(runId, request, new Date().toISOString())
          await pool.query(
            `INSERT INTO ${ns}.requests (request_id, run_id, entry, since, workflow_id) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (request_id) DO NOTHING`,
            [request.id, runId, JSON.stringify(entry), entry.since, workflowId === runId ? null : workflowId],
          )
          // The waiting turn's conversation, for `transcript` while the run waits.
          if (context?.messages)
            await pool.query(`UPDATE ${ns}.runs SET parked = $2 WHERE run_id = $1`, [
              runId,
              JSON.stringify(context.messages),
            ])
        },
        { name: `register:${request.id}`, retriesAllowed: false },
      )
      const deadline = expiryTime(request)
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
            const { rowCount } = await pool.query(
              `UPDATE ${ns}.requests SET decision = $2 WHERE request_id = $1 AND decision IS NULL`,
              [request.id, JSON.stringify(EXPIRED)],
            )
            return rowCount === 1
          },
          { name: `expire:${request.id}`, retriesAllowed: false },
        )
        if (declined) return { id: request.id, ...EXPIRED }
        const late = await DBOS.recv<Answer>(request.id, RECV_SECONDS)
        if (late !== null) return late
      }
    },
  }
  return engineExecutor(agent, base, (error) => error instanceof sdk.Error.DBOSError)
}
