import type { TaskResult } from "@toolnexus/agents"
import {
  AbortError,
  type Answer,
  ConfigError,
  type AnswerDecision,
  EngineRunError,
  HostUnsupportedError,
  type PendingEntry,
  type RunHost,
  type RunResult,
  StoreError,
  assertAnswer,
} from "@toolnexus/core"
import { type EngineDecided, type EngineRunInput, checkRunId, enginePrompt } from "@toolnexus/core/engine"
import { type OpenRequest, namespaceOf, refusalError } from "./protocol.js"

/** Options of {@link connectRestate}. */
export interface ConnectRestateOptions {
  /** The Restate ingress URL, e.g. `http://127.0.0.1:8080`. */
  ingress: string
  /** The admin URL; `listPending` and `cancel` need it (its SQL API, its cancel call). */
  admin?: string
  /** The workers' namespace (as launched with); default `toolnexus`. */
  namespace?: string
}

/**
 * Connects to runs served by `serveRestate` workers through a Restate server: start runs, read
 * results, list and answer open requests (one decision per request id), read decisions and
 * cancel runs. The runs stream and keep their transcripts in the workers, so `events`,
 * `transcript`, `send` and `onEvent` throw `HostUnsupportedError` (and `start` takes a string).
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
  const controllers = new Set<AbortController>()

  async function call(url: string, init: RequestInit & { timeoutMs?: number } = {}): Promise<Response> {
    const controller = new AbortController()
    controllers.add(controller)
    const timer =
      init.timeoutMs === undefined ? undefined : setTimeout(() => controller.abort(), init.timeoutMs)
    try {
      return await fetch(url, { ...init, signal: controller.signal })
    } catch (error) {
      if (controller.signal.aborted) throw new AbortError(`the call to ${url} was aborted`, { cause: error })
      throw new StoreError(`the Restate server at ${url} is unreachable: ${(error as Error).message}`, {
        cause: error,
      })
    } finally {
      clearTimeout(timer)
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

  return {
    async start(agent, runId, prompt, startOpts) {
      checkRunId(runId)
      const input: EngineRunInput = { agent, prompt: enginePrompt(HOST, prompt, startOpts) }
      const response = await post(`${ingress}/${path(namespace, runId, "run", "send")}`, input)
      if (!response.ok) throw await failure(response, `starting run ${runId}`)
      const body = (await response.json()) as { status?: string }
      return { runId, started: body.status !== "PreviouslyAccepted" }
    },
    async result(runId, resultOpts = {}) {
      checkRunId(runId)
      const response = await call(`${ingress}/restate/workflow/${path(namespace, runId)}/attach`, {
        timeoutMs: resultOpts.timeoutMs,
      })
      if (response.ok) return (await response.json()) as RunResult | TaskResult
      const text = await response.text()
      if (response.status === 404)
        throw new EngineRunError(runId, "is not known to the engine (never started, or past retention)")
      throw new EngineRunError(runId, `failed: ${messageOf(text)}`)
    },
    async listPending(listOpts = {}) {
      let entries = (await openRequests("listPending")).map((open) => open.entry)
      if (listOpts.kind !== undefined) entries = entries.filter((e) => e.request.kind === listOpts.kind)
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
      const response = await post(`${ingress}/${path(requests, requestId, "find")}`, null)
      if (!response.ok) throw await failure(response, `finding request ${requestId}`)
      const entry = (await response.json()) as PendingEntry | null
      return entry ?? undefined
    },
    async getDecision(requestId) {
      const response = await post(`${ingress}/${path(requests, requestId, "decision")}`, null)
      if (!response.ok) throw await failure(response, `reading the decision on ${requestId}`)
      const decision = (await response.json()) as AnswerDecision | null
      return decision ?? undefined
    },
    async deliverAnswer(answer: Answer, deliverOpts) {
      if (deliverOpts?.onEvent !== undefined)
        throw new HostUnsupportedError(HOST, "deliverAnswer({ onEvent })", WORKER_EVENTS)
      assertAnswer(answer)
      const response = await post(`${ingress}/${path(requests, answer.id, "decide")}`, answer)
      if (!response.ok) throw await failure(response, `delivering the answer to ${answer.id}`)
      return (await response.json()) as EngineDecided
    },
    async cancel(runId, reason = "cancelled") {
      checkRunId(runId)
      // The workflow first, so it registers no request after the withdrawal below.
      const id = await query<{ id: string }>(
        "cancel",
        `SELECT id FROM sys_invocation WHERE target_service_name = '${namespace}' AND target_service_key = '${runId}' AND target_handler_name = 'run' AND status <> 'completed'`,
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
    send() {
      return Promise.reject(
        new HostUnsupportedError(HOST, "send", "a Restate run takes one prompt, at start"),
      )
    },
    events() {
      throw new HostUnsupportedError(HOST, "events", WORKER_EVENTS)
    },
    transcript() {
      return Promise.reject(
        new HostUnsupportedError(HOST, "transcript", "a run's conversation lives in its workflow journal"),
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
const WORKER_EVENTS = "a run's events are the workers' (the agent's `onEvent`)"

/** A refusal's typed error, or a StoreError naming what failed. */
async function failure(response: Response, what: string): Promise<Error> {
  const text = await response.text()
  return refusalError(text) ?? new StoreError(`${what} failed: HTTP ${response.status}: ${messageOf(text)}`)
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
