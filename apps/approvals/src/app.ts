import { randomBytes } from "node:crypto"
import {
  type Client,
  ConfigError,
  type Logger,
  type RunHost,
  type Toolkit,
  isExpired,
  runIdOfEntry,
} from "@toolnexus/core"
import type { DeliveryRecord } from "@toolnexus/core"
import { type DurableStore, type NotificationOutbox, createStoreHost } from "@toolnexus/durable"
import { type Context, Hono } from "hono"
import { bodyLimit } from "hono/body-limit"
import { parseAnswer } from "./answer-body.js"
import { createAnswering, toRunView } from "./answering.js"
import { describeRequest, isPlainObject } from "./describe-request.js"
import { type InboxEventType, createEventHub, streamEvents } from "./events.js"
import { type HistoryFilter, createHistory } from "./history.js"
import { HttpError, classify, errorBody } from "./http-error.js"
import { type NotifyOptions, createNotifier, createWebhookOutbox } from "./notifier.js"
import {
  AGENT,
  type FailedInboxEntry,
  type InboxEntry,
  TEAM_AGENT,
  type TeamOptions,
  approvalsAgents,
  createHostInbox,
} from "./host-inbox.js"
import { renderHistoryBody, renderHistorySection } from "./page/history-view.js"
import { renderShell } from "./page/html.js"
import { renderRequestBody, renderUnknownRequestBody } from "./page/request-view.js"
import { renderInboxBody, renderInboxSection } from "./page/inbox-view.js"
import { SCRIPT } from "./page/script.js"
import { renderSignInBody } from "./page/sign-in-view.js"
import { STYLE } from "./page/style.js"
import {
  type AppEnv,
  type Principal,
  type SecurityOptions,
  clientAddress,
  createAccess,
} from "./security/access.js"
import { type RateLimitOptions, createRateLimiter } from "./security/rate-limit.js"
import { isJsonContentType } from "./security/request-checks.js"
import { createRevocations } from "./security/sessions.js"
import { createWebhookGuard } from "./security/webhook-guard.js"
import { SIGNATURE_HEADER } from "./security/webhook-signature.js"
import { createApprovalToolkit } from "./tools.js"

/** Options of {@link createApprovalsApp}. */
export interface ApprovalsAppOptions {
  /** Keeps history, sessions and webhook replay marks; with `client`, also where runs park. */
  store: DurableStore
  /**
   * Where runs are started and requests answered: a store host (`createStoreHost`) or an
   * engine's connection (`connectRestate`, `connectDbos`). Without it, `client` (with `toolkit`
   * and `team`) is shorthand for a store host over `store` serving agents `approvals` and `team`.
   */
  host?: RunHost<unknown, unknown>
  /** The agent plain runs start on `host` (`POST /runs`); default `"approvals"`. */
  agent?: string
  /** The agent team runs start on `host` (`POST /runs {"team": true}`); default `"team"` with `team`. */
  teamAgent?: string
  /** The model client when there is no `host`; its conversation store must be `store`. */
  client?: Client
  /** The tools runs use, on the first ask and on every resume; default {@link createApprovalToolkit}. */
  toolkit?: Toolkit
  /** A sub-agent team that `POST /runs {"team": true}` starts (a lead agent delegating to others). */
  team?: TeamOptions
  /** Sign-in, API tokens, webhook secret, allowed hosts. */
  security: SecurityOptions
  /** Answers per minute and user, token or webhook sender; default 30 per 60 s. */
  answerRateLimit?: RateLimitOptions
  /** Largest accepted request body; default 64 KiB (larger ⇒ 413). */
  maxBodyBytes?: number
  /** This instance's stable name in the shared history (e.g. host and port); default random. */
  instanceId?: string
  /** How often open pages look for changes made by other instances; default 2000 ms. */
  pollMs?: number
  /**
   * Post signed notifications when a run parks on a request (`request.pending`, through
   * `outbox`: retried until the receiver takes it, attempts shown on the card and in the API),
   * when one expires soon (`request.expiring`, with `warnBeforeMs`) and when one is answered.
   */
  notify?: NotifyOptions
  /** Post `request.expiring` this many ms before a request's `expiresAt`; needs `notify`. */
  warnBeforeMs?: number
  /**
   * Where `request.pending` / `request.expiring` go: default a {@link createWebhookOutbox} to
   * `notify`. Failed posts are retried by its `sweep`, which the caller schedules (main.ts
   * sweeps it with the claims).
   */
  outbox?: NotificationOutbox
  /** Where the model is served, named in the one-line error of a failed model call. */
  modelUrl?: string
  /** Called with unexpected (5xx) errors; default `logger.error`, else `console.error`. */
  onError?: (error: unknown) => void
  /** Refused answers (unknown, conflict, expired) at `info`, without a stack; failures at `error`. */
  logger?: Logger
}

