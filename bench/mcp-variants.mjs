// The two servers of §7's MCP row and one call through an `input_required` round, shared by
// mcp-server.mjs (timed) and mcp-server-instructions.mjs (callgrind): the official v2 server
// with an in-memory handler (`official`) and `createMcpServer` over a store host on the memory
// store (`toolnexus`), each `{ fetch, close }`, driven with the same raw 2026-07-28 requests.
// `toolnexusBare` is `createMcpServer` over a bare in-memory host (no store, no runtime): the
// MCP layer's own cost, so that toolnexus − toolnexusBare is the store host's and the run's.
import { createRequire } from "node:module"
import { pathToFileURL } from "node:url"
import { defineTool } from "@toolnexus/core"
import { createMemoryStore, createStoreHost } from "@toolnexus/durable"

// The official server and ours resolve from @toolnexus/mcp's own dependencies, so this folder
// needs no second copy of the SDK in its manifest.
const fromMcp = createRequire(new URL("../packages/mcp/package.json", import.meta.url))
const sdk = await import(pathToFileURL(fromMcp.resolve("@modelcontextprotocol/server")).href)
const ours = await import(new URL("../packages/mcp/dist/server/index.js", import.meta.url).href)

const KEY = "k".repeat(32)

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
export async function round(fetch, amount) {
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

export async function official() {
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

/** Our `pay` tool: the official variant's tool, approval first. */
function payTool() {
  return defineTool({
    name: "pay",
    description: "Pays, with approval",
    inputSchema: PAY_SCHEMA,
    needsApproval: true,
    run: ({ amount }) => `paid ${amount}`,
  })
}

export async function toolnexus() {
  const pay = payTool()
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

/**
 * A bare in-memory RunHost serving tool-pay the way a store host does (the run parks on one
 * approval, `result` settles at the park, the resumed run's `done` event comes after its end),
 * with nothing stored or run: what `createMcpServer` costs on its own.
 */
function bareHost() {
  const runs = new Map()
  const entryOf = (runId, run) => ({ conversationId: runId, state: "open", since: 0, request: run.request })
  return {
    async start(_agent, runId, input) {
      const { amount } = JSON.parse(input)
      const request = {
        id: `${runId}.approve`,
        kind: "approval",
        prompt: `Pay ${amount}?`,
        data: { tool: "pay" },
      }
      runs.set(runId, { amount, request, status: "pending" })
      return { runId, started: true }
    },
    async result(runId) {
      const run = runs.get(runId)
      return { status: "pending", text: "", pending: run.request, toolCalls: [] }
    },
    async findRequest(id) {
      const runId = id.slice(0, id.lastIndexOf("."))
      const run = runs.get(runId)
      return run?.status === "pending" ? entryOf(runId, run) : undefined
    },
    async listPending({ runId } = {}) {
      const run = runs.get(runId)
      return run?.status === "pending" ? [entryOf(runId, run)] : []
    },
    async deliverAnswer(answer, opts = {}) {
      const runId = answer.id.slice(0, answer.id.lastIndexOf("."))
      const run = runs.get(runId)
      runs.delete(runId)
      const text = answer.ok ? `paid ${run.amount}` : "declined"
      opts.onEvent?.({ type: "done", result: { status: "done", text, toolCalls: [{ isError: !answer.ok }] } })
    },
    async getDecision() {
      return undefined
    },
    async close() {},
  }
}

export async function toolnexusBare() {
  const pay = payTool()
  const server = ours.createMcpServer({
    host: bareHost(),
    tools: [pay],
    name: "bench",
    version: "1.0.0",
    stateKeys: [KEY],
  })
  return { fetch: (req) => server.fetch(req), close: () => server.close() }
}
