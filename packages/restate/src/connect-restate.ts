import type { RuntimeEvent, TaskResult } from "@toolnexus/agents"
import {
  AbortError,
  type Answer,
  type AnswerDecision,
  ConfigError,
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
  runIdOfEntry,
} from "@toolnexus/core"
import {
  type EngineDecided,
  checkRunId,
  enginePrompt,
  engineRunOptions,
  type ResultWait,
  followEngineEvents,
  resultWait,
  tailEngineEvents,
  turnWorkflowId,
  untilResultWait,
} from "@toolnexus/core/engine"
import {
  type OpenRequest,
  type Refused,
  isRefused,
  namespaceOf,
  refusalError,
  runStateOf,
} from "./protocol.js"

type HostEvent = StreamEvent | RuntimeEvent

/** Options of {@link connectRestate}. */
export interface ConnectRestateOptions {
  /** The Restate ingress URL, e.g. `http://127.0.0.1:8080`. */
  ingress: string
  /** The admin URL; `listPending` and `cancel` need it (its SQL API, its cancel call). */
  admin?: string
  /** The workers' namespace (as launched with); default `toolnexus`. */
  namespace?: string
  /** Refused answers at `info` (never a stack); failed runs met by `send` at `error` with their code. */
  logger?: Logger
  /** How often `events`, `send` and `onEvent` look at a run's log and state; default 50 ms. */
  pollMs?: number
}

/**
 * Connects to runs served by `serveRestate` workers through a Restate server: start runs and
 * new turns of a conversation run (`send`: each turn is a workflow `<run id>~<turn>` after the
 * first, started by the run's object `<namespace>_runs` once the turn before ended), read
 * results and transcripts (the run object's state, written by each turn as it ends), tail a
 * run's events (the log its workers append to, `<namespace>_events`), list and answer open
 * requests (one decision per request id), read decisions and cancel runs. Prompts are strings.
 *
 * @example
 * const engine = connectRestate({ ingress: "http://127.0.0.1:8080", admin: "http://127.0.0.1:9070" })
 * await engine.start("refunds", "order-42", "refund order 42")
 */
