import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import { serve } from "@hono/node-server"
import { createClient } from "@toolnexus/core"
import { openStore } from "@toolnexus/durable"
import { createRelayProxy } from "./app.js"
import { forwardCallerParams } from "./caller-params.js"
import { ConfigurationError, configFromEnv } from "./config.js"
import { OFFLINE_MODEL, startOfflineModel } from "./offline-model.js"
import { withRequestLog } from "./request-log.js"

try {
  await main()
} catch (error) {
  // A bad setting is the user's to fix: one line saying what, no stack trace.
  const known = error instanceof ConfigurationError || (error as { code?: unknown })?.code !== undefined
  process.stderr.write(
    known ? `${(error as Error).message}\n` : `relay-proxy: ${String((error as Error)?.stack ?? error)}\n`,
  )
  process.exit(1)
}

async function main(): Promise<void> {
  const config = configFromEnv()
  if (config.warning) process.stderr.write(`relay-proxy: warning: ${config.warning}\n`)
  const sqliteFile = /^sqlite:(?!:memory:)(.+)$/.exec(config.storeUrl)?.[1]
  // SQLite creates the file but not its directory; "sqlite:///abs" is the URL form of "/abs".
  if (sqliteFile) mkdirSync(dirname(sqliteFile.replace(/^\/\//, "")), { recursive: true })

  const offline = config.upstream === "offline" ? await startOfflineModel() : undefined
  const upstream =
    config.upstream === "offline"
      ? { baseUrl: `${offline?.url}/v1`, style: "openai" as const, model: OFFLINE_MODEL }
      : config.upstream
  const store = await openStore(config.storeUrl)
  // One upstream attempt per caller request: the caller's SDK does the retrying (see upstream-error.ts).
  // On the store: resumes go through its stored continue under durable's claim.
  // The caller's temperature and tool_choice reach the upstream request in its own form.
  const client = createClient({
    ...upstream,
    retries: 0,
    store,
    bodyTransform: forwardCallerParams(upstream.style),
  })
  const app = createRelayProxy({
    client,
    store,
    style: upstream.style,
    model: upstream.model,
    apiKeys: config.apiKeys,
    maxBodyBytes: config.maxBodyBytes,
    secrets: ["apiKey" in upstream ? (upstream.apiKey ?? "") : "", ...(config.apiKeys ?? [])],
    pendingTtlMs: config.pendingTtlMs,
    // One line each, no stack: the request log already names the request and its status.
    logger: {
      info: (message) => process.stdout.write(`[info] ${message}\n`),
      error: (message, data) =>
        process.stderr.write(`[error] ${message}${data?.code ? ` (${data.code})` : ""}\n`),
    },
  })

  // A postgres/redis URL may carry a password: show only what follows it.
  const shownStore = config.storeUrl.replace(/\/\/[^/@]*@/, "//***@")
  const fetch = withRequestLog(app.fetch, { keyNames: config.keyNames })
  const server = serve({ fetch, port: config.port, hostname: config.host }, (info) => {
    const target = offline
      ? "the scripted offline model (set UPSTREAM_BASE_URL for a real one)"
      : upstream.model
    process.stdout.write(
      `relay-proxy listening on http://${info.address}:${info.port}/v1 → ${upstream.style} ${target} (store ${shownStore})\n`,
    )
  })
  server.once("error", (error: NodeJS.ErrnoException) => {
    const why =
      error.code === "EADDRINUSE"
        ? `port ${config.port} is already in use: set PORT to a free one, or 0 for any`
        : `cannot listen on ${config.host}:${config.port}: ${error.message}`
    process.stderr.write(`relay-proxy: ${why}\n`)
    process.exit(1)
  })

  const shutdown = () => {
    server.close(() => {
      Promise.all([store.close(), offline?.close()]).finally(() => process.exit(0))
    })
  }
  process.once("SIGINT", shutdown)
  process.once("SIGTERM", shutdown)
}
