// The approvals inbox over an engine: the same page and JSON API, its requests and runs read
// from the engine through an EngineConnection; its own store keeps only history and sessions.
import { openStore } from "@toolnexus/durable"
import { createApprovalsApp } from "../../approvals/src/app.js"
import { listen } from "../../approvals/src/server.js"
import { AGENT, connectEngine, engineSettings } from "./engine.js"

const settings = engineSettings()
const port = Number(process.env.PORT ?? 3000)
const token = process.env.APPROVALS_TOKEN ?? "engine-approvals-demo-token"
const store = await openStore(process.env.DATABASE_URL ?? "sqlite::memory:")
const engine = connectEngine(settings)
const app = createApprovalsApp({
  store,
  security: { users: { demo: token }, apiTokens: { demo: token } },
  host: engine,
  agent: AGENT,
})
// The inbox's own server (@hono/node-server): a malformed Host is a 400 there.
const server = await listen(app, { port, hostname: "127.0.0.1" })
process.stdout.write(`approvals inbox on ${server.url} (engine: ${settings.engine}; sign in with ${token})\n`)
