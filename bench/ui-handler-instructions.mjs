// The chat handler's instructions per streamed turn, counted by valgrind's callgrind instead
// of timed (steady on a shared machine where CPU time is not): the process that serves the
// turns runs under `valgrind --tool=callgrind`, its fake LLM endpoint and its HTTP client
// (ui-http-driver.mjs) in processes of their own, not counted. Each variant runs twice,
// --short and --long turns; the difference over the extra turns is the steady cost of a
// turn, start-up, warm-up and compilation cancel out. Variants: client.ask + onEvent in
// process (the reference of DESIGN §7), the handler in process (a Fetch Request in, the
// Response read), and on node:http: toNodeListener's fast path, its Fetch path, and the
// hand-written SSE floor around client.ask. The counts include what waiting on sockets costs
// (epoll, timers), which moves a little with the load: compare variants of one run.
//
//   node ui-handler-instructions.mjs [--short 200] [--long 1000] [--jobs 2] [--variants a,b]
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { callgrindCount, pool, printRows } from "./harness.mjs"

const VARIANTS = {
  ask: "client.ask + onEvent (in process)",
  inproc: "createChatHandler in process (Request → Response read)",
  fast: "node:http + toNodeListener, fast path",
  fetch: "node:http + toNodeListener, Fetch path",
  byhand: "node:http, hand-written SSE around client.ask",
}

const { values } = parseArgs({
  options: {
    short: { type: "string", default: "200" },
    long: { type: "string", default: "1000" },
    jobs: { type: "string", default: "2" },
    variants: { type: "string", default: Object.keys(VARIANTS).join(",") },
    child: { type: "string" },
    turns: { type: "string" },
  },
})

if (values.child) await child(values.child, Number(values.turns))
else await main()

async function main() {
  const [short, long, jobs] = ["short", "long", "jobs"].map((k) => {
    const n = Number(values[k])
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${k} must be a positive integer`)
    return n
  })
  if (long <= short) throw new Error("--long must be greater than --short")
  const variants = values.variants.split(",")
  for (const v of variants) if (!(v in VARIANTS)) throw new Error(`unknown variant ${v}`)
  const started = Date.now()
  const tasks = variants.flatMap((v) => [short, long].map((turns) => () => count(v, turns)))
  const counts = await pool(tasks, jobs)
  const perTurn = Object.fromEntries(
    variants.map((v, i) => [v, (counts[2 * i + 1] - counts[2 * i]) / (long - short)]),
  )
  console.log(`instructions per streamed turn (callgrind, turns ${long} − ${short}, openai chat replies)`)
  printRows(
    ["variant", "instr/turn", "vs client.ask"],
    variants.map((v) => [
      VARIANTS[v],
      Math.round(perTurn[v]),
      perTurn.ask ? `${(perTurn[v] / perTurn.ask).toFixed(3)}×` : "—",
    ]),
  )
  if (perTurn.fast && perTurn.byhand)
    console.log(`fast path / hand-written floor: ${(perTurn.fast / perTurn.byhand).toFixed(3)}×`)
  console.log(`(${((Date.now() - started) / 1000).toFixed(0)} s)`)
}

/** Instructions valgrind counted for one process serving `turns` turns of `variant`. */
function count(variant, turns) {
  return callgrindCount(fileURLToPath(import.meta.url), ["--child", variant, "--turns", String(turns)])
}

/** The counted process: sets up `variant`, warms it up, serves `turns` turns, exits. */
async function child(variant, turns) {
  const { createClient, createToolkit } = await import("@toolnexus/core")
  const { toNodeListener } = await import("@toolnexus/ui")
  const { createChatHandler } = await import("@toolnexus/ui/ai-sdk")
  const { byHandListener, driveTurns, fakeModel, forkHelper, listen } = await import("./ui-variants.mjs")
  const model = await fakeModel()
  const client = createClient({ baseUrl: model.baseUrl, style: "openai", model: "bench", apiKey: "sk-bench" })
  const toolkit = await createToolkit({})
  const handler = createChatHandler({ client, toolkit })
  let seq = 0
  let run
  let close = () => {}
  if (variant === "ask" || variant === "inproc") {
    const turn =
      variant === "ask"
        ? () => client.ask("hi", { id: `a-${++seq}`, toolkit, onEvent: () => {} })
        : async () => {
            const body = JSON.stringify({
              id: `c-${++seq}`,
              messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] }],
              trigger: "submit-message",
            })
            const res = await handler(
              new Request("http://127.0.0.1/api/chat", {
                method: "POST",
                headers: { "content-type": "application/json" },
                body,
              }),
            )
            await res.text()
          }
    run = async (n) => {
      for (let i = 0; i < n; i++) await turn()
    }
  } else {
    const listener =
      variant === "fast"
        ? toNodeListener(handler)
        : variant === "fetch"
          ? toNodeListener((req) => handler(req))
          : byHandListener(client, toolkit)
    const { server, url } = await listen(listener)
    const driver = forkHelper("ui-http-driver.mjs")
    run = (n) => driveTurns(driver, url, n)
    close = () => {
      driver.disconnect()
      server.close()
    }
  }
  await run(100)
  await run(turns)
  close()
  model.child.disconnect()
}
