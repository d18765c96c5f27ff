import type { TaskResult } from "@toolnexus/agents"
import {
  AbortError,
  type Answer,
  type AnswerDecision,
  ConfigError,
  EngineRunError,
  HostUnsupportedError,
  type PendingEntry,
  type RunHost,
  type RunResult,
  StoreError,
  assertAnswer,
} from "@toolnexus/core"
import { type EngineRunInput, checkRunId, decide, enginePrompt } from "@toolnexus/core/engine"
import type { DBOSClient } from "@dbos-inc/dbos-sdk"
import { namespaceOf } from "./protocol.js"

/** Options of {@link connectDbos}. */
export interface ConnectDbosOptions {
  /** The DBOS system database the workers launched on. */
  systemDatabaseUrl: string
  /** The workers' namespace (as launched with); default `toolnexus`. */
  namespace?: string
}

/**
 * Connects to runs of `launchDbos` workers through their system database: start runs (an
 * enqueue), read results, list and answer open requests (one decision per request id), read
 * decisions and cancel runs. The runs stream and keep their transcripts in the workers, so
 * `events`, `transcript`, `send` and `onEvent` throw `HostUnsupportedError` (and `start` takes a
 * string).
 *
 * @example
 * const engine = connectDbos({ systemDatabaseUrl: "postgres://postgres@127.0.0.1:5432/app" })
 * await engine.start("refunds", "order-42", "refund order 42")
 */
