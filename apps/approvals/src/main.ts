import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import { parseArgs } from "node:util"
import { openStore, sweepExpiredClaims } from "@toolnexus/durable"
import { createApprovalsApp } from "./app.js"
import { createModel } from "./model.js"
import { listen } from "./server.js"
import { createApprovalToolkit } from "./tools.js"

const DEFAULT_DATABASE_URL = "sqlite:./.data/approvals.db"
const SWEEP_EVERY_MS = 60_000
const say = (line: string) => process.stdout.write(`${line}\n`)

const { values: args } = parseArgs({
  options: {
    port: { type: "string" },
    host: { type: "string" },
    "database-url": { type: "string" },
  },
})
const env = process.env
const port = Number(args.port ?? env.PORT ?? 3000)
// Loopback by default: the service has no authentication of its own.
const hostname = args.host ?? env.HOST ?? "127.0.0.1"
const databaseUrl = args["database-url"] ?? env.DATABASE_URL ?? DEFAULT_DATABASE_URL

if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`approvals: PORT must be an integer from 0 to 65535, got ${args.port ?? env.PORT}\n`)
  process.exit(2)
}

const sqliteFile = sqlitePathOf(databaseUrl)
if (sqliteFile !== undefined) mkdirSync(dirname(sqliteFile), { recursive: true })

const store = await openStore(databaseUrl)
try {
  await probe()
} catch (error) {
  process.stderr.write(`approvals: cannot open ${redact(databaseUrl)}: ${(error as Error).message}\n`)
  await store.close().catch(() => {})
  process.exit(1)
}

const { client, label } = createModel({ store })
const toolkit = await createApprovalToolkit()
const app = createApprovalsApp({ store, client, toolkit })
const server = await listen(app, { port, hostname })

const wildcard = hostname === "0.0.0.0" || hostname === "::"
const shown = wildcard ? `http://localhost:${server.port}` : server.url
// One write, so a reader of the log never sees the URL without the rest.
say(`approvals service listening on ${shown}\n  store: ${redact(databaseUrl)}\n  model: ${label}`)

// A worker that died mid-resume leaves its claim to expire; any instance completes that run
// with the stored answer, so a decision is never lost.
async function sweep(): Promise<void> {
  const { completed, failed } = await sweepExpiredClaims(store, { client, toolkit })
  for (const done of completed) {
    say(`[sweep] completed ${done.kind === "runtime" ? done.key : done.id}: ${done.result.status}`)
  }
  for (const { conversationId, error } of failed) {
    say(`[sweep] run ${conversationId} failed again: ${(error as Error).message}`)
  }
}
const sweeping = setInterval(() => void sweep().catch(() => {}), SWEEP_EVERY_MS)
sweeping.unref()
void sweep().catch(() => {})

let stopping = false
async function stop(signal: string): Promise<void> {
  if (stopping) return
  stopping = true
  say(`approvals: ${signal}, shutting down`)
  clearInterval(sweeping)
  await server.close()
  await toolkit.close()
  await store.close()
}
process.once("SIGINT", () => void stop("SIGINT"))
process.once("SIGTERM", () => void stop("SIGTERM"))

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