/** A pending request as `GET /requests` lists it: once per request id. */
export interface PendingView {
  /** The run waiting on the request (the runtime key of a team run). */
  runId: string
  /** The conversation holding it (a tree's deepest holder). */
  conversationId: string
  runtimeKey?: string
  /** The agent path of a tree's request. */
  path?: string[]
  tool?: string
  args?: Record<string, unknown>
  /** RFC 3339 time the run started waiting. */
  since: string
  /** True when an approval would be refused because `request.expiresAt` has passed. */
  expired: boolean
  attempts: number
  state: string
  /** The request, in its wire shape. */
  request: InboxEntry["request"]
  /**
   * Its notifications, once one was attempted: `attempts`, `deliveredAt` or `lastError` and
   * `nextAttemptAt`, and `expiring` once the expiry warning was raised.
   */
  notification?: Omit<DeliveryRecord, "requestId">
}

const MAX_PROMPT_CHARS = 8_000
const PAGE_LIMIT = 200

/**
 * The approvals inbox as a Hono app: people sign in with a token and answer the requests
 * agent runs park on (approve, decline with a reason, respond, edit the arguments), see the
 * history of answers, and get live updates; programs use the JSON API with bearer tokens or
 * the HMAC-signed webhook. Several instances may share one PostgreSQL store.
 *
 * @throws ConfigError without `host` or `client`, or when `client` keeps its conversations
 *   somewhere other than `store`.
 * @example
 * const store = await openStore("sqlite:./.data/approvals.db")
 * const { client } = createModel({ store })
 * const app = createApprovalsApp({ store, client, security: { users: { alice: process.env.ALICE_TOKEN! } } })
 * serve({ fetch: app.fetch, port: 3000 })
 */
