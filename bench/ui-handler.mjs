// @toolnexus/ui: the chat handler's CPU per streamed turn against calling client.ask with
// onEvent directly and against a hand-written SSE endpoint on node:http (DESIGN §7: the fast
// path ≤ 1.2× the hand-written one; round 3's ≤ 1.1× of client.ask is retired), and the time from an approval POST to the
// first streamed chunk (memory and SQLite stores). The handler is measured in process (a Fetch
// Request in, the Response read) and served on node:http by toNodeListener, both its fast path
// (this package's handler: no Fetch objects) and its generic Fetch path (the same handler
// hidden behind a plain function); the HTTP client of those runs in ui-http-driver.mjs, a
// process of its own, so only the server's CPU is counted.
//
// The §7 row's two sides, the fast path and the hand-written floor, are timed interleaved: each
// round serves its turns of each in --slices slices, the two taking turns slice by slice, so a
// slow stretch of a loaded machine falls on both alike; their ratio is also given round by
// round (the two measured in the same stretch).
//
//   node --expose-gc ui-handler.mjs [--turns 400] [--rounds 5] [--slices 4] [--approvals 200] [--skip-approvals]
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { createClient, createToolkit, defineTool, pending } from "@toolnexus/core"
import { SqliteStore } from "@toolnexus/durable/sqlite"
import { toNodeListener } from "@toolnexus/ui"
import { createChatHandler } from "@toolnexus/ui/ai-sdk"
import { machineLine, median, printRows } from "./harness.mjs"
import { byHandListener, driveTurns, fakeModel, forkHelper, listen } from "./ui-variants.mjs"

const { values } = parseArgs({
  options: {
    turns: { type: "string", default: "400" },
    rounds: { type: "string", default: "5" },
    slices: { type: "string", default: "4" },
    approvals: { type: "string", default: "200" },
    "skip-approvals": { type: "boolean", default: false },
  },
})
const TURNS = Number(values.turns)
const ROUNDS = Number(values.rounds)
const SLICES = Number(values.slices)
if (!Number.isInteger(SLICES) || SLICES < 1 || SLICES > TURNS)
  throw new Error("--slices must be a positive integer, at most --turns")
const APPROVALS = Number(values.approvals)

const { child, baseUrl } = await fakeModel()
const driver = forkHelper("ui-http-driver.mjs")

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

/** This process's CPU (µs) while the driver posts `turns` turns to `url`. */
async function httpCpu(turns, url) {
  const start = process.cpuUsage()
  await driveTurns(driver, url, turns)
  const used = process.cpuUsage(start)
  return used.user + used.system
}
/** This process's CPU per turn while the driver posts `turns` turns to `url`. */
async function httpCpuOf(turns, url) {
  globalThis.gc?.()
  return (await httpCpu(turns, url)) / turns
}

/**
 * CPU per turn of each of `urls`, `turns` turns each, served interleaved: `slices` slices of
 * about `turns / slices` turns, the urls taking turns slice by slice, the order rotated by `round`.
 * One collection before (as a batch of its own gets); the slices' garbage is collected where
 * it falls, in proportion to the bytes each allocates, as in a batch of its own.
 */
async function interleavedCpuOf(turns, urls, slices, round) {
  globalThis.gc?.()
  const used = urls.map(() => 0)
  for (let s = 0; s < slices; s++) {
    const n = Math.floor(((s + 1) * turns) / slices) - Math.floor((s * turns) / slices)
    for (let k = 0; k < urls.length; k++) {
      const i = (round + s + k) % urls.length
      used[i] += await httpCpu(n, urls[i])
    }
  }
  return used.map((u) => u / turns)
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

console.log(
  `ui-handler: ${machineLine()}; ${TURNS} turns × ${ROUNDS} rounds (fast path and floor: ${SLICES} interleaved slices); approvals ${APPROVALS}`,
)

// CPU per streamed turn: the variants alternate which goes first in each round.
const client = clientOn()
const handler = createChatHandler({ client, toolkit })
const fast = await listen(toNodeListener(handler))
// A plain function hides the handler's logic: toNodeListener takes its Fetch path.
const generic = await listen(toNodeListener((req) => handler(req)))
const byHand = await listen(byHandListener(client, toolkit))
for (let i = 0; i < 200; i++) {
  await askTurn(client)
  await handlerTurn(handler)
}
await httpCpuOf(200, fast.url)
await httpCpuOf(200, generic.url)
await httpCpuOf(200, byHand.url)
const ask = []
const chat = []
const chatPrebuilt = []
const nodeFast = []
const nodeGeneric = []
const nodeByHand = []
const batches = [
  () => cpuOf(TURNS, () => askTurn(client)).then((v) => ask.push(v)),
  () => cpuOf(TURNS, () => handlerTurn(handler)).then((v) => chat.push(v)),
  () => cpuOf(TURNS, (req) => handlerTurnPrebuilt(handler, req), prebuilt).then((v) => chatPrebuilt.push(v)),
  () => httpCpuOf(TURNS, generic.url).then((v) => nodeGeneric.push(v)),
  // The §7 row's two sides in the same stretch of time, slice by slice (the Fetch path apart:
  // in the earlier order of six batches the floor always ran right after it).
  (r) =>
    interleavedCpuOf(TURNS, [fast.url, byHand.url], SLICES, r).then(([f, b]) => {
      nodeFast.push(f)
      nodeByHand.push(b)
    }),
]
for (let r = 0; r < ROUNDS; r++) {
  // Each round starts with another batch.
  for (let k = 0; k < batches.length; k++) await batches[(r + k) % batches.length](r)
}
const row = (name, values) => [name, median(values).toFixed(0), values.map((v) => v.toFixed(0)).join(" ")]
const ratio = (name, values) => [name, `${(median(values) / median(ask)).toFixed(3)}×`, "÷ client.ask"]
printRows(
  ["variant", "CPU µs/turn (median)", "rounds"],
  [
    row("client.ask + onEvent", ask),
    row("createChatHandler in process (Request built in the batch)", chat),
    row("createChatHandler in process (Request built before)", chatPrebuilt),
    row("node:http + toNodeListener, fast path (server CPU)", nodeFast),
    row("node:http + toNodeListener, Fetch path (server CPU)", nodeGeneric),
    row("node:http, hand-written SSE around client.ask (server CPU)", nodeByHand),
    ratio("ratio, in process, Request in the batch", chat),
    ratio("ratio, in process, Request built before", chatPrebuilt),
    ratio("ratio, node:http fast path", nodeFast),
    ratio("ratio, node:http Fetch path", nodeGeneric),
    ratio("ratio, node:http hand-written floor", nodeByHand),
    [
      "fast path / hand-written floor",
      `${(median(nodeFast) / median(nodeByHand)).toFixed(3)}×`,
      "the §7 row: target ≤ 1.2×",
    ],
    [
      "fast path / hand-written floor, round by round",
      `${median(nodeFast.map((f, i) => f / nodeByHand[i])).toFixed(3)}×`,
      nodeFast.map((f, i) => (f / nodeByHand[i]).toFixed(3)).join(" "),
    ],
  ],
)
fast.server.close()
generic.server.close()
byHand.server.close()
driver.disconnect()

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

if (values["skip-approvals"]) {
  child.disconnect()
  process.exit(0)
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
