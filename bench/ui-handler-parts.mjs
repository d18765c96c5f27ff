// Where the chat handler's CPU per streamed turn goes (ui-handler.mjs measures the total):
// the same client.ask turn with one piece of the handler's work added at a time, and the
// handler on a model that streams from memory (its own code, no network).
//
//   node --expose-gc ui-handler-parts.mjs [--turns 500] [--rounds 3]
import { fork } from "node:child_process"
import { once } from "node:events"
import { parseArgs } from "node:util"
import { createClient, createToolkit } from "@toolnexus/core"
import { createChatHandler } from "@toolnexus/ui/ai-sdk"
import { machineLine, median, printRows } from "./harness.mjs"

const { values } = parseArgs({
  options: { turns: { type: "string", default: "500" }, rounds: { type: "string", default: "3" } },
})
const TURNS = Number(values.turns)
const ROUNDS = Number(values.rounds)

const child = fork(new URL("./ui-fake-server.mjs", import.meta.url), [], {
  stdio: ["ignore", "inherit", "inherit", "ipc"],
  execArgv: [],
})
const [ready] = await once(child, "message")
const client = createClient({
  baseUrl: `${ready.url}/v1`,
  style: "openai",
  model: "bench",
  apiKey: "sk-bench",
})
const toolkit = await createToolkit({})
const handler = createChatHandler({ client, toolkit })

// The handler on a model that streams the fake server's reply from memory.
const words = "Hello there. This is a streamed answer of a dozen words or so, in pieces.".split(" ")
const memoryModel = {
  conversationStore: () => client.conversationStore(),
  ask: async (_prompt, opts) => {
    for (const w of words) opts.onEvent({ type: "text", delta: `${w} ` })
    opts.onEvent({ type: "turn", turn: 1, finishReason: "stop" })
    await null
    return { status: "done", finishReason: "stop" }
  },
}
const memoryHandler = createChatHandler({ client: memoryModel })

let seq = 0
const body = () =>
  JSON.stringify({
    id: `c-${++seq}`,
    messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] }],
    trigger: "submit-message",
  })
const post = () =>
  new Request("http://127.0.0.1/api/chat", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: body(),
  })
const frame = (ev) => `data: ${JSON.stringify(ev)}\n\n`

const variants = {
  "client.ask + onEvent": async () => {
    let n = 0
    await client.ask("hi", { id: `a-${++seq}`, toolkit, onEvent: () => n++ })
  },
  "+ a Fetch Request read (text, JSON.parse)": async () => {
    const { id } = JSON.parse(await post().text())
    await client.ask("hi", { id, toolkit, onEvent: () => {} })
  },
  "+ SSE frames into a string Response, read": async () => {
    let sse = ""
    await client.ask("hi", { id: `r-${++seq}`, toolkit, onEvent: (ev) => (sse += frame(ev)) })
    await new Response(sse).text()
  },
  "+ both": async () => {
    const { id } = JSON.parse(await post().text())
    let sse = ""
    await client.ask("hi", { id, toolkit, onEvent: (ev) => (sse += frame(ev)) })
    await new Response(sse).text()
  },
  createChatHandler: async () => {
    await (await handler(post())).text()
  },
  "createChatHandler, model in memory": async () => {
    await (await memoryHandler(post())).text()
  },
}

console.log(`ui-handler-parts: ${machineLine()}; ${TURNS} turns × ${ROUNDS} rounds`)
for (const run of Object.values(variants)) for (let i = 0; i < 150; i++) await run()
const cpu = Object.fromEntries(Object.keys(variants).map((k) => [k, []]))
for (let r = 0; r < ROUNDS; r++)
  for (const [name, run] of Object.entries(variants)) {
    globalThis.gc?.()
    const start = process.cpuUsage()
    for (let i = 0; i < TURNS; i++) await run()
    const used = process.cpuUsage(start)
    cpu[name].push((used.user + used.system) / TURNS)
  }
printRows(
  ["variant", "CPU µs/turn (median)", "rounds"],
  Object.entries(cpu).map(([name, v]) => [name, median(v).toFixed(0), v.map((x) => x.toFixed(0)).join(" ")]),
)
child.disconnect()