export function createApprovalsApp(opts: ApprovalsAppOptions): Hono<AppEnv> {
  const { store, client, logger } = opts
  if (!opts.host && !client)
    throw new ConfigError("createApprovalsApp: pass `host`, or `client` for a store host")
  if (!opts.host && client?.conversationStore() !== store) {
    // Otherwise runs would park where listPending cannot see them.
    throw new ConfigError("createApprovalsApp: the client must keep its conversations in `store`")
  }
  if (!opts.security || !isPlainObject(opts.security.users)) {
    throw new ConfigError("createApprovalsApp: `security.users` must name at least one sign-in token")
  }
  let toolkit: Promise<Toolkit> | undefined
  const tools = () => {
    toolkit ??= opts.toolkit ? Promise.resolve(opts.toolkit) : createApprovalToolkit()
    return toolkit
  }
  const onError =
    opts.onError ??
    (logger
      ? (error: unknown) =>
          logger.error(`[approvals] ${(error as Error)?.message ?? String(error)}`, { error })
      : (error: unknown) => console.error("[approvals]", error))
  const maxBodyBytes = opts.maxBodyBytes ?? 64 * 1024
  const teamAgent = opts.teamAgent ?? (opts.team ? TEAM_AGENT : undefined)
  // The shorthand's host is built on first use: the default toolkit is created asynchronously.
  const host =
    opts.host ??
    (async () =>
      createStoreHost({
        store,
        agents: approvalsAgents({ client: client as Client, toolkit: await tools(), team: opts.team }),
        // The process running the app sweeps (see main.ts); an app in a test never does behind its back.
        sweepEveryMs: false,
        // Conversations parked by `client.ask` outside the host (a chat on the same store) too.
        adopt: () => AGENT,
        ...(logger ? { logger } : {}),
      }))
  const inbox = createHostInbox({
    host,
    agent: opts.agent ?? AGENT,
    ...(teamAgent !== undefined ? { teamAgent } : {}),
    ...(logger ? { logger } : {}),
  })
  const history = createHistory({ store, writerId: opts.instanceId })
  const access = createAccess(opts.security, createRevocations(store))
  const verifyWebhook = createWebhookGuard({ secret: opts.security.webhookSecret, store })
  const hub = createEventHub({ fingerprint: () => fingerprint(), pollMs: opts.pollMs ?? 2000 })
  const outbox =
    opts.outbox ??
    (opts.notify
      ? createWebhookOutbox(store, opts.notify, {
          ...(opts.warnBeforeMs !== undefined ? { warnBeforeMs: opts.warnBeforeMs } : {}),
          onError,
          onChange: () => hub.notify("inbox"),
        })
      : undefined)
  /** The notification records of `entries`, by request id. */
  async function deliveriesOf(entries: { request: { id: string } }[]): Promise<Map<string, DeliveryRecord>> {
    const found = new Map<string, DeliveryRecord>()
    if (!outbox) return found
    const records = await Promise.all(entries.map((e) => outbox.getDelivery(e.request.id)))
    for (const record of records) if (record) found.set(record.requestId, record)
    return found
  }
  const answering = createAnswering({
    inbox,
    history,
    hub,
    limiter: createRateLimiter(opts.answerRateLimit ?? { limit: 30, windowMs: 60_000 }),
    ...(opts.notify ? { notify: createNotifier(opts.notify, onError) } : {}),
    ...(outbox ? { outbox } : {}),
    ...(opts.modelUrl ? { modelUrl: opts.modelUrl } : {}),
    onError,
  })

  async function fingerprint(): Promise<Record<InboxEventType, string>> {
    const [pending, failed, version] = await Promise.all([
      inbox.listPending({ limit: PAGE_LIMIT }),
      inbox.listFailed(),
      history.version(),
    ])
    const ids = [
      ...pending.map((e) => `${e.request.id}:${e.state}`),
      ...failed.map((e) => `failed:${e.request.id}`),
    ]
    return { inbox: ids.join(","), history: version }
  }

  const app = new Hono<AppEnv>()
  app.onError((error, c) => {
    const { status, code, message, extra } = classify(error, opts.modelUrl)
    if (status >= 500) onError(error)
    if (error instanceof HttpError)
      for (const [name, value] of Object.entries(error.headers)) c.header(name, value)
    return c.json(errorBody(code, message, extra), status)
  })
  app.notFound((c) => c.json(errorBody("not_found", `no route for ${c.req.method} ${c.req.path}`), 404))
  app.use("*", async (c, next) => {
    await next()
    c.header("x-content-type-options", "nosniff")
    // Not "no-referrer": with it Chromium sends `Origin: null` on the page's own form posts.
    c.header("referrer-policy", "same-origin")
    c.header("cache-control", "no-store")
  })
  app.use(
    "*",
    bodyLimit({
      maxSize: maxBodyBytes,
      onError: (c) => c.json(errorBody("body_too_large", `bodies are limited to ${maxBodyBytes} bytes`), 413),
    }),
  )
  app.use("*", access.hostCheck)
  app.use("*", access.authenticate)

  const page = (
    c: Context<AppEnv>,
    title: string,
    body: string,
    current?: "inbox" | "history",
    status: 200 | 401 | 404 | 429 = 200,
  ) => {
    const nonce = randomBytes(16).toString("base64")
    htmlHeaders(c, nonce)
    const principal = c.get("principal") as Principal | undefined
    const shell = renderShell({
      nonce,
      title,
      body,
      style: STYLE,
      ...(principal ? { user: principal.name, csrf: access.csrfOf(principal), script: SCRIPT } : {}),
      ...(current ? { current } : {}),
    })
    return c.html(shell, status)
  }
  access.routes(app, (c, csrf, problem, status) =>
    page(c, "Sign in", renderSignInBody({ csrf, problem }), undefined, status),
  )

  async function inboxInput() {
    const [entries, failed] = await Promise.all([
      inbox.listPending({ limit: PAGE_LIMIT + 1 }),
      inbox.listFailed(),
    ])
    const shown = entries.slice(0, PAGE_LIMIT)
    return {
      entries: shown,
      deliveries: await deliveriesOf(shown),
      failed,
      now: Date.now(),
      truncated: entries.length > PAGE_LIMIT,
    }
  }

  app.get("/", async (c) =>
    page(c, "Inbox", renderInboxBody({ ...(await inboxInput()), team: teamAgent !== undefined }), "inbox"),
  )
  app.get("/partials/inbox", async (c) => {
    htmlHeaders(c)
    return c.html(renderInboxSection(await inboxInput()))
  })
  app.get("/history", async (c) => {
    const filter = historyFilter(c)
    const entries = await history.list(filter)
    return page(c, "History", renderHistoryBody({ entries, filter, now: Date.now() }), "history")
  })
  app.get("/partials/history", async (c) => {
    htmlHeaders(c)
    return c.html(renderHistorySection({ entries: await history.list(historyFilter(c)), now: Date.now() }))
  })

  app.get("/events", (c) => streamEvents(c, hub))

  app.get("/healthz", (c) => c.json({ ok: true }))
  // Browsers ask for /favicon.ico whatever the page links; both names get the same icon.
  for (const path of ["/favicon.svg", "/favicon.ico"]) {
    app.get(path, (c) => {
      c.header("content-type", "image/svg+xml")
      c.header("cache-control", "public, max-age=86400")
      return c.body(FAVICON)
    })
  }

  app.get("/requests", async (c) => {
    const kind = c.req.query("kind")
    const limit = parseLimit(c.req.query("limit"))
    const now = Date.now()
    const entries = await inbox.listPending({ limit, ...(kind ? { kind } : {}) })
    const deliveries = await deliveriesOf(entries)
    return c.json({
      requests: entries.map((entry) => toPendingView(entry, now, deliveries.get(entry.request.id))),
    })
  })
  app.get("/requests/failed", async (c) => {
    const entries = await inbox.listFailed({ limit: parseLimit(c.req.query("limit")) })
    const now = Date.now()
    return c.json({
      requests: entries.map((entry) => ({ ...toPendingView(entry, now), lastError: entry.lastError })),
    })
  })
  app.get("/requests/:id", async (c) => {
    const id = c.req.param("id")
    const entry = await inbox.findRequest(id)
    // A browser following a link gets the request's page; API clients get JSON.
    if ((c.req.header("accept") ?? "").includes("text/html")) {
      return entry
        ? page(c, "Request", renderRequestBody(entry, Date.now(), (await deliveriesOf([entry])).get(id)))
        : page(c, "No such request", renderUnknownRequestBody(id), undefined, 404)
    }
    if (!entry)
      throw new HttpError(
        404,
        "unknown_request",
        `no run waits on request ${JSON.stringify(c.req.param("id"))}`,
      )
    return c.json(toPendingView(entry, Date.now(), (await deliveriesOf([entry])).get(id)))
  })
  app.get("/answers", async (c) => c.json({ answers: await history.list(historyFilter(c)) }))

  app.post("/runs", async (c) => {
    const body = await readJson(c)
    const prompt = isPlainObject(body) ? body.prompt : undefined
    if (typeof prompt !== "string" || prompt.trim() === "") {
      throw new HttpError(
        400,
        "invalid_body",
        'expected {"prompt": "<a non-empty string>", "team"?: boolean}',
      )
    }
    if (prompt.length > MAX_PROMPT_CHARS) {
      throw new HttpError(400, "invalid_body", `the prompt is limited to ${MAX_PROMPT_CHARS} characters`)
    }
    const team = isPlainObject(body) && body.team === true
    const view = toRunView(await inbox.startRun(prompt, { team }))
    answering.announce(view)
    return c.json(view, 201)
  })

  app.post("/requests/:id/answer", async (c) => {
    const id = c.req.param("id")
    const reply = parseAnswer(await readJson(c), id)
    return c.json(await answering.answer(reply, c.get("principal")))
  })

  app.post("/requests/:id/retry", async (c) => {
    await readJson(c)
    const view = toRunView(await inbox.retryFailed(c.req.param("id")))
    answering.announce(view)
    return c.json(view)
  })

  app.post("/webhooks/answer", async (c) => {
    if (!isJsonContentType(c.req.header("content-type"))) throw unsupportedMediaType()
    const raw = await c.req.text()
    await verifyWebhook(c.req.header(SIGNATURE_HEADER), raw)
    const reply = parseAnswer(parseJsonText(raw))
    return c.json(await answering.answer(reply, { name: `webhook ${clientAddress(c)}`, via: "webhook" }))
  })

  return app
}

