import { randomBytes, randomUUID } from "node:crypto"
import {
  type Answer,
  AnswerConflictError,
  AnswerExpiredError,
  AnswerMismatchError,
  type Client,
  ConfigError,
  LLMHttpError,
  LLMResponseError,
  NetworkError,
  type RunResult,
  StoreError,
  type Toolkit,
  ToolnexusError,
  UnknownRequestError,
} from "@toolnexus/core"
import { askWithAnswer, type DurableStore } from "@toolnexus/durable"
import { type Context, Hono } from "hono"
import { bodyLimit } from "hono/body-limit"
import type { ContentfulStatusCode } from "hono/utils/http-status"
import { renderPage, renderPendingSection } from "./page.js"
import { createApprovalToolkit } from "./tools.js"

/** Options of {@link createApprovalsApp}. */
export interface ApprovalsAppOptions {
  /** Where runs park; must be the store `client` keeps its conversations in. */
  store: DurableStore
  /** The model client; its conversation store must be `store`. */
  client: Client
  /** The tools runs use, on the first ask and on every resume; default {@link createApprovalToolkit}. */
  toolkit?: Toolkit
  /** Called with unexpected (5xx) errors; default `console.error`. */
  onError?: (error: unknown) => void
}

/** A run as the API reports it: finished, or waiting on a request. */
export interface RunView {
  /** The run (conversation) id. */
  id: string
  status: RunResult["status"]
  /** The model's final text (or what it said before it halted). */
  text: string
  /** The request the run waits on when `status` is `"pending"`. */
  pending?: RunResult["pending"]
  /** Which limit stopped the run when `status` is `"incomplete"`. */
  limit?: string
}

/** A pending request as `GET /requests` lists it. */
export interface PendingView {
  /** The run waiting on the request. */
  runId: string
  /** RFC 3339 time the run started waiting. */
  since: string
  /** True when an approval would be refused because `request.expiresAt` has passed. */
  expired: boolean
  /** The request, in its wire shape. */
  request: NonNullable<RunResult["pending"]>
}

/** The JSON error body of every failed call. */
export interface ErrorBody {
  error: { code: string; message: string }
}

const MAX_BODY_BYTES = 64 * 1024
const MAX_PROMPT_CHARS = 8_000
const PAGE_LIMIT = 200
const INDEX_PREFIX = "approvals:request:"

/**
 * The approval service as a Hono app: `POST /runs` starts a run, `GET /requests` and `GET /`
 * list the runs waiting for a human, `POST /requests/:id/answer` and `POST /webhooks/answer`
 * resume them. Several instances may share one PostgreSQL store: the store's claim lets exactly
 * one of two concurrent answers resume a run; the other gets a 409.
 *
 * @throws ConfigError when `client` keeps its conversations somewhere other than `store`.
 * @example
 * const store = await openStore("sqlite:./.data/approvals.db")
 * const { client } = createModel({ store })
 * serve({ fetch: createApprovalsApp({ store, client }).fetch, port: 3000 })
 */
