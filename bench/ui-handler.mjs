// @toolnexus/ui: the chat handler's CPU per streamed turn against calling client.ask with
// onEvent directly (DESIGN §13, target ≤ 1.1×), and the time from an approval POST to the
// first streamed chunk (memory and SQLite stores).
//
//   node --expose-gc ui-handler.mjs [--turns 400] [--rounds 5] [--approvals 200]
import { fork } from "node:child_process"
import { once } from "node:events"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { createClient, createToolkit, defineTool, pending } from "@toolnexus/core"
import { SqliteStore } from "@toolnexus/durable/sqlite"
import { createChatHandler } from "@toolnexus/ui/ai-sdk"
import { machineLine, median, printRows } from "./harness.mjs"

const { values } = parseArgs({
  options: {
    turns: { type: "string", default: "400" },
    rounds: { type: "string", default: "5" },
    approvals: { type: "string", default: "200" },
  },
})
const TURNS = Number(values.turns)
const ROUNDS = Number(values.rounds)
const APPROVALS = Number(values.approvals)

const child = fork(new URL("./ui-fake-server.mjs", import.meta.url), [], {
  stdio: ["ignore", "inherit", "inherit", "ipc"],
  execArgv: [],
})
const [ready] = await once(child, "message")
const baseUrl = `${ready.url}/v1`

const refund = defineTool({
  name: "refund",
  description: "Refunds an order",
  inputSchema: { type: "object", properties: { orderId: { type: "string" }, amount: { type: "number" } } },
  run: ({ orderId }, ctx) =>
    ctx?.answer?.ok ? `refunded ${orderId}` : pending({ kind: "approval", prompt: "ok?" }),
})
const toolkit = await createToolkit({ extraTools: [refund] })
const clientOn = (store) =>
  createClient({ baseUrl, style: "openai", model: "bench", apiKey: "sk-bench", ...(store ? { store } : {}) })

const user = (text) => ({ id: "u1", role: "user", parts: [{ type: "text", text }] })
const post = (body) =>
  new Request("http://127.0.0.1/api/chat", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  })

let seq = 0
/** One streamed turn through client.ask with an onEvent listener (a fresh conversation each). */
async function askTurn(client) {
  let events = 0
  await client.ask("hi", { id: `ask-${++seq}`, toolkit, onEvent: () => events++ })
  if (events === 0) throw new Error("no events")
}
/** The same turn through the chat handler, its whole SSE body read. */
async function handlerTurn(handler) {
  const res = await handler(post({ id: `chat-${++seq}`, messages: [user("hi")], trigger: "submit-message" }))
  const text = await res.text()
  if (!text.endsWith("data: [DONE]\n\n")) throw new Error(`unexpected body: ${text.slice(0, 200)}`)
}

/** The same, with the Request built before the batch (the framework's object, not the handler's work). */
async function handlerTurnPrebuilt(handler, req) {
  const text = await (await handler(req)).text()
  if (!text.endsWith("data: [DONE]\n\n")) throw new Error(`unexpected body: ${text.slice(0, 200)}`)
}

async function cpuOf(turns, task, prepare = () => undefined) {
  const inputs = Array.from({ length: turns }, prepare)
  globalThis.gc?.()
  const start = process.cpuUsage()
  for (let i = 0; i < turns; i++) await task(inputs[i])
  const used = process.cpuUsage(start)
  return (used.user + used.system) / turns // µs per turn
}
const prebuilt = () => post({ id: `chat-${++seq}`, messages: [user("hi")], trigger: "submit-message" })

console.log(`ui-handler: ${machineLine()}; ${TURNS} turns × ${ROUNDS} rounds; approvals ${APPROVALS}`)

// CPU per streamed turn: the two variants alternate which goes first in each round.
const client = clientOn()
const handler = createChatHandler({ client, toolkit })
for (let i = 0; i < 200; i++) {
  await askTurn(client)
  await handlerTurn(handler)
}
const ask = []
const chat = []
const chatPrebuilt = []
const batches = [
  () => cpuOf(TURNS, () => askTurn(client)).then((v) => ask.push(v)),
  () => cpuOf(TURNS, () => handlerTurn(handler)).then((v) => chat.push(v)),
  () => cpuOf(TURNS, (req) => handlerTurnPrebuilt(handler, req), prebuilt).then((v) => chatPrebuilt.push(v)),
]
for (let r = 0; r < ROUNDS; r++) {
  // Each round starts with another variant.
  for (let k = 0; k < batches.length; k++) await batches[(r + k) % batches.length]()
}
printRows(
  ["variant", "CPU µs/turn (median)", "rounds"],
  [
    ["client.ask + onEvent", median(ask).toFixed(0), ask.map((v) => v.toFixed(0)).join(" ")],
    [
      "createChatHandler (Request built in the batch)",
      median(chat).toFixed(0),
      chat.map((v) => v.toFixed(0)).join(" "),
    ],
    [
      "createChatHandler (Request built before)",
      median(chatPrebuilt).toFixed(0),
      chatPrebuilt.map((v) => v.toFixed(0)).join(" "),
    ],
    ["ratio, Request in the batch", `${(median(chat) / median(ask)).toFixed(3)}×`, "target ≤ 1.1×"],
    ["ratio, Request built before", `${(median(chatPrebuilt) / median(ask)).toFixed(3)}×`, "target ≤ 1.1×"],
  ],
)

// Approval POST → first chunk: park N approvals, then answer each and time the first body read.
async function approvalLatency(store) {
  const c = clientOn(store)
  const h = createChatHandler({ client: c, toolkit, ...(store ? { store } : {}) })
  const parked = []
  for (let i = 0; i < APPROVALS + 20; i++) {
    const id = `appr-${++seq}`
    const res = await h(post({ id, messages: [user("refund please")], trigger: "submit-message" }))
    const body = await res.text()
    const approvalId = /"approvalId":"([^"]+)"/.exec(body)?.[1]
    if (!approvalId) throw new Error(`no approval card: ${body.slice(0, 300)}`)
    parked.push({ id, approvalId })
  }
  const ms = []
  for (const [i, { id, approvalId }] of parked.entries()) {
    const t0 = performance.now()
    const res = await h(
      post({ id, messages: [], trigger: "submit-message", answer: { id: approvalId, ok: true } }),
    )
    const reader = res.body.getReader()
    await reader.read()
    const t1 = performance.now()
    while (!(await reader.read()).done) {}
    if (i >= 20) ms.push(t1 - t0) // the first 20 warm up
  }
  ms.sort((a, b) => a - b)
  return { median: median(ms), p95: ms[Math.floor(ms.length * 0.95)] }
}

const dir = mkdtempSync(join(tmpdir(), "tnx-bench-ui-"))
const sqlite = new SqliteStore({ path: join(dir, "bench.db") })
const memory = await approvalLatency(undefined)
const durable = await approvalLatency(sqlite)
printRows(
  ["store", "approval POST → first chunk, median ms", "p95 ms"],
  [
    ["memory (continueRun, in-process claim)", memory.median.toFixed(2), memory.p95.toFixed(2)],
    ["SQLite file (deliverAnswer, durable claim)", durable.median.toFixed(2), durable.p95.toFixed(2)],
  ],
)
await sqlite.close()
rmSync(dir, { recursive: true, force: true })
child.disconnect()
