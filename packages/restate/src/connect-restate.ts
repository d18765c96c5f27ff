import type { TaskResult } from "@toolnexus/agents"
import {
  AbortError,
  type Answer,
  ConfigError,
  type EngineConnection,
  EngineRunError,
  type PendingEntry,
  type RunResult,
  StoreError,
  assertAnswer,
} from "@toolnexus/core"
import { type EngineDecided, checkRunId } from "@toolnexus/core/engine"
import { namespaceOf, refusalError } from "./protocol.js"

/** Options of {@link connectRestate}. */
export interface ConnectRestateOptions {
  /** The Restate ingress URL, e.g. `http://127.0.0.1:8080`. */
  ingress: string
  /** The admin URL; `listPending` needs it (its SQL API). */
  admin?: string
  /** The workers' namespace (as launched with); default `toolnexus`. */
  namespace?: string
}

/**
 * Connects to runs served by `serveRestate` workers through a Restate server: start runs, read
 * results, list and answer open requests, one decision per request id.
 *
 * @example
 * const engine = connectRestate({ ingress: "http://127.0.0.1:8080", admin: "http://127.0.0.1:9070" })
 * await engine.start("refunds", "order-42", "refund order 42")
 */
export function connectRestate(opts: ConnectRestateOptions): EngineConnection<RunResult | TaskResult> {
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
    async start(agent, runId, prompt) {
      checkRunId(runId)
      const response = await post(`${ingress}/${path(namespace, runId, "run", "send")}`, { agent, prompt })
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
      if (admin === undefined)
        throw new ConfigError("connectRestate: listPending needs `admin` (the admin SQL API)")
      const query = `SELECT service_key, value_utf8 FROM state WHERE service_name = '${requests}' AND key = 'open'`
      const response = await post(`${admin}/query`, { query })
      if (!response.ok) throw await failure(response, "listing open requests")
      const body = (await response.json()) as { rows?: { service_key: string; value_utf8: string }[] }
      let entries: PendingEntry[] = []
      for (const row of body.rows ?? []) {
        try {
          entries.push((JSON.parse(row.value_utf8) as { entry: PendingEntry }).entry)
        } catch {
          // A row that is not ours is skipped; it never breaks the listing.
        }
      }
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
    async deliverAnswer(answer: Answer) {
      assertAnswer(answer)
      const response = await post(`${ingress}/${path(requests, answer.id, "decide")}`, answer)
      if (!response.ok) throw await failure(response, `delivering the answer to ${answer.id}`)
      return (await response.json()) as EngineDecided
    },
    async close() {
      for (const controller of controllers) controller.abort()
    },
  }
}

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
