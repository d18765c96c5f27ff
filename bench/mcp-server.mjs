// §7's MCP server row: CPU per tool call answered through one `input_required` round
// (call ⇒ input_required with a sealed requestState ⇒ retry with the approval ⇒ result), our
// `createMcpServer` over a store host on the memory store against the official v2 server
// (`@modelcontextprotocol/server`, the same version `@toolnexus/mcp` runs on) whose handler keeps
// nothing: it asks, and on the retry reads its own HMAC-signed state back (the SDK's
// `createRequestStateCodec`). Both are driven in this process through their `fetch` handlers with
// the same raw 2026-07-28 requests, so no HTTP or client code is billed to either. Alternating
// batches, fresh server each batch; median of the per-batch ratios.
//
//   node --expose-gc mcp-server.mjs [--calls 400] [--batches 7] [--only official|toolnexus]
import { createRequire } from "node:module"
import { pathToFileURL } from "node:url"
import { defineTool } from "@toolnexus/core"
import { createMemoryStore, createStoreHost } from "@toolnexus/durable"

// The official server and ours resolve from @toolnexus/mcp's own dependencies, so this folder
// needs no second copy of the SDK in its manifest.
const fromMcp = createRequire(new URL("../packages/mcp/package.json", import.meta.url))
const sdk = await import(pathToFileURL(fromMcp.resolve("@modelcontextprotocol/server")).href)
const ours = await import(new URL("../packages/mcp/dist/server/index.js", import.meta.url).href)

const arg = (name, fallback) => {
  const at = process.argv.indexOf(`--${name}`)
  return at === -1 ? fallback : Number(process.argv[at + 1])
}
const CALLS = arg("calls", 400)
const BATCHES = arg("batches", 7)
const KEY = "k".repeat(32)
const ONLY = process.argv.includes("--only") ? process.argv[process.argv.indexOf("--only") + 1] : undefined

const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "bench", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": { elicitation: { form: {} } },
}
let nextId = 1
function post(params) {
  return new Request("http://127.0.0.1/mcp", {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/call",
      "mcp-name": "pay",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: nextId++,
      method: "tools/call",
      params: { ...params, _meta: META },
    }),
  })
}
async function rpc(fetch, params) {
  const res = await fetch(post(params))
  const text = await res.text()
  const json = text.startsWith("{") ? text : /^data: (.*)$/m.exec(text)?.[1]
  const reply = JSON.parse(json ?? "{}")
  if (reply.error) throw new Error(`rpc error: ${JSON.stringify(reply.error)}`)
  return reply.result
}

/** One call answered through one input_required round; checks what came back. */
async function round(fetch, amount) {
  const first = await rpc(fetch, { name: "pay", arguments: { amount } })
  if (first.resultType !== "input_required") throw new Error(`no input_required: ${JSON.stringify(first)}`)
  const [key] = Object.keys(first.inputRequests)
  const done = await rpc(fetch, {
    name: "pay",
    arguments: { amount },
    requestState: first.requestState,
    inputResponses: { [key]: { action: "accept", content: { approved: true } } },
  })
  const text = done.content?.[0]?.text
  if (text !== `paid ${amount}`) throw new Error(`unexpected result: ${JSON.stringify(done)}`)
}

const PAY_SCHEMA = { type: "object", properties: { amount: { type: "number" } }, required: ["amount"] }

async function official() {
  const codec = sdk.createRequestStateCodec({ key: KEY })
  const factory = () => {
    const server = new sdk.McpServer(
      { name: "bench", version: "1.0.0" },
      { requestState: { verify: codec.verify } },
    )
    server.registerTool(
      "pay",
      { description: "Pays, with approval", inputSchema: sdk.fromJsonSchema(PAY_SCHEMA) },
      async (args, ctx) => {
        const state = ctx.mcpReq.requestState?.()
        const response = ctx.mcpReq.inputResponses?.approve
        if (state === undefined || response === undefined)
          return sdk.inputRequired({
            inputRequests: {
              approve: {
                method: "elicitation/create",
                params: {
                  mode: "form",
                  message: `Pay ${args.amount}?`,
                  requestedSchema: {
                    type: "object",
                    properties: { approved: { type: "boolean" }, reason: { type: "string" } },
                    required: ["approved"],
                  },
                },
              },
            },
            requestState: await codec.mint({ amount: args.amount }),
          })
        if (response.content?.approved !== true) return { content: [{ type: "text", text: "declined" }] }
        return { content: [{ type: "text", text: `paid ${state.amount}` }] }
      },
    )
    return server
  }
  const handler = sdk.createMcpHandler(factory, { legacy: "reject" })
  return { fetch: (req) => handler.fetch(req), close: () => handler.close() }
}

async function toolnexus() {
  const pay = defineTool({
    name: "pay",
    description: "Pays, with approval",
    inputSchema: PAY_SCHEMA,
    needsApproval: true,
    run: ({ amount }) => `paid ${amount}`,
  })
  const store = createMemoryStore()
  const host = createStoreHost({
    store,
    agents: await ours.hostedToolAgents([pay], { store }),
    sweepEveryMs: false,
  })
  const server = ours.createMcpServer({
    host,
    tools: [pay],
    name: "bench",
    version: "1.0.0",
    stateKeys: [KEY],
  })
  return {
    fetch: (req) => server.fetch(req),
    close: async () => {
      await server.close()
      await host.close()
    },
  }
}

/** CPU µs per round over `CALLS` rounds on a fresh server (after a warm-up of a tenth). */
async function batch(make) {
  const server = await make()
  try {
    for (let i = 0; i < Math.max(20, CALLS / 10); i++) await round(server.fetch, i)
    globalThis.gc?.()
    const start = process.cpuUsage()
    for (let i = 0; i < CALLS; i++) await round(server.fetch, i)
    const used = process.cpuUsage(start)
    return (used.user + used.system) / CALLS
  } finally {
    await server.close()
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]
}
const rows = { official: [], toolnexus: [], ratio: [] }
for (let b = 0; b < BATCHES; b++) {
  // Alternate which goes first, so a drift in machine load hits both alike.
  let pair = b % 2 === 0 ? [official, toolnexus] : [toolnexus, official]
  // --only official|toolnexus: one side alone (for a CPU profile of it).
  if (ONLY !== undefined) pair = pair.filter((make) => make.name === ONLY)
  const got = {}
  for (const make of pair) got[make.name] = await batch(make)
  rows.official.push(got.official)
  rows.toolnexus.push(got.toolnexus)
  if (ONLY === undefined) rows.ratio.push(got.toolnexus / got.official)
}
const fmt = (x) => x.toFixed(0)
console.log(
  `MCP server, one input_required round per call (${CALLS} calls × ${BATCHES} batches, Node ${process.version})`,
)
if (ONLY !== "toolnexus")
  console.log(`official v2 server, in-memory handler: ${fmt(median(rows.official))} µs CPU per call`)
if (ONLY !== "official")
  console.log(`createMcpServer over createStoreHost(memory): ${fmt(median(rows.toolnexus))} µs CPU per call`)
if (ONLY === undefined)
  console.log(
    `ratio (median of per-batch ratios): ${median(rows.ratio).toFixed(2)}× (batches: ${rows.ratio.map((r) => r.toFixed(2)).join(", ")})`,
  )