function toPendingView(
  entry: InboxEntry | FailedInboxEntry,
  now: number,
  delivery?: DeliveryRecord,
): PendingView {
  const { request } = entry
  const described = describeRequest(request)
  const view: PendingView = {
    runId: runIdOfEntry(entry),
    conversationId: entry.conversationId,
    since: entry.since,
    expired: isExpired(request, now),
    attempts: entry.attempts,
    state: entry.state,
    request,
  }
  if (entry.runtimeKey) view.runtimeKey = entry.runtimeKey
  const path = entry.path ?? (described.path.length ? described.path : undefined)
  if (path) view.path = path
  if (described.tool) view.tool = described.tool
  if (described.args) view.args = described.args
  if (delivery) {
    const { requestId: _id, ...notification } = delivery
    view.notification = notification
  }
  return view
}

function unsupportedMediaType(): HttpError {
  return new HttpError(
    415,
    "unsupported_media_type",
    "send the body as JSON with `content-type: application/json`",
  )
}

/** The JSON body of a state-changing call; only `application/json` is read, so a cross-site `text/plain` form never is. */
async function readJson(c: Context): Promise<unknown> {
  if (!isJsonContentType(c.req.header("content-type"))) throw unsupportedMediaType()
  return parseJsonText(await c.req.text())
}

