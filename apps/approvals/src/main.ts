import { randomBytes } from "node:crypto"
import { mkdirSync } from "node:fs"
import { hostname as machineName } from "node:os"
import { dirname } from "node:path"
import { parseArgs } from "node:util"
import { createStoreHost, openStore } from "@toolnexus/durable"
import { createApprovalsApp } from "./app.js"
import { friendlyError } from "./friendly-error.js"
import { AGENT, approvalsAgents } from "./host-inbox.js"
import { createModel } from "./model.js"
import { type NotifyOptions, createWebhookOutbox } from "./notifier.js"
import type { SecurityOptions } from "./security/access.js"
import { LOOPBACK_HOSTS } from "./security/request-checks.js"
import { listen } from "./server.js"
import { createTeam } from "./team.js"
import { createApprovalToolkit, createApprovalTools } from "./tools.js"

const DEFAULT_DATABASE_URL = "sqlite:./.data/approvals.db"
const SWEEP_EVERY_MS = 60_000
const say = (line: string) => process.stdout.write(`${line}\n`)
/** Ends the process with one line saying what is wrong and how to fix it. */
const fail = (line: string, code = 1): never => {
  process.stderr.write(`approvals: ${line}\n`)
  process.exit(code)
}

const { values: args } = parseArgs({
  options: {
    port: { type: "string" },
    host: { type: "string" },
    "database-url": { type: "string" },
  },
})
const env = process.env
const port = Number(args.port ?? env.PORT ?? 3000)
const hostname = args.host ?? env.HOST ?? "127.0.0.1"
const databaseUrl = args["database-url"] ?? env.DATABASE_URL ?? DEFAULT_DATABASE_URL

if (!Number.isInteger(port) || port < 0 || port > 65535) {
  fail(`PORT must be an integer from 0 to 65535, got ${args.port ?? env.PORT}`, 2)
}

const { security, generatedToken } = securityFromEnv()
const notify = notifyFromEnv()

const sqliteFile = sqlitePathOf(databaseUrl)
if (sqliteFile !== undefined) mkdirSync(dirname(sqliteFile), { recursive: true })

const store = await openStore(databaseUrl).catch((error: unknown) =>
  fail(`cannot open ${redact(databaseUrl)}: ${friendlyError(error)}`),
)
try {
  await probe()
} catch (error) {
  await store.close().catch(() => {})
  fail(`cannot open ${redact(databaseUrl)}: ${friendlyError(error)}`)
}

const model = createModel({ store })
const { client } = model
const toolkit = await createApprovalToolkit()
const team = createTeam({ tools: createApprovalTools(), model: model.team })
const warnBeforeMs = warnBeforeFromEnv()
// One outbox per process: the app sends each request's first notification, the sweep below
// retries failed ones and those a crash left unsent, and posts the expiry warnings.
const outbox = notify
  ? createWebhookOutbox(store, notify, {
      ...(warnBeforeMs !== undefined ? { warnBeforeMs } : {}),
      onError: (error) => say(`[notify] ${friendlyError(error)}`),
    })
  : undefined
// Refusals of answers are someone's mistake, not the service's: a line, no stack.
const logger = {
  info: (message: string) => say(`[info] ${message}`),
  error: (message: string, data?: Record<string, unknown>) =>
    process.stderr.write(`[error] ${message}${data?.code ? ` (${data.code})` : ""}\n`),
}
// A worker that died mid-resume leaves its claim to expire; the host's sweep (every minute)
// completes that run with the stored answer on any instance, so a decision is never lost.
const host = createStoreHost({
  store,
  agents: approvalsAgents({ client, toolkit, team }),
  sweepEveryMs: SWEEP_EVERY_MS,
  // Runs parked before the app ran on a host (no run record) are the plain agent's.
  adopt: () => AGENT,
  logger,
})
let server: Awaited<ReturnType<typeof listen>>
try {
  const app = createApprovalsApp({
    store,
    host,
    team,
    security,
    logger,
    ...(notify ? { notify } : {}),
    ...(outbox ? { outbox } : {}),
    modelUrl: model.url,
    instanceId: `${machineName()}:${port}`,
  })
  server = await listen(app, { port, hostname })
} catch (error) {
  await store.close().catch(() => {})
  fail(friendlyError(Object.assign(error as object, { port })))
}

const wildcard = hostname === "0.0.0.0" || hostname === "::"
const shown = wildcard ? `http://localhost:${server!.port}` : server!.url
const signIn = generatedToken
  ? `\n  sign in with the token ${generatedToken} (generated; set APPROVALS_TOKEN to keep one)`
  : "\n  sign in with a configured token"
// One write, so a reader of the log never sees the URL without the rest.
say(
  `approvals service listening on ${shown}\n  store: ${redact(databaseUrl)}\n  model: ${model.label}${signIn}` +
    `\n  webhook: ${security.webhookSecret ? "signed with APPROVALS_WEBHOOK_SECRET" : "off (set APPROVALS_WEBHOOK_SECRET)"}` +
    (notify ? `\n  notifications: ${notify.url}` : "") +
    // Reached under any other name (a public host name too), the service answers 403.
    `\n  answers to hosts: ${(security.allowedHosts ?? LOOPBACK_HOSTS).join(", ")} (APPROVALS_ALLOWED_HOSTS)`,
)

