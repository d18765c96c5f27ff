import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import { serve } from "@hono/node-server"
import { createClient } from "@toolnexus/core"
import { openStore } from "@toolnexus/durable"
import { createRelayProxy } from "./app.js"
import { configFromEnv } from "./config.js"

const config = configFromEnv()
const sqliteFile = /^sqlite:(?!:memory:)(.+)$/.exec(config.storeUrl)?.[1]
// SQLite creates the file but not its directory; "sqlite:///abs" is the URL form of "/abs".
if (sqliteFile) mkdirSync(dirname(sqliteFile.replace(/^\/\//, "")), { recursive: true })

const store = await openStore(config.storeUrl)
// One upstream attempt per caller request: the caller's SDK does the retrying (see upstream-error.ts).
// On the store: resumes go through its stored continue under durable's claim.
const client = createClient({ ...config.upstream, retries: 0, store })
const app = createRelayProxy({
  client,
  store,
  style: config.upstream.style,
  model: config.upstream.model,
  apiKeys: config.apiKeys,
  maxBodyBytes: config.maxBodyBytes,
  secrets: [config.upstream.apiKey ?? "", ...(config.apiKeys ?? [])],
  pendingTtlMs: config.pendingTtlMs,
})

// A postgres/redis URL may carry a password: show only what follows it.
const shownStore = config.storeUrl.replace(/\/\/[^/@]*@/, "//***@")
const server = serve({ fetch: app.fetch, port: config.port, hostname: config.host }, (info) => {
  process.stdout.write(
    `relay-proxy listening on http://${info.address}:${info.port}/v1 → ${config.upstream.style} ` +
      `${config.upstream.model} (store ${shownStore})\n`,
  )
})

function shutdown(): void {
  server.close(() => {
    store.close().finally(() => process.exit(0))
  })
}
process.once("SIGINT", shutdown)
process.once("SIGTERM", shutdown)
