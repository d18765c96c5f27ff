// The approvals inbox over an engine: the same page and JSON API, its requests and runs read
// from the engine through an EngineConnection; its own store keeps only history and sessions.
import { serve } from "@hono/node-server"
import { openStore } from "@toolnexus/durable"
import { createApprovalsApp } from "../../approvals/src/app.js"
import { createEngineInboxStore } from "../../approvals/src/engine-inbox-store.js"
import { createModel } from "../../approvals/src/model.js"
import { AGENT, connectEngine, engineSettings } from "./engine.js"

const settings = engineSettings()
const port = Number(process.env.PORT ?? 3000)
const token = process.env.APPROVALS_TOKEN ?? "engine-approvals-demo-token"
const store = await openStore(process.env.DATABASE_URL ?? "sqlite::memory:")
const { client } = createModel({ store })
const engine = connectEngine(settings)
const app = createApprovalsApp({
  store,
  client,
  security: { users: { demo: token }, apiTokens: { demo: token } },
  inbox: createEngineInboxStore({ engine, agent: AGENT }),
})
serve({ fetch: app.fetch, port, hostname: "127.0.0.1" })
process.stdout.write(
  `approvals inbox on http://127.0.0.1:${port} (engine: ${settings.engine}; sign in with ${token})\n`,
)