// The host sweeps claims itself (sweepEveryMs); the notification outbox is swept beside it:
// failed posts are retried, and those a crash left unsent are sent.
async function sweepOutbox(): Promise<void> {
  await outbox?.sweep()
}
const sweeping = setInterval(() => void sweepOutbox().catch(() => {}), SWEEP_EVERY_MS)
sweeping.unref()
void sweepOutbox().catch(() => {})
void host.sweep().catch((error: unknown) => logger.error(`sweep failed: ${friendlyError(error, model.url)}`))

let stopping = false
async function stop(signal: string): Promise<void> {
  if (stopping) return
  stopping = true
  say(`approvals: ${signal}, shutting down`)
  await server.close()
  await host.close()
  await toolkit.close()
  await store.close()
}
process.once("SIGINT", () => void stop("SIGINT"))
process.once("SIGTERM", () => void stop("SIGTERM"))

/**
 * The access settings from the environment. Without `APPROVALS_TOKEN` or `APPROVALS_USERS`
 * a token is generated for this run and printed, so the service is never open.
 */
function securityFromEnv(): { security: SecurityOptions; generatedToken?: string } {
  const users = namedTokens("APPROVALS_USERS")
  let generatedToken: string | undefined
  if (env.APPROVALS_TOKEN) users.admin = env.APPROVALS_TOKEN
  if (Object.keys(users).length === 0) {
    generatedToken = randomBytes(18).toString("base64url")
    users.admin = generatedToken
  }
  const security: SecurityOptions = { users, apiTokens: namedTokens("APPROVALS_API_TOKENS") }
  if (env.APPROVALS_WEBHOOK_SECRET) security.webhookSecret = env.APPROVALS_WEBHOOK_SECRET
  if (env.APPROVALS_SESSION_KEY) security.sessionKey = env.APPROVALS_SESSION_KEY
  if (env.APPROVALS_TRUST_PROXY === "1") security.trustProxy = true
  const hosts = (env.APPROVALS_ALLOWED_HOSTS ?? "")
    .split(",")
    .map((h) => h.trim())
    .filter(Boolean)
  if (hosts.length > 0) security.allowedHosts = hosts
  // Creating the app checks the tokens' length; say so here, in one line, before anything starts.
  for (const [name, token] of Object.entries({ ...users, ...security.apiTokens })) {
    if (token.length < 16)
      fail(`the token of "${name}" is shorter than 16 characters; use a long random one`, 2)
  }
  return generatedToken ? { security, generatedToken } : { security }
}

/** Signed notifications to `APPROVALS_NOTIFY_URL`, with their own secret or the webhook's. */
function notifyFromEnv(): NotifyOptions | undefined {
  const url = env.APPROVALS_NOTIFY_URL
  if (!url) return undefined
  const secret = env.APPROVALS_NOTIFY_SECRET ?? env.APPROVALS_WEBHOOK_SECRET
  if (!secret)
    fail("APPROVALS_NOTIFY_URL needs APPROVALS_NOTIFY_SECRET (or APPROVALS_WEBHOOK_SECRET) to sign with", 2)
  if (!/^https?:\/\//.test(url)) fail(`APPROVALS_NOTIFY_URL must be an http(s) URL, got ${url}`, 2)
  return { url, secret: secret as string }
}

/** `APPROVALS_WARN_BEFORE_MS`: post `request.expiring` this long before a deadline. */
function warnBeforeFromEnv(): number | undefined {
  const raw = env.APPROVALS_WARN_BEFORE_MS
  if (raw === undefined || raw === "") return undefined
  const ms = Number(raw)
  if (!Number.isInteger(ms) || ms <= 0)
    fail(`APPROVALS_WARN_BEFORE_MS must be a positive integer (ms), got ${raw}`, 2)
  if (!notify) fail("APPROVALS_WARN_BEFORE_MS needs APPROVALS_NOTIFY_URL (where the warning is posted)", 2)
  return ms
}

/** `name:token,name:token` from an environment variable. */
function namedTokens(variable: string): Record<string, string> {
  const tokens: Record<string, string> = {}
  for (const pair of (env[variable] ?? "")
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean)) {
    const colon = pair.indexOf(":")
    if (colon <= 0) fail(`${variable} must look like "name:token,name:token"`, 2)
    tokens[pair.slice(0, colon)] = pair.slice(colon + 1)
  }
  return tokens
}

/**
 * Stores connect lazily; this fails at start, not on the first click, when the database is
 * unreachable. A few tries, because a failed setup is retried on the next use: two instances
 * starting at once on a fresh PostgreSQL database can make one of them fail its first try.
 */
async function probe(): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await store.listPending({ limit: 1 })
      return
    } catch (error) {
      if (attempt === 3) throw error
      await new Promise((resolve) => setTimeout(resolve, 250 * attempt))
    }
  }
}

/** The file a `sqlite:` URL names, or `undefined` for other stores and `sqlite::memory:`. */
function sqlitePathOf(url: string): string | undefined {
  if (!url.startsWith("sqlite:")) return undefined
  const rest = url.slice("sqlite:".length)
  if (rest === ":memory:" || rest === "") return undefined
  return rest.startsWith("///") ? rest.slice(2) : rest
}

/** Keeps a database password out of the log. */
function redact(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*):[^@/]*@/i, "$1:***@")
}