export function connectDbos(opts: ConnectDbosOptions): RunHost<RunResult | TaskResult> {
  const ns = namespaceOf(opts.namespace)
  const { systemDatabaseUrl } = opts
  let opened: Promise<{ client: DBOSClient; pool: import("pg").Pool }> | undefined
  const open = () => {
    opened ??= (async () => {
      const { DBOSClient } = await import("@dbos-inc/dbos-sdk")
      const pg = await import("pg")
      const Pool = pg.default?.Pool ?? (pg as unknown as { Pool: typeof import("pg").Pool }).Pool
      const client = await DBOSClient.create({ systemDatabaseUrl, applicationName: ns })
      return { client, pool: new Pool({ connectionString: systemDatabaseUrl, max: 4 }) }
    })()
    return opened
  }
  const query = async <R extends object>(text: string, values: unknown[]): Promise<R[]> => {
    const { pool } = await open()
    try {
      return (await pool.query(text, values)).rows as R[]
    } catch (error) {
      throw new StoreError(`the DBOS system database query failed: ${(error as Error).message}`, {
        cause: error,
      })
    }
  }

  return {
    async start(agent, runId, prompt, startOpts) {
      checkRunId(runId)
      const input: EngineRunInput = { agent, prompt: enginePrompt(HOST, prompt, startOpts) }
      const { client } = await open()
      const { Error: DbosErrors } = await import("@dbos-inc/dbos-sdk")
      try {
        await client.enqueue(
          { workflowName: `${ns}.run`, queueName: ns, workflowID: runId, workflowIDReusePolicy: "reject" },
          input,
        )
        return { runId, started: true }
      } catch (error) {
        if (DbosErrors.isWorkflowIDInUseError(error)) return { runId, started: false }
        throw error
      }
    },
    async result(runId, resultOpts = {}) {
      checkRunId(runId)
      const { client } = await open()
      const handle = client.retrieveWorkflow<RunResult | TaskResult>(runId)
      const status = await handle.getStatus()
      if (status === null)
        throw new EngineRunError(runId, "is not known to the engine (never started, or past retention)")
      try {
        if (resultOpts.timeoutMs !== undefined) {
          // The client's getResult cannot time out (its poll would outlive us): poll the status.
          const deadline = Date.now() + resultOpts.timeoutMs
          for (;;) {
            const now = await handle.getStatus()
            if (now && !["PENDING", "ENQUEUED", "DELAYED"].includes(now.status)) break
            if (Date.now() >= deadline)
              throw new AbortError(`no result of run ${runId} within ${resultOpts.timeoutMs} ms`)
            await new Promise((resolve) =>
              setTimeout(resolve, Math.min(100, Math.max(1, deadline - Date.now()))),
            )
          }
        }
        return await handle.getResult()
      } catch (error) {
        if (AbortError.isInstance(error)) throw error
        throw new EngineRunError(runId, `failed: ${(error as Error).message}`, { cause: error })
      }
    },
    async listPending(listOpts = {}) {
      const values: unknown[] = []
      let where = "decision IS NULL"
      if (listOpts.kind !== undefined) {
        values.push(listOpts.kind)
        where += ` AND entry->'request'->>'kind' = $${values.length}`
      }
      if (listOpts.after !== undefined) {
        values.push(listOpts.after)
        const at = `$${values.length}`
        // After the given request in (since, id) order; once it is decided, after its id.
        where += ` AND (since, request_id) > COALESCE((SELECT (since, request_id) FROM ${ns}.requests WHERE request_id = ${at}), ('-infinity'::timestamptz, ${at}))`
      }
      let limit = ""
      if (listOpts.limit !== undefined) {
        if (!Number.isInteger(listOpts.limit) || listOpts.limit < 0)
          throw new ConfigError(`listPending: limit must be a non-negative integer, got ${listOpts.limit}`)
        limit = ` LIMIT ${listOpts.limit}`
      }
      const rows = await query<{ entry: PendingEntry }>(
        `SELECT entry FROM ${ns}.requests WHERE ${where} ORDER BY since, request_id${limit}`,
        values,
      )
      return rows.map((r) => r.entry)
    },
    async findRequest(requestId) {
      const rows = await query<{ entry: PendingEntry }>(
        `SELECT entry FROM ${ns}.requests WHERE request_id = $1 AND decision IS NULL`,
        [requestId],
      )
      return rows[0]?.entry
    },
    async getDecision(requestId) {
      const rows = await query<{ decision: AnswerDecision | null }>(
        `SELECT decision FROM ${ns}.requests WHERE request_id = $1`,
        [requestId],
      )
      return rows[0]?.decision ?? undefined
    },
    async deliverAnswer(answer: Answer, deliverOpts) {
      if (deliverOpts?.onEvent !== undefined)
        throw new HostUnsupportedError(HOST, "deliverAnswer({ onEvent })", WORKER_EVENTS)
      assertAnswer(answer)
      const { client, pool } = await open()
      const conn = await pool.connect()
      try {
        await conn.query("BEGIN")
        const { rows } = await conn.query(
          `SELECT run_id, entry, decision FROM ${ns}.requests WHERE request_id = $1 FOR UPDATE`,
          [answer.id],
        )
        const row = rows[0] as
          | { run_id: string; entry: PendingEntry; decision: AnswerDecision | null }
          | undefined
        const held = row && {
          runId: row.run_id,
          request: row.entry.request,
          decision: row.decision ?? undefined,
        }
        const decided = decide(answer.id, held, answer)
        await conn.query(`UPDATE ${ns}.requests SET decision = $2 WHERE request_id = $1`, [
          answer.id,
          JSON.stringify(decided.decision),
        ])
        // The decision and its delivery commit together (DBOS would drop a duplicate send silently).
        await client.sendInTransaction(conn, decided.runId, answer, answer.id, answer.id)
        await conn.query("COMMIT")
        return decided
      } catch (error) {
        await conn.query("ROLLBACK").catch(() => undefined)
        throw error
      } finally {
        conn.release()
      }
    },
    async cancel(runId, reason = "cancelled") {
      checkRunId(runId)
      const { client } = await open()
      // The workflow first, so it registers no request after the withdrawal below.
      await client.cancelWorkflow(runId)
      const decision: AnswerDecision = { ok: false, reason: String(reason) }
      await query(`UPDATE ${ns}.requests SET decision = $2 WHERE run_id = $1 AND decision IS NULL`, [
        runId,
        JSON.stringify(decision),
      ])
    },
    send() {
      return Promise.reject(new HostUnsupportedError(HOST, "send", "a DBOS run takes one prompt, at start"))
    },
    events() {
      throw new HostUnsupportedError(HOST, "events", WORKER_EVENTS)
    },
    transcript() {
      return Promise.reject(
        new HostUnsupportedError(HOST, "transcript", "a run's conversation lives in its workflow steps"),
      )
    },
    // Grants (§19) are kept by a store host's store; an engine's runs keep none yet.
    listGrants: () =>
      Promise.reject(
        new HostUnsupportedError(HOST, "listGrants", "grants are kept by createStoreHost's store"),
      ),
    revokeGrant: () =>
      Promise.reject(
        new HostUnsupportedError(HOST, "revokeGrant", "grants are kept by createStoreHost's store"),
      ),
    async close() {
      if (!opened) return
      const { client, pool } = await opened
      opened = undefined
      await client.destroy()
      await pool.end()
    },
  }
}

const HOST = "connectDbos"
const WORKER_EVENTS = "a run's events are the workers' (the agent's `onEvent`)"