function parseJsonText(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw new HttpError(400, "invalid_json", "the request body is not valid JSON")
  }
}

function parseLimit(raw: string | undefined): number {
  if (raw === undefined) return 100
  const limit = Number(raw)
  if (!Number.isInteger(limit) || limit < 0 || limit > 1000) {
    throw new HttpError(400, "invalid_query", '"limit" must be an integer from 0 to 1000')
  }
  return limit
}

function historyFilter(c: Context): HistoryFilter {
  const q = (name: string) => {
    const value = c.req.query(name)?.trim()
    return value === undefined || value === "" ? undefined : value.slice(0, 200)
  }
  const filter: HistoryFilter = { limit: parseLimit(c.req.query("limit")) }
  const decision = q("decision")
  if (decision !== undefined) {
    if (decision !== "approved" && decision !== "declined") {
      throw new HttpError(400, "invalid_query", '"decision" must be "approved" or "declined"')
    }
    filter.decision = decision
  }
  const user = q("user")
  const tool = q("tool")
  const outcome = q("outcome")
  const text = q("q")
  if (user) filter.user = user
  if (tool) filter.tool = tool
  if (outcome) filter.outcome = outcome
  if (text) filter.text = text
  return filter
}

/** A check mark on the accent colour: the tab of an inbox that asks for decisions. */
const FAVICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#1a56db"/>' +
  '<path d="M9 16.5l4.5 4.5L23 11.5" fill="none" stroke="#fff" stroke-width="3.5" stroke-linecap="round" stroke-linejoin="round"/></svg>'

/** Headers of every HTML response: a strict CSP (only nonce-carrying inline code runs). */
function htmlHeaders(c: Context, nonce?: string): void {
  const inline = nonce === undefined ? "'none'" : `'nonce-${nonce}'`
  c.header(
    "content-security-policy",
    [
      "default-src 'none'",
      `script-src ${inline}`,
      `style-src ${inline}`,
      "connect-src 'self'",
      // The favicon, nothing else: the pages have no images.
      "img-src 'self'",
      "form-action 'self'",
      "base-uri 'none'",
      "frame-ancestors 'none'",
    ].join("; "),
  )
  // For browsers that predate frame-ancestors: no framing, so no clickjacking of the buttons.
  c.header("x-frame-options", "DENY")
}
