// The chat handler's own layer per streamed turn, without the model, the loop or the store:
// `createChatHandler({ host, agent })` on a stub RunHost that replays one recorded turn's events
// (three text deltas, usage, turn end, done: what the fake LLM endpoint gives), served on
// node:http through toNodeListener's fast path (`fast`), against a hand-written SSE endpoint
// around the same stub (`byhand`: the body parsed, each event one `data:` frame of its JSON).
// The HTTP client is a raw socket in the same process (one request written, the chunked reply
// read to its end), the same in both variants. Count with callgrind at two lengths, subtract:
//
//   node ui-layer.mjs [--short 500] [--long 2500] [--variants fast,byhand]
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null node --single-threaded ui-layer.mjs --child fast --turns N
import { once } from "node:events"
import { createServer } from "node:http"
import { connect } from "node:net"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { callgrindCount, printRows } from "./harness.mjs"

const { values } = parseArgs({
  options: {
    short: { type: "string", default: "500" },
    long: { type: "string", default: "2500" },
    variants: { type: "string", default: "fast,byhand" },
    child: { type: "string" },
    turns: { type: "string" },
  },
})

async function main() {
  const short = Number(values.short)
  const long = Number(values.long)
  const variants = values.variants.split(",")
  const perTurn = {}
  for (const v of variants) {
    const [a, b] = await Promise.all([count(v, short), count(v, long)])
    perTurn[v] = (b - a) / (long - short)
  }
  console.log(`instructions per streamed turn on a stub host (callgrind, turns ${long} − ${short})`)
  printRows(
    ["variant", "instr/turn"],
    variants.map((v) => [v, Math.round(perTurn[v])]),
  )
  if (perTurn.fast && perTurn.byhand)
    console.log(
      `handler's layer: +${Math.round(perTurn.fast - perTurn.byhand)} (${(perTurn.fast / perTurn.byhand).toFixed(3)}×)`,
    )
}

function count(variant, turns) {
  return callgrindCount(fileURLToPath(import.meta.url), ["--child", variant, "--turns", String(turns)])
}

const TEXT = "Hello there. This is a streamed answer of a dozen words or so, in pieces."
const USAGE = { promptTokens: 10, completionTokens: 5, totalTokens: 15 }

/** One turn's events, as `client.ask` on the fake LLM endpoint emits them (fresh objects each turn). */
function turnEvents(runId) {
  const result = {
    status: "done",
    text: TEXT,
    messages: [
      { role: "user", content: "hi" },
      { role: "assistant", content: TEXT },
    ],
    toolCalls: [],
    toolCallCount: 0,
    turns: 1,
    model: "bench",
    usage: { ...USAGE },
    runId,
    finishReason: "stop",
  }
  return [
    [
      { type: "text", delta: TEXT.slice(0, 25) },
      { type: "text", delta: TEXT.slice(25, 50) },
    ],
    [
      { type: "text", delta: TEXT.slice(50) },
      { type: "usage", usage: { ...USAGE } },
      { type: "turn", turn: 1, finishReason: "stop" },
      { type: "done", result },
    ],
    result,
  ]
}

/**
 * A RunHost whose runs replay `turnEvents` over two ticks of the event loop (as a streamed reply
 * arrives), `start` resolving at once and `result` at the run's end, like a store host's.
 */
function stubHost() {
  const results = new Map()
  const run = (runId, onEvent) => {
    const [first, rest, result] = turnEvents(runId)
    const ended = new Promise((resolve) => {
      setImmediate(() => {
        for (const ev of first) onEvent?.(ev)
        setImmediate(() => {
          for (const ev of rest) onEvent?.(ev)
          results.delete(runId)
          resolve(result)
        })
      })
    })
    results.set(runId, ended)
    return ended
  }
  return {
    run,
    host: {
      async start(_agent, runId, _input, opts = {}) {
        run(runId, opts.onEvent)
        return { runId, started: true }
      },
      async send(runId, _input, opts = {}) {
        await run(runId, opts.onEvent)
      },
      result: (runId) => results.get(runId) ?? Promise.reject(new Error(`no run ${runId}`)),
      events: () => (async function* () {})(),
      deliverAnswer: async () => {
        throw new Error("not in this bench")
      },
      findRequest: async () => undefined,
      getDecision: async () => undefined,
      listPending: async () => ({ items: [] }),
    },
  }
}

/** Posts `turns` chat turns over one kept-alive raw socket, each reply read to its end. */
async function drive(port, turns, prefix) {
  const socket = connect(port, "127.0.0.1")
  await once(socket, "connect")
  socket.setEncoding("latin1")
  let received = ""
  let wake = () => {}
  socket.on("data", (d) => {
    received += d
    wake()
  })
  for (let i = 0; i < turns; i++) {
    const body = `{"id":"${prefix}-${i}","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}],"trigger":"submit-message"}`
    socket.write(
      `POST /api/chat HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
    )
    while (!received.endsWith("\r\n0\r\n\r\n")) await new Promise((resolve) => (wake = resolve))
    if (process.env.UI_LAYER_SHOW && i === 0) console.log(received)
    if (!received.includes("data: [DONE]")) throw new Error(`unexpected reply: ${received.slice(0, 300)}`)
    received = ""
  }
  socket.destroy()
}

async function child(variant, turns) {
  const { toNodeListener } = await import("@toolnexus/ui")
  const { createChatHandler } = await import("@toolnexus/ui/ai-sdk")
  const { host, run } = stubHost()
  const listener =
    variant === "fast"
      ? toNodeListener(createChatHandler({ host, agent: "chat" }))
      : (req, res) => {
          const chunks = []
          req.on("data", (c) => chunks.push(c))
          req.on("end", async () => {
            const { id } = JSON.parse(Buffer.concat(chunks).toString())
            res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
            await run(id, (ev) => res.write(`data: ${JSON.stringify(ev)}\n\n`))
            res.end("data: [DONE]\n\n")
          })
        }
  const server = createServer(listener)
  server.keepAliveTimeout = 600_000
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address()
  await drive(port, 300, "w")
  await drive(port, turns, "t")
  server.close()
}

if (values.child) await child(values.child, Number(values.turns))
else await main()
