import { openStore } from "@toolnexus/durable"
import { createApprovalsApp } from "../src/app.js"
import { createModel } from "../src/model.js"
import { listen } from "../src/server.js"
import { createTeam } from "../src/team.js"
import { createApprovalTools } from "../src/tools.js"

const store = await openStore("sqlite:./.data/approvals.db")
const model = createModel({ store }) // the client must keep its conversations in `store`
const app = createApprovalsApp({
  store,
  client: model.client,
  team: createTeam({ tools: createApprovalTools(), model: model.team }), // optional: POST /runs {"team": true}
  security: {
    users: { alice: process.env.ALICE_TOKEN ?? "" }, // ≥ 16 characters, or createApprovalsApp throws
    apiTokens: { ci: process.env.CI_TOKEN ?? "" },
  },
})
const server = await listen(app, { port: 3000, hostname: "127.0.0.1" }) // or app.fetch in any Hono host
console.log(`inbox on ${server.url}`)
