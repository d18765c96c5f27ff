// A/B of two builds of @toolnexus/core on inproc-loop.mjs's work (the echo loop, or the
// approval run, replies from a fake `fetch`, no network), in one process with the two
// alternating batch by batch: the median of the per-round ratios is a CPU comparison that
// the machine's load shifts for both sides alike.
//
//   node inproc-ab.mjs A/dist/index.js B/dist/index.js [runs per batch] [rounds] [loop|approval]
import { pathToFileURL } from "node:url"

const [aPath, bPath, runsArg, roundsArg, scenario = "loop"] = process.argv.slice(2)
if (!aPath || !bPath) throw new Error("usage: inproc-ab.mjs A/dist/index.js B/dist/index.js [runs] [rounds]")
const runs = Number(runsArg ?? 3000)
const rounds = Number(roundsArg ?? 20)
const approval = scenario === "approval"

const completion = (id, message, finish_reason, usage) =>
  JSON.stringify({
    id,
    object: "chat.completion",
    created: 1,
    model: "m",
    choices: [{ index: 0, message, finish_reason }],
    usage,
  })
const CALL = completion(
  "c1",
  {
    role: "assistant",
    content: null,
    tool_calls: [
      { id: "call_1", type: "function", function: { name: "echo", arguments: '{"text":"hello"}' } },
    ],
  },
  "tool_calls",
  { prompt_tokens: 52, completion_tokens: 14, total_tokens: 66 },
)
const TEXT = completion("c2", { role: "assistant", content: "done" }, "stop", {
  prompt_tokens: 80,
  completion_tokens: 6,
  total_tokens: 86,
})
const headers = { get: () => null }
const fakeFetch = async (_url, init) => {
  const text = init.body.includes('"role":"tool"') ? TEXT : CALL
  return { status: 200, headers, text: async () => text }
}

async function variant(file) {
  const core = await import(pathToFileURL(file).href)
  const inputSchema = { type: "object", properties: { text: { type: "string" } }, required: ["text"] }
  const run = approval
    ? (args, ctx) =>
        ctx.answer?.ok ? `echo: ${args.text}` : core.pending({ kind: "approval", prompt: "ok?" })
    : (args) => `echo: ${args.text}`
  const tool = core.defineTool({ name: "echo", description: "Echo", inputSchema, run })
  const toolkit = await core.createToolkit({ extraTools: [tool] })
  const client = core.createClient({
    baseUrl: "http://127.0.0.1:9/v1",
    style: "openai",
    model: "m",
    apiKey: "k",
    fetch: fakeFetch,
    ...(approval ? { waitFor: (request) => ({ id: request.id, ok: true }) } : {}),
  })
  return async () => {
    const result = await client.run("go", { toolkit })
    if (result.text !== "done") throw new Error(`${file}: ${result.status}`)
  }
}

const variants = { a: await variant(aPath), b: await variant(bPath) }
for (const k of ["a", "b"]) for (let i = 0; i < 3000; i++) await variants[k]()
const perTurn = { a: [], b: [] }
for (let r = 0; r < rounds; r++) {
  for (const k of r % 2 ? ["b", "a"] : ["a", "b"]) {
    const start = process.cpuUsage()
    for (let i = 0; i < runs; i++) await variants[k]()
    const used = process.cpuUsage(start)
    perTurn[k].push((used.user + used.system) / runs / 2)
  }
}
const median = (xs) => xs.slice().sort((p, q) => p - q)[xs.length >> 1]
const ratios = perTurn.a.map((x, i) => x / perTurn.b[i])
console.log(
  `${scenario}: a ${median(perTurn.a).toFixed(2)} µs/turn, b ${median(perTurn.b).toFixed(2)} µs/turn, ` +
    `a/b median ${median(ratios).toFixed(3)} (${ratios.map((r) => r.toFixed(2)).join(" ")})`,
)
