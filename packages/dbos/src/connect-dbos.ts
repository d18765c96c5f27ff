import type { RuntimeEvent, TaskResult } from "@toolnexus/agents"
import {
  AbortError,
  type Answer,
  type AnswerDecision,
  ConfigError,
  ConversationPendingError,
  EngineRunError,
  type HostStartOptions,
  HostUnsupportedError,
  type Logger,
  type Message,
  type PendingEntry,
  type RunHost,
  type RunResult,
  StoreError,
  type StreamEvent,
  assertAnswer,
  isToolnexusError,
} from "@toolnexus/core"
import {
  type EngineRunInput,
  checkRunId,
  decide,
  enginePrompt,
  engineRunOptions,
  followEngineEvents,
  resultWait,
  untilResultWait,
  tailEngineEvents,
  turnWorkflowId,
} from "@toolnexus/core/engine"
import type { DBOSClient } from "@dbos-inc/dbos-sdk"
import { engineDdl, namespaceOf } from "./protocol.js"

type HostEvent = StreamEvent | RuntimeEvent
/** A workflow's statuses while it has not ended. */
const UNFINISHED = ["PENDING", "ENQUEUED", "DELAYED"]
/** Events one read of the log returns at most. */
const READ_LIMIT = 500

/** Options of {@link connectDbos}. */
export interface ConnectDbosOptions {
  /** The DBOS system database the workers launched on. */
  systemDatabaseUrl: string
  /** The workers' namespace (as launched with); default `toolnexus`. */
  namespace?: string
  /** Refused answers at `info` (never a stack); failed runs met by `send` at `error` with their code. */
  logger?: Logger
  /** How often `events`, `send` and `onEvent` look at a run's log and state; default 50 ms. */
  pollMs?: number
}

/**
 * Connects to runs of `launchDbos` workers through their system database: start runs (an
 * enqueue) and new turns of a conversation run (`send`: each turn after the first is a
 * workflow `<run id>~<turn>`, enqueued once the turn before ended), read results and
 * transcripts (`<namespace>.runs`, written by each turn as it ends), tail a run's events (the
 * log its workers append to, `<namespace>.events`), list and answer open requests (one
 * decision per request id), read decisions and cancel runs. Prompts are strings.
 *
 * @example
 * const engine = connectDbos({ systemDatabaseUrl: "postgres://postgres@127.0.0.1:5432/app" })
 * await engine.start("refunds", "order-42", "refund order 42")
 */