export function createApprovalsApp(opts: ApprovalsAppOptions): Hono {
  const { store, client } = opts
  if (client.conversationStore() !== store) {
    // Otherwise runs would park where listPending cannot see them.
    throw new ConfigError("createApprovalsApp: the client must keep its conversations in `store`")
  }
  let toolkit: Promise<Toolkit> | undefined
  const tools = () => {
    toolkit ??= opts.toolkit ? Promise.resolve(opts.toolkit) : createApprovalToolkit()
    return toolkit
  }
  const onError = opts.onError ?? ((error: unknown) => console.error("[approvals]", error))

  /**
   * Remembers which run a new request belongs to, in the store itself so every instance sees
   * it. Without it a request that was already answered could not be told from one that never
   * existed: `listPending` forgets a request once it is answered.
   */
  async function remember(runId: string, result: RunResult): Promise<void> {
    if (result.status !== "pending" || !result.pending) return
    await store.putSnapshot(INDEX_PREFIX + result.pending.id, { runId }).catch(onError)
  }

  async function findRun(requestId: string): Promise<string | undefined> {
    if (requestId.length === 0 || requestId.length > 200) return undefined
    const indexed = (await store.getSnapshot(INDEX_PREFIX + requestId)) as { runId?: unknown } | undefined
    if (typeof indexed?.runId === "string") return indexed.runId
    // Requests parked by other programs on the same store, or answered in the instant
    // between a run's save and its index entry.
    const entries = await store.listPending()
    return entries.find((entry) => entry.request.id === requestId)?.conversationId
  }

  async function answer(requestId: string, reply: Answer): Promise<RunView> {
    const runId = await findRun(requestId)
    if (runId === undefined) {
      throw new HttpError(404, "unknown_request", `no run waits on request ${JSON.stringify(requestId)}`)
    }
    const current = await store.getPending(runId)
    if (current?.id !== requestId) {
      // The run went on (finished, or waits on a newer request): this one was answered.
      throw new HttpError(
        409,
        "answer_conflict",
        `request ${JSON.stringify(requestId)} was already answered; run ${runId} has moved on`,
      )
    }
    const result = await askWithAnswer(client, { id: runId, answer: reply, toolkit: await tools() })
    await remember(runId, result)
    return toRunView(runId, result)
  }

  const app = new Hono()
  app.use(
    "*",
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: (c) =>
        c.json(errorBody("body_too_large", `bodies are limited to ${MAX_BODY_BYTES} bytes`), 413),
    }),
  )

  app.onError((error, c) => {
    const { status, code, message } = classify(error)
    if (status >= 500) onError(error)
    return c.json(errorBody(code, message), status)
  })
  app.notFound((c) => c.json(errorBody("not_found", `no route for ${c.req.method} ${c.req.path}`), 404))

  async function pendingForPage() {
    const entries = await store.listPending({ limit: PAGE_LIMIT + 1 })
    return { entries: entries.slice(0, PAGE_LIMIT), now: Date.now(), truncated: entries.length > PAGE_LIMIT }
  }

  app.get("/", async (c) => {
    const nonce = randomBytes(16).toString("base64")
    htmlHeaders(c, nonce)
    return c.html(renderPage({ ...(await pendingForPage()), nonce }))
  })

  app.get("/partials/pending", async (c) => {
    htmlHeaders(c)
    return c.html(renderPendingSection(await pendingForPage()))
  })

  app.get("/healthz", (c) => c.json({ ok: true }))

  app.get("/requests", async (c) => {
    const kind = c.req.query("kind")
    const limit = parseLimit(c.req.query("limit"))
    const now = Date.now()
    const entries = await store.listPending({ limit, ...(kind ? { kind } : {}) })
    const requests: PendingView[] = entries.map(({ conversationId, since, request }) => ({
      runId: conversationId,
      since,
      expired: request.expiresAt !== undefined && Date.parse(request.expiresAt) < now,
      request,
    }))
    return c.json({ requests })
  })

  app.post("/runs", async (c) => {
    const body = await readJson(c.req)
    const prompt = isObject(body) ? body.prompt : undefined
    if (typeof prompt !== "string" || prompt.trim() === "") {
      throw new HttpError(400, "invalid_body", 'expected {"prompt": "<a non-empty string>"}')
    }
    if (prompt.length > MAX_PROMPT_CHARS) {
      throw new HttpError(400, "invalid_body", `the prompt is limited to ${MAX_PROMPT_CHARS} characters`)
    }
    const id = `run-${randomUUID()}`
    const result = await client.ask(prompt, { id, toolkit: await tools() })
    await remember(id, result)
    return c.json(toRunView(id, result), 201)
  })

  app.post("/requests/:id/answer", async (c) => {
    const id = c.req.param("id")
    const reply = parseAnswer(await readJson(c.req), id)
    return c.json(await answer(id, reply))
  })

  app.post("/webhooks/answer", async (c) => {
    const reply = parseAnswer(await readJson(c.req))
    return c.json(await answer(reply.id, reply))
  })

  return app
}

/** An error the API reports with this status and code. */
class HttpError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

