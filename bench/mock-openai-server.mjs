// A minimal OpenAI-style chat completions endpoint for the CPU benchmarks.
//
// It runs in its own process (the benchmarks fork it) so that its CPU never shows up in
// the client's `process.cpuUsage()`. Both replies are serialised once at start-up: a
// request whose last message is a tool result gets the final text answer, any other
// request gets the tool call. It reports its port over IPC and, when asked, the number
// of requests and request-body bytes it has seen, when the first and each of them arrived (epoch
// ms, for the fresh-process benchmark) and, while checking is switched on, an
// order-independent digest of the bodies (the benchmarks use these to check that the SDK
// and the floor send byte-identical requests; checking is off while they measure).
//
// argv: --tool <name> --arguments <json string> --text <final answer>
//       --by-system <json>: {"<system prompt>": {"tool": name, "arguments": json string}}, the
//       tool call sent instead when the request's system message is one of these (the depth
//       benchmark gives each level of a sub-agent tree its own call this way; openai style only)
//       --style openai|anthropic|openai-responses: the wire style it speaks (default openai):
//       chat completions, Anthropic messages, or the OpenAI Responses API, each with its
//       own "the last input is a tool result" test and reply bodies
import { createHash } from "node:crypto"
import { createServer } from "node:http"
import { parseArgs } from "node:util"

const { values } = parseArgs({
  options: {
    tool: { type: "string", default: "echo" },
    arguments: { type: "string", default: '{"text":"hello"}' },
    text: { type: "string", default: "done" },
    "by-system": { type: "string", default: "{}" },
    style: { type: "string", default: "openai" },
  },
})
const STYLES = ["openai", "anthropic", "openai-responses"]
if (!STYLES.includes(values.style)) throw new Error(`--style must be one of ${STYLES.join(", ")}`)

const MODEL = "mock-model"
const created = Math.floor(Date.now() / 1000)

function completion(id, message, finishReason, usage) {
  return Buffer.from(
    JSON.stringify({
      id,
      object: "chat.completion",
      created,
      model: MODEL,
      choices: [{ index: 0, message, finish_reason: finishReason }],
      usage,
    }),
  )
}

const toolCallReply = completion(
  "chatcmpl-bench-1",
  {
    role: "assistant",
    content: null,
    tool_calls: [
      { id: "call_bench_1", type: "function", function: { name: values.tool, arguments: values.arguments } },
    ],
  },
  "tool_calls",
  { prompt_tokens: 52, completion_tokens: 14, total_tokens: 66 },
)
const textReply = completion("chatcmpl-bench-2", { role: "assistant", content: values.text }, "stop", {
  prompt_tokens: 80,
  completion_tokens: 6,
  total_tokens: 86,
})
/** Tool-call replies by system prompt, serialised once like the others. */
const bySystem = new Map(
  Object.entries(JSON.parse(values["by-system"])).map(([system, call], i) => [
    system,
    completion(
      `chatcmpl-bench-s${i}`,
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: `call_bench_s${i}`,
            type: "function",
            function: { name: call.tool, arguments: call.arguments },
          },
        ],
      },
      "tool_calls",
      { prompt_tokens: 52, completion_tokens: 14, total_tokens: 66 },
    ),
  ]),
)
/** The two replies and the tool-result test of the other styles, serialised once too. */
const otherStyles = {
  anthropic: {
    toolCall: Buffer.from(
      JSON.stringify({
        id: "msg_bench_1",
        type: "message",
        role: "assistant",
        model: MODEL,
        content: [
          { type: "tool_use", id: "call_bench_1", name: values.tool, input: JSON.parse(values.arguments) },
        ],
        stop_reason: "tool_use",
        usage: { input_tokens: 52, output_tokens: 14 },
      }),
    ),
    text: Buffer.from(
      JSON.stringify({
        id: "msg_bench_2",
        type: "message",
        role: "assistant",
        model: MODEL,
        content: [{ type: "text", text: values.text }],
        stop_reason: "end_turn",
        usage: { input_tokens: 80, output_tokens: 6 },
      }),
    ),
    endsWithToolResult: (body) => {
      const last = body.messages[body.messages.length - 1]
      return Array.isArray(last?.content) && last.content.some((block) => block.type === "tool_result")
    },
  },
  "openai-responses": {
    toolCall: Buffer.from(
      JSON.stringify({
        id: "resp_bench_1",
        object: "response",
        status: "completed",
        model: MODEL,
        output: [
          {
            type: "function_call",
            id: "fc_bench_1",
            call_id: "call_bench_1",
            name: values.tool,
            arguments: values.arguments,
            status: "completed",
          },
        ],
        usage: { input_tokens: 52, output_tokens: 14, total_tokens: 66 },
      }),
    ),
    text: Buffer.from(
      JSON.stringify({
        id: "resp_bench_2",
        object: "response",
        status: "completed",
        model: MODEL,
        output: [
          {
            type: "message",
            id: "msg_bench_2",
            role: "assistant",
            status: "completed",
            content: [{ type: "output_text", text: values.text, annotations: [] }],
          },
        ],
        usage: { input_tokens: 80, output_tokens: 6, total_tokens: 86 },
      }),
    ),
    endsWithToolResult: (body) => body.input[body.input.length - 1]?.type === "function_call_output",
  },
}
const other = otherStyles[values.style]