export function connectDbos(opts: ConnectDbosOptions): RunHost<RunResult | TaskResult> {
  const ns = namespaceOf(opts.namespace)
  const { systemDatabaseUrl, logger } = opts
  const pollMs = opts.pollMs ?? 50
  if (!(Number.isInteger(pollMs) && pollMs > 0))
    throw new ConfigError(`connectDbos: pollMs must be a positive integer, got ${opts.pollMs}`)
  let closed = false
  let opened: Promise<{ client: DBOSClient; pool: import("pg").Pool }> | undefined
  const open = () => {
    opened ??= (async () => {
      const { DBOSClient } = await import("@dbos-inc/dbos-sdk")
      const pg = await import("pg")
      const Pool = pg.default?.Pool ?? (pg as unknown as { Pool: typeof import("pg").Pool }).Pool
      const client = await DBOSClient.create({ systemDatabaseUrl, applicationName: ns })
      const pool = new Pool({ connectionString: systemDatabaseUrl, max: 4 })
      // The connection may come first (a run's row is written at start): the tables exist.
      await pool.query(engineDdl(ns))
      return { client, pool }
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

  /** The run's row: its agent, current turn and kind; undefined for an unknown run. */
  const runOf = async (runId: string) =>
    (
      await query<{ agent: string; turn: number; kind: string | null }>(
        `SELECT agent, turn, kind FROM ${ns}.runs WHERE run_id = $1`,
        [runId],
      )
    )[0]
  /** The run's open (undecided) request, if it waits on one. */
  const waitingOn = async (runId: string) =>
    (
      await query<{ entry: PendingEntry }>(
        `SELECT entry FROM ${ns}.requests WHERE run_id = $1 AND decision IS NULL ORDER BY since LIMIT 1`,
        [runId],
      )
    )[0]?.entry
  const statusOf = async (workflowId: string) => {
    const { client } = await open()
    return (await client.retrieveWorkflow(workflowId).getStatus())?.status
  }
  const currentWorkflow = async (runId: string) => {
    const run = await runOf(runId)
    return turnWorkflowId(runId, run?.turn ?? 1)
  }
  /** True while run `runId`'s current turn runs: not ended, not waiting on an undecided request. */
  const inFlight = async (runId: string, workflowId: string): Promise<boolean> => {
    const status = await statusOf(workflowId)
    if (status === undefined || !UNFINISHED.includes(status)) return false
    return (await waitingOn(runId)) === undefined
  }
  /**
   * The live events of the current turn of run `runId`: from `from` (a position in its log) when
   * given, even if the turn has already parked or ended, else as `tailEngineEvents` starts.
   */
  async function* tail(runId: string, fromStart: boolean, from?: number): AsyncGenerator<HostEvent> {
    const workflowId = await currentWorkflow(runId)
    yield* tailEngineEvents(
      {
        async read(after) {
          const rows = await query<{ seq: string; event: HostEvent }>(
            `SELECT seq, event FROM ${ns}.events WHERE workflow_id = $1 AND seq > $2 ORDER BY seq LIMIT ${READ_LIMIT}`,
            [workflowId, after],
          )
          const last = rows[rows.length - 1]
          return { events: rows.map((r) => r.event), next: last ? Number(last.seq) : after }
        },
        async end() {
          const rows = await query<{ seq: string | null }>(
            `SELECT max(seq) AS seq FROM ${ns}.events WHERE workflow_id = $1`,
            [workflowId],
          )
          return Number(rows[0]?.seq ?? 0)
        },
        // After the turn's last park: its last `pending` event of a registered request (a
        // worker flushes the log before it registers the request; a replay repeats the event).
        async start() {
          const rows = await query<{ seq: string | null }>(
            `SELECT max(e.seq) AS seq FROM ${ns}.events e
             JOIN ${ns}.requests r ON r.request_id = e.event->'request'->>'id'
             WHERE e.workflow_id = $1 AND e.event->>'type' = 'pending'`,
            [workflowId],
          )
          return Number(rows[0]?.seq ?? 0)
        },
        inFlight: () => inFlight(runId, workflowId),
      },
      from === undefined ? { fromStart, pollMs } : { from, pollMs },
    )
  }
  /**
   * Feeds `onEvent` the current turn's events from `from` (0: a turn this connection just
   * started; after the answered request's `pending` event for a resumed one), until it ends or
   * parks. Read from a known position, so a turn that parks before the first look is still heard.
   */
  const follow = (
    runId: string,
    onEvent: HostStartOptions<HostEvent>["onEvent"],
    from: number | undefined,
  ) => {
    if (onEvent === undefined) return
    followEngineEvents(tail(runId, true, from), onEvent, {
      isClosed: () => closed,
      onError: (error) =>
        logger?.error(`the events of run ${runId} stopped: ${(error as Error)?.message}`, { runId }),
    })
  }
  /**
   * Where run `runId`'s stretch resumed by answering `requestId` starts: after that request's last
   * `pending` event in the turn's log (a replay repeats it). Found after the answer as well as
   * before, unlike the last park, which a run that parks again at once moves on. Never rejects:
   * the answer is committed by then, and a failed read only leaves `onEvent` where the park mark
   * puts it (undefined).
   */
  const answeredAt = async (runId: string, requestId: string): Promise<number | undefined> => {
    try {
      const rows = await query<{ seq: string | null }>(
        `SELECT max(seq) AS seq FROM ${ns}.events
         WHERE workflow_id = $1 AND event->>'type' = 'pending' AND event->'request'->>'id' = $2`,
        [await currentWorkflow(runId), requestId],
      )
      const seq = rows[0]?.seq
      return seq === null || seq === undefined ? undefined : Number(seq)
    } catch {
      return undefined
    }
  }
  const sleep = () => new Promise((resolve) => setTimeout(resolve, pollMs))
  /** Enqueues workflow `workflowId`; false when one with that id exists. */
  const enqueue = async (workflowId: string, input: EngineRunInput): Promise<boolean> => {
    const { client } = await open()
    const { Error: DbosErrors } = await import("@dbos-inc/dbos-sdk")
    try {
      await client.enqueue(
        { workflowName: `${ns}.run`, queueName: ns, workflowID: workflowId, workflowIDReusePolicy: "reject" },
        input,
      )
      return true
    } catch (error) {
      if (DbosErrors.isWorkflowIDInUseError(error)) return false
      throw error
    }
  }

  return {
    async start(agent, runId, prompt, startOpts) {
      checkRunId(runId)
      engineRunOptions(HOST, "start", startOpts)
      const input: EngineRunInput = { agent, prompt: enginePrompt(HOST, prompt) }
      await query(
        `INSERT INTO ${ns}.runs (run_id, agent, turn) VALUES ($1, $2, 1) ON CONFLICT (run_id) DO NOTHING`,
        [runId, agent],
      )
      // The workflow id decides: a second start with it starts nothing.
      const started = await enqueue(runId, input)
      if (started) follow(runId, startOpts?.onEvent, 0)
      return { runId, started }
    },
    async send(runId, prompt, sendOpts) {
      checkRunId(runId)
      engineRunOptions(HOST, "send", sendOpts)
      const text = enginePrompt(HOST, prompt)
      let workflowId: string
      for (;;) {
        const run = await runOf(runId)
        if (!run) throw new EngineRunError(runId, "is not known to the engine (never started)")
        const waiting = await waitingOn(runId)
        if (waiting) throw new ConversationPendingError(runId, waiting.request)
        const now = turnWorkflowId(runId, run.turn)
        const status = await statusOf(now)
        if (status !== undefined && UNFINISHED.includes(status)) {
          // The turn before is still running: this one follows it.
          await sleep()
          continue
        }
        if (run.kind === "runtime")
          throw new HostUnsupportedError(HOST, "send", `run ${runId} is a runtime tree, not a conversation`)
        const turn = run.turn + 1
        workflowId = turnWorkflowId(runId, turn)
        const started = await enqueue(workflowId, { agent: run.agent, prompt: text, runId, turn })
        await query(`UPDATE ${ns}.runs SET turn = GREATEST(turn, $2) WHERE run_id = $1`, [runId, turn])
        if (started) break
      }
      follow(runId, sendOpts?.onEvent, 0)
      // Over when the turn ended or parked.
      while (await inFlight(runId, workflowId)) await sleep()
      if ((await statusOf(workflowId)) === "ERROR") {
        const run = await runOf(runId)
        const failure = new EngineRunError(runId, `failed: turn ${workflowId} did not finish`)
        logger?.error(`run ${runId} failed`, { runId, agent: run?.agent, code: failure.code })
        throw failure
      }
    },
    async result(runId, resultOpts = {}) {
      checkRunId(runId)
      const { client } = await open()
      const handle = client.retrieveWorkflow<RunResult | TaskResult>(await currentWorkflow(runId))
      const status = await handle.getStatus()
      if (status === null || status === undefined)
        throw new EngineRunError(runId, "is not known to the engine (never started, or past retention)")
      const wait = resultWait(runId, resultOpts)
      try {
        if (wait.signal !== undefined) {
          // The client's getResult cannot be stopped (its poll would outlive the wait): poll the
          // status until the run ends or the wait does.
          for (;;) {
            const now = await untilResultWait(handle.getStatus(), wait)
            if (now && !UNFINISHED.includes(now.status)) break
            await untilResultWait(new Promise((resolve) => setTimeout(resolve, pollMs).unref?.()), wait)
          }
        }
        return await handle.getResult()
      } catch (error) {
        if (AbortError.isInstance(error)) throw error
        throw new EngineRunError(runId, `failed: ${(error as Error).message}`, { cause: error })
      }
    },
    events(runId, eventsOpts = {}) {
      checkRunId(runId)
      return tail(runId, eventsOpts.fromStart === true)
    },
    async transcript(runId) {
      checkRunId(runId)
      const rows = await query<{ transcript: Message[] | null }>(
        `SELECT COALESCE(parked, transcript) AS transcript FROM ${ns}.runs WHERE run_id = $1`,
        [runId],
      )
      return rows.length === 0 ? undefined : (rows[0]?.transcript ?? [])
    },
    async listPending(listOpts = {}) {
      const values: unknown[] = []
      let where = "decision IS NULL"
      if (listOpts.kind !== undefined) {
        values.push(listOpts.kind)
        where += ` AND entry->'request'->>'kind' = $${values.length}`
      }
      if (listOpts.runId !== undefined) {
        values.push(listOpts.runId)
        where += ` AND run_id = $${values.length}`
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
      engineRunOptions(HOST, "deliverAnswer", deliverOpts)
      try {
        assertAnswer(answer)
      } catch (error) {
        logger?.info(`answer refused: ${(error as Error).message}`, { code: "TNX_ANSWER_INVALID" })
        throw error
      }
      const { client, pool } = await open()
      const conn = await pool.connect()
      try {
        await conn.query("BEGIN")
        const { rows } = await conn.query(
          `SELECT run_id, workflow_id, entry, decision FROM ${ns}.requests WHERE request_id = $1 FOR UPDATE`,
          [answer.id],
        )
        const row = rows[0] as
          | {
              run_id: string
              workflow_id: string | null
              entry: PendingEntry
              decision: AnswerDecision | null
            }
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
        const target = row?.workflow_id ?? decided.runId
        await client.sendInTransaction(conn, target, answer, answer.id, answer.id)
        await conn.query("COMMIT")
        if (deliverOpts?.onEvent !== undefined)
          follow(decided.runId, deliverOpts.onEvent, await answeredAt(decided.runId, answer.id))
        return decided
      } catch (error) {
        await conn.query("ROLLBACK").catch(() => undefined)
        if (isToolnexusError(error) && REFUSALS.has(error.code))
          logger?.info(`answer to ${answer.id} refused: ${error.message}`, {
            requestId: answer.id,
            code: error.code,
          })
        throw error
      } finally {
        conn.release()
      }
    },
    async cancel(runId, reason = "cancelled") {
      checkRunId(runId)
      const { client } = await open()
      // The workflow first, so it registers no request after the withdrawal below.
      await client.cancelWorkflow(await currentWorkflow(runId))
      const decision: AnswerDecision = { ok: false, reason: String(reason) }
      await query(`UPDATE ${ns}.requests SET decision = $2 WHERE run_id = $1 AND decision IS NULL`, [
        runId,
        JSON.stringify(decision),
      ])
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
      closed = true
      if (!opened) return
      const { client, pool } = await opened
      opened = undefined
      await client.destroy()
      await pool.end()
    },
  }
}

const HOST = "connectDbos"
/** Refusals of the caller's answer: logged at `info`. */
const REFUSALS = new Set([
  "TNX_ANSWER_INVALID",
  "TNX_ANSWER_CONFLICT",
  "TNX_ANSWER_EXPIRED",
  "TNX_UNKNOWN_REQUEST",
])
