// The shared bench's S2 run with no network (for counting under callgrind): the bench's
// `ours.mjs` s2 shape — one toolkit, a new client per run whose `waitFor` the host answers —
// against an in-process `fetch` giving the mock's two replies. TN_OURS names the checkout.
//   node --single-threaded s2-inproc-child.mjs --runs N
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { parseArgs } from "node:util"

const { values } = parseArgs({
  options: {
    runs: { type: "string" },
    warmup: { type: "string", default: "100" },
    create: { type: "boolean", default: false },
  },
})
const core = await import(pathToFileURL(join(process.env.TN_OURS, "packages/core/dist/index.js")).href)
const reply = (message, finish_reason) =>
  JSON.stringify({
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 1,
    model: "mock",
    choices: [{ index: 0, message, finish_reason }],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  })
let n = 0
const CALL = () =>
  reply(
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id: `call_${++n}`, type: "function", function: { name: "lookup", arguments: "{}" } }],
    },
    "tool_calls",
  )
const TEXT = reply({ role: "assistant", content: "done" }, "stop")
const headers = { get: () => null }
const fakeFetch = async (_url, init) => {
  const text = init.body.includes('"role":"tool"') ? TEXT : CALL()
  return { status: 200, headers, text: async () => text }
}
const lookup = core.defineTool({
  name: "lookup",
  description: "Look up the data.",
  inputSchema: { type: "object", properties: {} },
  run: (_a, ctx) =>
    ctx?.answer?.ok ? "data" : core.pending({ kind: "approval", prompt: "approve lookup?" }),
})
const toolkit = await core.createToolkit({ extraTools: [lookup] })
async function start() {
  let resolveAsked, answer
  const asked = new Promise((r) => (resolveAsked = r))
  const c = core.createClient({
    baseUrl: "http://127.0.0.1:9/v1",
    style: "openai",
    model: "mock",
    apiKey: "sk",
    retries: 0,
    fetch: fakeFetch,
    waitFor: (req) =>
      new Promise((r) => {
        answer = (a) => r(a)
        resolveAsked(req)
      }),
  })
  const done = c.run("go", { toolkit })
  const req = await asked
  return { req, done, answer: () => answer }
}
async function approve(h) {
  h.answer()({ id: h.req.id, ok: true })
  return (await h.done).text
}
const total = Number(values.warmup) + Number(values.runs)
if (values.create) {
  const keep = []
  for (let i = 0; i < total; i++)
    keep[i % 16] = core.createClient({
      baseUrl: "http://127.0.0.1:9/v1",
      style: "openai",
      model: "mock",
      apiKey: "sk",
      retries: 0,
      fetch: fakeFetch,
      waitFor: () => ({ ok: true }),
    })
  process.exit(0)
}
for (let i = 0; i < total; i++) if ((await approve(await start())) !== "done") throw new Error("not done")
