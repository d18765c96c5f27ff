// The plain tool loop of loop-cpu.mjs with no network: the SDK gets a `fetch` that answers from
// two canned OpenAI chat replies, and the floor does the same JSON work by hand (stringify the
// request, parse the reply, append, run the tool) against the same fake. What is left between
// them is the SDK's own code per turn. Used by loop-instructions.mjs under callgrind, where a
// process that never waits on I/O counts the same instructions run after run.
// `--scenario approval` is approval-cpu.mjs's run instead: the tool suspends, the client's
// `waitFor` approves in-process, the tool runs again with the answer (the floor does the same
// by hand: a `pnd-<uuid>` request, the same `waitFor`, the retry).
//
//   node inproc-loop.mjs --only sdk|floor --runs N [--scenario loop|approval]
import { randomUUID } from "node:crypto"
import { parseArgs } from "node:util"
import { createClient, createToolkit, defineTool, pending } from "@toolnexus/core"
import { ECHO, FINAL, PROMPT, echo } from "./echo-loop.mjs"
import { API_KEY, MODEL } from "./harness.mjs"

const { values } = parseArgs({
  options: {
    only: { type: "string" },
    runs: { type: "string" },
    scenario: { type: "string", default: "loop" },
  },
})
const runs = Number(values.runs)
if (!Number.isInteger(runs) || runs < 1) throw new Error("--runs must be a positive integer")
if (values.scenario !== "loop" && values.scenario !== "approval")
  throw new Error("--scenario must be loop or approval")
const approval = values.scenario === "approval"
const approve = (request) => ({ id: request.id, ok: true })

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

// The approval scenario keeps the echo call's wire shape, so both scenarios read the same replies.
const run = approval
  ? (args, ctx) => (ctx.answer?.ok ? echo(args) : pending({ kind: "approval", prompt: `Echo ${args.text}?` }))
  : echo
const toolkit = await createToolkit({ extraTools: [defineTool({ ...ECHO, run })] })
const client = createClient({
  baseUrl: "http://127.0.0.1:9/v1",
  style: "openai",
  model: MODEL,
  apiKey: API_KEY,
  fetch: fakeFetch,
  ...(approval ? { waitFor: approve } : {}),
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
    for (const c of message.tool_calls) {
      const args = JSON.parse(c.function.arguments)
      messages.push({
        role: "tool",
        tool_call_id: c.id,
        content: approval ? await approved(args) : echo(args),
      })
    }
  }
}

/** The floor's suspension by hand: a request, the same `waitFor`, the retry with its answer. */
async function approved(args) {
  const request = { id: `pnd-${randomUUID()}`, kind: "approval", prompt: `Echo ${args.text}?` }
  const answer = await approve(request)
  if (!answer.ok || answer.id !== request.id) return `declined: ${request.prompt}`
  return echo(args)
}

async function sdk() {
  const result = await client.run(PROMPT, { toolkit })
  if (result.status !== "done") throw new Error(`sdk: ${result.status}`)
  return result.text
}

const variant = { sdk, floor }[values.only]
if (!variant) throw new Error("--only must be sdk or floor")
for (let i = 0; i < runs; i++) if ((await variant()) !== FINAL) throw new Error("unexpected final text")