/** Maps an error to the status and code the API answers with; messages of unknown errors stay private. */
function classify(error: unknown): { status: ContentfulStatusCode; code: string; message: string } {
  if (error instanceof HttpError) return { status: error.status, code: error.code, message: error.message }
  const message = error instanceof Error ? error.message : String(error)
  if (UnknownRequestError.isInstance(error)) return { status: 404, code: "unknown_request", message }
  if (AnswerConflictError.isInstance(error)) return { status: 409, code: "answer_conflict", message }
  if (AnswerExpiredError.isInstance(error)) return { status: 422, code: "answer_expired", message }
  if (AnswerMismatchError.isInstance(error)) return { status: 422, code: "answer_mismatch", message }
  if (
    LLMHttpError.isInstance(error) ||
    LLMResponseError.isInstance(error) ||
    NetworkError.isInstance(error)
  ) {
    return { status: 502, code: "model_failed", message }
  }
  if (StoreError.isInstance(error)) return { status: 503, code: "store_unavailable", message }
  // toolnexus errors never carry secrets, so their messages may be shown.
  if (ToolnexusError.isInstance(error)) return { status: 500, code: error.code.toLowerCase(), message }
  return { status: 500, code: "internal_error", message: "internal error; see the service log" }
}

function errorBody(code: string, message: string): ErrorBody {
  return { error: { code, message } }
}

function toRunView(id: string, result: RunResult): RunView {
  const view: RunView = { id, status: result.status, text: result.text }
  if (result.pending) view.pending = result.pending
  if (result.limit) view.limit = result.limit
  return view
}

async function readJson(req: { text(): Promise<string> }): Promise<unknown> {
  const text = await req.text()
  try {
    return JSON.parse(text)
  } catch {
    throw new HttpError(400, "invalid_json", "the request body is not valid JSON")
  }
}

/**
 * Validates an answer body: `{ok, reason?, data?}`, plus `id` when `pathId` is absent
 * (webhooks). `reason` is only allowed with `ok: false`, as the wire contract says.
 */
function parseAnswer(body: unknown, pathId?: string): Answer {
  const shape = pathId === undefined ? '{"id", "ok", "reason"?, "data"?}' : '{"ok", "reason"?, "data"?}'
  const invalid = (why: string) => new HttpError(400, "invalid_body", `${why}; expected ${shape}`)
  if (!isObject(body)) throw invalid("the body is not a JSON object")
  const id = pathId ?? body.id
  if (typeof id !== "string" || id === "") throw invalid('"id" must be a non-empty string')
  if (pathId !== undefined && body.id !== undefined && body.id !== pathId) {
    throw invalid('"id" in the body differs from the request id in the path')
  }
  if (typeof body.ok !== "boolean") throw invalid('"ok" must be true or false')
  const answer: Answer = { id, ok: body.ok }
  if (body.reason !== undefined) {
    if (typeof body.reason !== "string") throw invalid('"reason" must be a string')
    if (body.ok) throw invalid('"reason" is only allowed when "ok" is false')
    answer.reason = body.reason
  }
  if (body.data !== undefined) {
    if (!isObject(body.data)) throw invalid('"data" must be a JSON object')
    answer.data = body.data
  }
  return answer
}

function parseLimit(raw: string | undefined): number {
  if (raw === undefined) return 100
  const limit = Number(raw)
  if (!Number.isInteger(limit) || limit < 0 || limit > 1000) {
    throw new HttpError(400, "invalid_query", '"limit" must be an integer from 0 to 1000')
  }
  return limit
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value)
}

/** Headers of every HTML response: a strict CSP (only nonce-carrying inline code runs), no caching. */
function htmlHeaders(c: Context, nonce?: string): void {
  c.header("content-security-policy", contentSecurityPolicy(nonce))
  c.header("cache-control", "no-store")
  c.header("referrer-policy", "no-referrer")
  c.header("x-content-type-options", "nosniff")
}

function contentSecurityPolicy(nonce: string | undefined): string {
  const inline = nonce === undefined ? "'none'" : `'nonce-${nonce}'`
  return [
    "default-src 'none'",
    `script-src ${inline}`,
    `style-src ${inline}`,
    "connect-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join("; ")
}