const replyHeaders = (body) => ({ "content-type": "application/json", "content-length": String(body.length) })
const toolCallHeaders = replyHeaders(toolCallReply)
const textHeaders = replyHeaders(textReply)

let requests = 0
let bodyBytes = 0
/** When the first request since the last stats call arrived (headers read), in epoch ms. */
let firstRequestAt = null
/** When each request since the last stats call arrived (headers read), in epoch ms. */
let arrivals = []
let checking = false
let digest = 0n
const MASK = (1n << 64n) - 1n

const server = createServer((req, res) => {
  const arrived = performance.timeOrigin + performance.now()
  firstRequestAt ??= arrived
  arrivals.push(arrived)
  const chunks = []
  req.on("data", (chunk) => chunks.push(chunk))
  req.on("end", () => {
    const raw = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)
    requests++
    bodyBytes += raw.length
    if (checking) digest = (digest + createHash("sha256").update(raw).digest().readBigUInt64BE(0)) & MASK
    if (other) {
      let reply
      try {
        reply = other.endsWithToolResult(JSON.parse(raw.toString("utf8"))) ? other.text : other.toolCall
      } catch {
        res.writeHead(400, { "content-type": "application/json" })
        res.end('{"error":{"message":"bad request body"}}')
        return
      }
      res.writeHead(200, replyHeaders(reply))
      res.end(reply)
      return
    }
    let lastRole
    let system
    try {
      const messages = JSON.parse(raw.toString("utf8")).messages
      lastRole = messages[messages.length - 1]?.role
      if (messages[0]?.role === "system") system = messages[0].content
    } catch {
      res.writeHead(400, { "content-type": "application/json" })
      res.end('{"error":{"message":"bad request body"}}')
      return
    }
    if (lastRole === "tool") {
      res.writeHead(200, textHeaders)
      res.end(textReply)
    } else {
      const reply = (system !== undefined && bySystem.get(system)) || toolCallReply
      res.writeHead(200, reply === toolCallReply ? toolCallHeaders : replyHeaders(reply))
      res.end(reply)
    }
  })
})
server.keepAliveTimeout = 120_000
server.headersTimeout = 130_000

process.on("message", (msg) => {
  if (msg?.type === "stats") {
    process.send({
      type: "stats",
      requests,
      bodyBytes,
      digest: digest.toString(16),
      firstRequestAt,
      arrivals,
    })
    requests = 0
    bodyBytes = 0
    firstRequestAt = null
    arrivals = []
    digest = 0n
    checking = msg.check === true
  }
})
// The parent going away (normally or not) ends the server too.
process.on("disconnect", () => process.exit(0))

server.listen(0, "127.0.0.1", () => {
  process.send({ type: "ready", port: server.address().port })
})
