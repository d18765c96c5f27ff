// The plain tool loop of loop-cpu.mjs with no network: the SDK gets a `fetch` that answers from
// two canned OpenAI chat replies, and the floor does the same JSON work by hand (stringify the
// request, parse the reply, append, run the tool) against the same fake. What is left between
// them is the SDK's own code per turn. Used by loop-instructions.mjs under callgrind, where a
// process that never waits on I/O counts the same instructions run after run.
//
//   node inproc-loop.mjs --only sdk|floor --runs N
import { parseArgs } from "node:util"
import { createClient, createToolkit, defineTool } from "@toolnexus/core"
import { ECHO, FINAL, PROMPT, echo } from "./echo-loop.mjs"
import { API_KEY, MODEL } from "./harness.mjs"

const { values } = parseArgs({ options: { only: { type: "string" }, runs: { type: "string" } } })
const runs = Number(values.runs)
if (!Number.isInteger(runs) || runs < 1) throw new Error("--runs must be a positive integer")

const completion = (id, message, finish_reason, usage) =>
  JSON.stringify({
    id,
    object: "chat.completion",
    created: 1,
    model: MODEL,
    choices: [{ index: 0, message, finish_reason }],
    usage,
  })
const CALL = completion(
  "chatcmpl-1",
  {
    role: "assistant",
    content: null,
    tool_calls: [
      { id: "call_bench_1", type: "function", function: { name: "echo", arguments: '{"text":"hello"}' } },
    ],
  },
  "tool_calls",
  { prompt_tokens: 52, completion_tokens: 14, total_tokens: 66 },
)
const TEXT = completion("chatcmpl-2", { role: "assistant", content: FINAL }, "stop", {
  prompt_tokens: 80,
  completion_tokens: 6,
  total_tokens: 86,
})
const headers = { get: () => null }
// The reply depends on whether the request ends with a tool result, as the mock server decides.
const fakeFetch = async (_url, init) => {
  const text = init.body.includes('"role":"tool"') ? TEXT : CALL
  return { status: 200, headers, text: async () => text }
}

const toolkit = await createToolkit({ extraTools: [defineTool({ ...ECHO, run: echo })] })
const client = createClient({
  baseUrl: "http://127.0.0.1:9/v1",
  style: "openai",
  model: MODEL,
  apiKey: API_KEY,
  fetch: fakeFetch,
})
const tools = [
  {
    type: "function",
    function: { name: ECHO.name, description: ECHO.description, parameters: ECHO.inputSchema },
  },
]

async function floor() {
  const messages = [{ role: "user", content: PROMPT }]
  for (;;) {
    const body = JSON.stringify({ model: MODEL, messages, tools })
    const res = await fakeFetch("", { body })
    const message = JSON.parse(await res.text()).choices[0].message
    messages.push(message)
    if (!message.tool_calls) return message.content
    for (const c of message.tool_calls)
      messages.push({ role: "tool", tool_call_id: c.id, content: echo(JSON.parse(c.function.arguments)) })
  }
}

async function sdk() {
  const result = await client.run(PROMPT, { toolkit })
  if (result.status !== "done") throw new Error(`sdk: ${result.status}`)
  return result.text
}

const variant = { sdk, floor }[values.only]
if (!variant) throw new Error("--only must be sdk or floor")
for (let i = 0; i < runs; i++) if ((await variant()) !== FINAL) throw new Error("unexpected final text")
