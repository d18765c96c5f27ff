/**
 * The one module of the app that talks about requests and runs, over one `RunHost`: a store
 * host (`createStoreHost`, runs in this process) or an engine's connection (`connectRestate`,
 * `connectDbos`). Starting runs, finding and answering requests, and their one decision per
 * request id are the host's; this module only waits for a run to settle and shapes what the
 * rest of the app sees ({@link InboxStore}).
 */
import { randomUUID } from "node:crypto"
import type { RuntimeOptions, TaskResult } from "@toolnexus/agents"
import {
  type Answer,
  type Client,
  type HostAgent,
  type Logger,
  type PendingEntry,
  type Request,
  type RunHost,
  type RunResult,
  type Toolkit,
  hostAgent,
} from "@toolnexus/core"
import type { DeliverResult, FailedEntry, StoreHost, StoreHostAgent } from "@toolnexus/durable"
import { HttpError } from "./http-error.js"

/** An open request, once per request id (for a sub-agent tree, its deepest holder). */
export type InboxEntry = PendingEntry

/** A request whose resumes failed `maxAttempts` times (DESIGN §9); only a retry moves it on. */
export type FailedInboxEntry = FailedEntry

/** Where a run stands after starting or answering: finished, or waiting on a request. */
export type RunOutcome = DeliverResult

/** A sub-agent team the app can start runs on (a lead agent that delegates). */
export interface TeamOptions {
  /** The runtime's agents, model and transport; the store is the host's. */
  runtime: Omit<RuntimeOptions, "store" | "namespace">
  /** The agent each team run starts with. */
  lead: string
}

/** The agent names the app's own store host serves. */
export const AGENT = "approvals"
/** The team agent's name on the app's own store host. */
export const TEAM_AGENT = "team"

/**
 * The agents of the app's store host: the plain agent (`client` with `toolkit`) and, with a
 * team, a runtime agent whose root is the team's lead.
 */
export function approvalsAgents(opts: {
  client: Client
  toolkit: Toolkit
  team?: TeamOptions
}): StoreHostAgent[] {
  const agents: HostAgent[] = [hostAgent({ name: AGENT, client: opts.client, toolkit: opts.toolkit })]
  if (opts.team) {
    const { executor: _executor, ...runtime } = opts.team.runtime
    agents.push(hostAgent({ name: TEAM_AGENT, runtime: { ...runtime, root: opts.team.lead } }))
  }
  return agents as StoreHostAgent[]
}

/** Options of {@link createHostInbox}. */
export interface HostInboxOptions {
  /** The host the runs live on; a function for one built on first use. */
  host: RunHost<unknown, unknown> | (() => Promise<RunHost<unknown, unknown>>)
  /** The agent plain runs start (`POST /runs`). */
  agent: string
  /** The agent team runs start (`POST /runs {"team": true}`), if any. */
  teamAgent?: string
  /** How long starting or answering waits for the run to finish or wait again; default 30 s. */
  settleMs?: number
  /** Refusals of answers at `info`, failures at `error`. */
  logger?: Logger
}

/** The request-level operations the app uses. */
export interface InboxStore {
  /** Starts a run (plain, or a team run) and waits until it ends or waits on a request. */
  startRun(prompt: string, opts: { team: boolean }): Promise<RunOutcome>
  /** Open requests, one per request id, oldest first. */
  listPending(opts?: { limit?: number; kind?: string }): Promise<InboxEntry[]>
  /** The open request with this id. */
  findRequest(requestId: string): Promise<InboxEntry | undefined>
  /**
   * Answers a request: the host records the one decision and the run goes on; resolves with
   * where the run stands then.
   *
   * @throws UnknownRequestError, AnswerConflictError (with the first decision), AnswerExpiredError.
   */
  deliver(answer: Answer): Promise<RunOutcome>
  /** Requests whose resumes failed too often (a store host's; an engine has none). */
  listFailed(opts?: { limit?: number }): Promise<FailedInboxEntry[]>
  /**
   * Applies a failed request's decision again.
   *
   * @throws HttpError 501 on an engine, which retries its runs itself.
   */
  retryFailed(requestId: string): Promise<RunOutcome>
}