export function connectRestate(opts: ConnectRestateOptions): RunHost<RunResult | TaskResult> {
  const namespace = namespaceOf(opts.namespace)
  const ingress = opts.ingress.replace(/\/+$/, "")
  const admin = opts.admin?.replace(/\/+$/, "")
  const requests = `${namespace}_requests`
  const path = (...parts: string[]) => parts.map(encodeURIComponent).join("/")
  const runsName = `${namespace}_runs`
  const eventsName = `${namespace}_events`
  const { logger } = opts
  const pollMs = opts.pollMs ?? 50
  if (!(Number.isInteger(pollMs) && pollMs > 0))
    throw new ConfigError(`connectRestate: pollMs must be a positive integer, got ${opts.pollMs}`)
  const controllers = new Set<AbortController>()
  let closed = false

  /** A call to the server; `wait` ends it early (its `AbortError`), as `close` does. */
  async function call(url: string, init: RequestInit & { wait?: ResultWait } = {}): Promise<Response> {
    const { wait, ...request } = init
    const controller = new AbortController()
    controllers.add(controller)
    const signal = wait?.signal ? AbortSignal.any([controller.signal, wait.signal]) : controller.signal
    try {
      return await fetch(url, { ...request, signal })
    } catch (error) {
      if (wait?.signal?.aborted) throw wait.error()
      if (signal.aborted) throw new AbortError(`the call to ${url} was aborted`, { cause: error })
      throw new StoreError(`the Restate server at ${url} is unreachable: ${(error as Error).message}`, {
        cause: error,
      })
    } finally {
      controllers.delete(controller)
    }
  }
  const post = (url: string, body: unknown) =>
    call(url, {
      method: "POST",
      // The admin SQL API answers in Arrow unless JSON is asked for.
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(body ?? null),
    })

  /** A handler's JSON response; a refusal it returned is thrown as its typed error. */
  async function invoke<T>(
    service: string,
    key: string,
    handler: string,
    body: unknown,
    what: string,
  ): Promise<T> {
    const response = await post(`${ingress}/${path(service, key, handler)}`, body)
    if (!response.ok) throw await failure(response, what)
    const value = (await response.json()) as T | Refused
    if (isRefused(value)) throw refusalError(value.refusal)
    return value as T
  }
  const current = async (runId: string) =>
    runStateOf(await invoke<unknown>(runsName, runId, "current", null, `reading run ${runId}`), runId)
  const decided = async (requestId: string) =>
    (await invoke<AnswerDecision | null>(requests, requestId, "decision", null, `reading ${requestId}`)) !==
    null
  /** True while run `runId`'s current turn runs: not ended, not waiting on an undecided request. */
  const inFlight = async (runId: string): Promise<boolean> => {
    const run = await current(runId)
    if (run === null || run.state !== "running") return false
    return !run.waitingOn || (await decided(run.waitingOn.id))
  }
  /**
   * The live events of the current turn of run `runId`: from `from` (a position in its log) when
   * given, even if the turn has already parked or ended, else as `tailEngineEvents` starts.
   */
  async function* tail(runId: string, fromStart: boolean, from?: number): AsyncGenerator<HostEvent> {
    const run = await current(runId)
    if (run === null) return
    const workflowId = turnWorkflowId(runId, run.turn)
    yield* tailEngineEvents(
      {
        read: (after) =>
          invoke<{ events: HostEvent[]; next: number }>(
            eventsName,
            workflowId,
            "read",
            { after },
            `reading the events of ${runId}`,
          ),
        end: () => invoke<number>(eventsName, workflowId, "end", null, `reading the events of ${runId}`),
        // Workers from before the park mark have no `start`: their log is read from its start.
        start: () =>
          invoke<number>(eventsName, workflowId, "start", null, `reading the events of ${runId}`).catch(
            () => 0,
          ),
        inFlight: () => inFlight(runId),
      },
      from === undefined ? { fromStart, pollMs } : { from, pollMs },
    )
  }
  /**
   * Feeds `onEvent` the current turn's events from `from` (0: a turn this connection just
   * started; a resumed turn's start, read before the answer was delivered), until it ends or
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
   * Where the turn parked on open request `requestId` starts its next stretch (the park mark);
   * undefined when the request or its run is not found (the answer is then refused anyway), the
   * turn's worker keeps no mark, or a read fails: an observer's position never stops an answer
   * (`onEvent` then starts where the park mark is when it first looks).
   */
  async function stretchStart(requestId: string): Promise<number | undefined> {
    try {
      const entry = await invoke<PendingEntry | null>(
        requests,
        requestId,
        "find",
        null,
        `finding ${requestId}`,
      )
      const runId = entry ? runIdOfEntry(entry) : undefined
      if (runId === undefined) return undefined
      const run = await current(runId)
      if (run === null) return undefined
      return await invoke<number>(
        eventsName,
        turnWorkflowId(runId, run.turn),
        "start",
        null,
        `reading the events of ${runId}`,
      )
    } catch {
      return undefined
    }
  }
  const sleep = () => new Promise((resolve) => setTimeout(resolve, pollMs))
  const attach = (workflowId: string, wait?: ResultWait) =>
    call(`${ingress}/restate/workflow/${path(namespace, workflowId)}/attach`, wait ? { wait } : {})

  return {
    async start(agent, runId, prompt, startOpts) {
      checkRunId(runId)
      engineRunOptions(HOST, "start", startOpts)
      const input = { agent, prompt: enginePrompt(HOST, prompt) }
      const { started } = await invoke<{ started: boolean }>(
        runsName,
        runId,
        "start",
        input,
        `starting run ${runId}`,
      )
      if (started) follow(runId, startOpts?.onEvent, 0)
      return { runId, started }
    },
    async send(runId, prompt, sendOpts) {
      checkRunId(runId)
      engineRunOptions(HOST, "send", sendOpts)
      const input = { prompt: enginePrompt(HOST, prompt) }
      let turn: string
      for (;;) {
        let next: { workflowId: string } | { busy: string }
        try {
          next = await invoke(runsName, runId, "next", input, `sending to run ${runId}`)
        } catch (error) {
          // Decided but not yet resumed: the turn goes on, so this one waits for it.
          const waiting = (error as { code?: string; request?: { id: string } }).request
          if (
            (error as { code?: string }).code !== "TNX_CONVERSATION_PENDING" ||
            !waiting ||
            !(await decided(waiting.id))
          )
            throw error
          await sleep()
          continue
        }
        if ("workflowId" in next) {
          turn = next.workflowId
          break
        }
        // The turn before is still running: this one follows it.
        await (await attach(next.busy)).arrayBuffer()
        await sleep()
      }
      follow(runId, sendOpts?.onEvent, 0)
      // Over when the turn ended or parked.
      while (await inFlight(runId)) await sleep()
      const run = await current(runId)
      if (run?.state === "failed") {
        const failure = new EngineRunError(runId, `failed: turn ${turn} did not finish`)
        logger?.error(`run ${runId} failed`, { runId, agent: run.agent, code: failure.code })
        throw failure
      }
    },
    async result(runId, resultOpts = {}) {
      checkRunId(runId)
      const wait = resultWait(runId, resultOpts)
      const run = await untilResultWait(current(runId), wait)
      const workflowId = run === null ? runId : turnWorkflowId(runId, run.turn)
      const response = await attach(workflowId, wait)
      // The body streams after the headers: the wait's end ends it too.
      if (response.ok) return (await untilResultWait(response.json(), wait)) as RunResult | TaskResult
      const text = await untilResultWait(response.text(), wait)
      if (response.status === 404)
        throw new EngineRunError(runId, "is not known to the engine (never started, or past retention)")
      throw new EngineRunError(runId, `failed: ${messageOf(text)}`)
    },
    events(runId, eventsOpts = {}) {
      checkRunId(runId)
      return tail(runId, eventsOpts.fromStart === true)
    },
    async transcript(runId) {
      checkRunId(runId)
      const messages = await invoke<Message[] | null>(
        runsName,
        runId,
        "conversation",
        null,
        `reading the transcript of ${runId}`,
      )
      return messages ?? undefined
    },
    async listPending(listOpts = {}) {
      let entries = (await openRequests("listPending")).map((open) => open.entry)
      if (listOpts.kind !== undefined) entries = entries.filter((e) => e.request.kind === listOpts.kind)
      if (listOpts.runId !== undefined) entries = entries.filter((e) => runIdOfEntry(e) === listOpts.runId)
      entries.sort((a, b) =>
        a.since === b.since ? compare(a.request.id, b.request.id) : compare(a.since, b.since),
      )
      if (listOpts.after !== undefined) {
        const at = entries.findIndex((e) => e.request.id === listOpts.after)
        entries =
          at >= 0
            ? entries.slice(at + 1)
            : entries.filter((e) => compare(e.request.id, listOpts.after as string) > 0)
      }
      if (listOpts.limit !== undefined) entries = entries.slice(0, listOpts.limit)
      return entries
    },
    async findRequest(requestId) {
      const entry = await invoke<PendingEntry | null>(
        requests,
        requestId,
        "find",
        null,
        `finding request ${requestId}`,
      )
      return entry ?? undefined
    },
    async getDecision(requestId) {
      const decision = await invoke<AnswerDecision | null>(
        requests,
        requestId,
        "decision",
        null,
        `reading the decision on ${requestId}`,
      )
      return decision ?? undefined
    },
    async deliverAnswer(answer: Answer, deliverOpts) {
      engineRunOptions(HOST, "deliverAnswer", deliverOpts)
      assertAnswer(answer)
      // Where the resumed stretch will start, read while the run still waits: after the answer
      // it may run on and park again before the first look, and the mark moves past that park.
      const from = deliverOpts?.onEvent === undefined ? undefined : await stretchStart(answer.id)
      let delivered: EngineDecided
      try {
        delivered = await invoke<EngineDecided>(
          requests,
          answer.id,
          "decide",
          answer,
          `delivering the answer to ${answer.id}`,
        )
      } catch (error) {
        if (isToolnexusError(error) && REFUSALS.has(error.code))
          logger?.info(`answer to ${answer.id} refused: ${error.message}`, {
            requestId: answer.id,
            code: error.code,
          })
        throw error
      }
      follow(delivered.runId, deliverOpts?.onEvent, from)
      return delivered
    },
    async cancel(runId, reason = "cancelled") {
      checkRunId(runId)
      const run = await current(runId)
      const workflowId = run === null ? runId : turnWorkflowId(runId, run.turn)
      // The workflow first, so it registers no request after the withdrawal below.
      const id = await query<{ id: string }>(
        "cancel",
        `SELECT id FROM sys_invocation WHERE target_service_name = '${namespace}' AND target_service_key = '${sqlText(workflowId)}' AND target_handler_name = 'run' AND status <> 'completed'`,
      )
      for (const row of id) {
        const response = await call(`${admin}/invocations/${encodeURIComponent(row.id)}/cancel`, {
          method: "PATCH",
        })
        if (!response.ok && response.status !== 404) throw await failure(response, `cancelling run ${runId}`)
      }
      for (const open of await openRequests("cancel")) {
        if (open.runId !== runId) continue
        const at = `${ingress}/${path(requests, open.entry.request.id, "withdraw")}`
        const response = await post(at, { runId, reason })
        if (!response.ok) throw await failure(response, `withdrawing request ${open.entry.request.id}`)
      }
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
      for (const controller of controllers) controller.abort()
    },
  }

  /** Rows of the admin SQL API (it needs `admin`). */
  async function query<R>(what: string, sql: string): Promise<R[]> {
    if (admin === undefined)
      throw new ConfigError(`connectRestate: ${what} needs \`admin\` (the admin SQL API)`)
    const response = await post(`${admin}/query`, { query: sql })
    if (!response.ok) throw await failure(response, `${what}: querying the admin API`)
    return ((await response.json()) as { rows?: R[] }).rows ?? []
  }

  /** Every open request the requests objects hold. */
  async function openRequests(what: string): Promise<OpenRequest[]> {
    const rows = await query<{ value_utf8: string }>(
      what,
      `SELECT service_key, value_utf8 FROM state WHERE service_name = '${requests}' AND key = 'open'`,
    )
    const open: OpenRequest[] = []
    for (const row of rows) {
      try {
        open.push(JSON.parse(row.value_utf8) as OpenRequest)
      } catch {
        // A row that is not ours is skipped; it never breaks the listing.
      }
    }
    return open
  }
}

const HOST = "connectRestate"
/** Refusals of the caller's answer: logged at `info`. */
const REFUSALS = new Set([
  "TNX_ANSWER_INVALID",
  "TNX_ANSWER_CONFLICT",
  "TNX_ANSWER_EXPIRED",
  "TNX_UNKNOWN_REQUEST",
])

/** A StoreError naming what failed. */
async function failure(response: Response, what: string): Promise<Error> {
  const text = await response.text()
  return new StoreError(`${what} failed: HTTP ${response.status}: ${messageOf(text)}`)
}

/** A value quoted inside a SQL string literal. */
function sqlText(value: string): string {
  return value.replaceAll("'", "''")
}

function messageOf(text: string): string {
  try {
    const parsed = JSON.parse(text) as { message?: unknown }
    if (typeof parsed.message === "string") return parsed.message
  } catch {
    // Plain text.
  }
  return text.slice(0, 500)
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