/** Creates the app's {@link InboxStore} over a host. */
export function createHostInbox(opts: HostInboxOptions): InboxStore {
  const settleMs = opts.settleMs ?? 30_000
  let resolved: Promise<RunHost<unknown, unknown>> | undefined
  const host = () => {
    resolved ??= typeof opts.host === "function" ? opts.host() : Promise.resolve(opts.host)
    return resolved
  }
  const storeHost = async (): Promise<StoreHost | undefined> => {
    const h = (await host()) as Partial<StoreHost>
    return typeof h.retry === "function" && typeof h.listFailed === "function" ? (h as StoreHost) : undefined
  }

  /**
   * Where the run stands once it has moved on. A store host's `result` has it as soon as the
   * run ends or parks; an engine's only at the end, so there the run's `pending` event (on
   * another request than `parks.previous`) says where it waits. The wait for the result ends
   * with this call: an engine would otherwise hold it open until the parked run ends.
   */
  async function settle(runId: string, parks: ParkWatch): Promise<RunOutcome> {
    const h = await host()
    const done = new AbortController()
    const timer = setTimeout(() => done.abort(), settleMs)
    try {
      const ended = h.result(runId, { signal: done.signal }).then((result) => outcomeOf(runId, result))
      if (await storeHost()) return await ended
      ended.catch(() => undefined)
      return await Promise.race([
        ended,
        parks.parked.then((request) => listed(h, runId, request, done.signal)),
      ])
    } catch (error) {
      if ((error as { code?: string }).code !== "TNX_ABORTED") throw error
      throw new HttpError(504, "run_pending", `run ${runId} has not settled yet`)
    } finally {
      clearTimeout(timer)
      done.abort()
    }
  }

  return {
    async startRun(prompt, { team }) {
      const agent = team ? opts.teamAgent : opts.agent
      if (agent === undefined) throw new HttpError(400, "invalid_body", "this service has no team configured")
      const runId = `${team ? "team" : "run"}-${randomUUID()}`
      const parks = parkWatch()
      await (await host()).start(agent, runId, prompt, { onEvent: parks.onEvent })
      return settle(runId, parks)
    },
    listPending: async ({ limit = 100, kind } = {}) =>
      (await host()).listPending({ limit, ...(kind ? { kind } : {}) }),
    async findRequest(requestId) {
      // Longer ids are never valid request ids (DESIGN §8); no need to ask the host.
      if (requestId === "" || requestId.length > 200) return undefined
      return (await host()).findRequest(requestId)
    },
    async deliver(answer) {
      try {
        const parks = parkWatch(answer.id)
        const { runId } = await (await host()).deliverAnswer(answer, { onEvent: parks.onEvent })
        return await settle(runId, parks)
      } catch (error) {
        log(opts.logger, `answer to ${answer.id}`, error)
        throw error
      }
    },
    listFailed: async ({ limit = 100 } = {}) => (await (await storeHost())?.listFailed({ limit })) ?? [],
    async retryFailed(requestId) {
      const h = await storeHost()
      if (!h) throw new HttpError(501, "not_supported", "runs on an engine are retried by the engine itself")
      try {
        const { runId } = await h.retry(requestId)
        return await settle(runId, parkWatch(requestId))
      } catch (error) {
        log(opts.logger, `retry of ${requestId}`, error)
        throw error
      }
    },
  }
}

/** Refusals (the caller's doing) at `info` without a stack; anything else at `error`. */
function log(logger: Logger | undefined, what: string, error: unknown): void {
  if (!logger) return
  const code = (error as { code?: unknown })?.code
  const message = (error as Error)?.message ?? String(error)
  if (typeof code === "string" && REFUSALS.has(code)) logger.info(`${what} refused: ${message}`, { code })
  else logger.error(`${what} failed: ${message}`, typeof code === "string" ? { code } : {})
}

const REFUSALS = new Set([
  "TNX_UNKNOWN_REQUEST",
  "TNX_ANSWER_CONFLICT",
  "TNX_ANSWER_EXPIRED",
  "TNX_ANSWER_INVALID",
  "TNX_ANSWER_MISMATCH",
])

/** A run's `pending` events heard through `onEvent`: `parked` is the first on another request than `previous`. */
interface ParkWatch {
  onEvent(ev: unknown): void
  parked: Promise<Request>
}

function parkWatch(previous?: string): ParkWatch {
  let heard: (request: Request) => void = () => {}
  const parked = new Promise<Request>((resolve) => {
    heard = resolve
  })
  return {
    parked,
    onEvent(ev) {
      const event = ev as { type?: string; request?: Request }
      // An engine may repeat the answered park's event as it resumes: that is not a new park.
      if (event.type === "pending" && event.request && event.request.id !== previous) heard(event.request)
    },
  }
}

/**
 * The outcome of a run parked on `request` in an engine, once the host lists it (so a page
 * that reloads finds it): its event log can lead its request index, which follows once the
 * run's live tail ends; a lag past that is waited out briefly, until `signal` aborts.
 */
async function listed(
  h: RunHost<unknown, unknown>,
  runId: string,
  request: Request,
  signal: AbortSignal,
): Promise<RunOutcome> {
  for await (const _ of h.events(runId)) void _
  while (!signal.aborted && (await h.findRequest(request.id)) === undefined)
    await new Promise((resolve) => setTimeout(resolve, 50))
  return { kind: "conversation", id: runId, result: pendingResult(request) }
}

function outcomeOf(runId: string, result: unknown): RunOutcome {
  // A runtime agent's result is its root handle's TaskResult; a client agent's a RunResult.
  return Array.isArray((result as RunResult).messages)
    ? { kind: "conversation", id: runId, result: result as RunResult }
    : { kind: "runtime", key: runId, result: result as TaskResult }
}

/** What the inbox shows for a run that waits in an engine: its request, no text yet. */
function pendingResult(request: Request): RunResult {
  return {
    status: "pending",
    text: "",
    messages: [],
    pending: request,
    toolCalls: [],
    toolCallCount: 0,
    turns: 0,
    model: "",
    usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
  }
}
