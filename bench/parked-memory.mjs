// Heap bytes per parked run: 10,000 conversations halt on a suspending tool and stay parked
// in one process. Compared with the floor keeping the same state by hand.
//
// - sdk: a `@toolnexus/core` client (`createClient` against the forked mock endpoint, no
//   `waitFor`) runs `client.ask(prompt, {toolkit, id})`; the `pay` tool returns
//   `pending(...)`, so each run halts and is parked in the client's default MemoryStore.
// - floor: the same requests by hand; each parked conversation is its transcript (user,
//   assistant tool call, placeholder tool result) and its pending request in a Map.
// - agents: a `@toolnexus/agents` runtime (default store) spawns one handle per
//   conversation, wakes it with the prompt and waits: the handle's tool suspends and the
//   handle parks (`suspended`).
//
// Each measurement runs in a fresh process (forked, with --expose-gc): it warms up on
// throw-away instances, then takes `process.memoryUsage().heapUsed` after full collections
// before and after parking --runs conversations (32 in flight) on a fresh client/Map/runtime,
// and divides by --runs. A round measures every variant, alternating the order.
//
//   node --expose-gc parked-memory.mjs [--runs N] [--rounds R] [--warmup W] [--only sdk|floor|agents]
import { fork } from "node:child_process"
import { fileURLToPath } from "node:url"
import { createRuntime } from "@toolnexus/agents"
import { createClient, createToolkit, defineTool, pending } from "@toolnexus/core"
import {
  API_KEY,
  MODEL,
  cliOptions,
  heapUsedAfterGc,
  inFlight,
  machineLine,
  median,
  printRows,
  startMockServer,
} from "./harness.mjs"
import { MOCK_ARGS, closeFloorAgent, createParkingFloor, payTool, promptOf } from "./pay-scenario.mjs"

const options = cliOptions(
  { runs: 10_000, rounds: 3, warmup: 500 },
  {
    variants: ["sdk", "floor", "agents"],
    extra: { child: { type: "string" }, "base-url": { type: "string" } },
  },
)
const CONCURRENCY = 32

// The parent forks the mock endpoint; each measuring child is given its URL.
const server = options.values.child
  ? { baseUrl: options.values["base-url"] }
  : await startMockServer(MOCK_ARGS)
const toolkit = await createToolkit({ extraTools: [payTool({ defineTool, pending })] })
const newClient = () =>
  createClient({ baseUrl: server.baseUrl, style: "openai", model: MODEL, apiKey: API_KEY })

/**
 * Each variant parks `count` conversations and returns what keeps them alive (measured while
 * it is reachable) and a check that they really are parked.
 */
const variants = {
  async sdk(count, offset) {
    const client = newClient()
    await inFlight(count, CONCURRENCY, async (i) => {
      const result = await client.ask(promptOf(offset + i), { toolkit, id: `conv-${offset + i}` })
      if (result.status !== "pending" || result.pending?.kind !== "approval") {
        throw new Error(`sdk: unexpected result ${JSON.stringify(result)}`)
      }
    })
    return {
      keep: client,
      async check() {
        const store = client.conversationStore()
        const last = `conv-${offset + count - 1}`
        if ((await store.get(last))?.length !== 3 || !(await store.getPending(last))) {
          throw new Error("sdk: the last conversation is not parked")
        }
      },
    }
  },
  async floor(count, offset) {
    const floor = createParkingFloor({ baseUrl: server.baseUrl })
    await inFlight(count, CONCURRENCY, (i) => floor.park(`conv-${offset + i}`, promptOf(offset + i)))
    return {
      keep: floor,
      async check() {
        if (floor.parked.size !== count) throw new Error(`floor: ${floor.parked.size} parked, not ${count}`)
      },
    }
  },
  async agents(count, offset) {
    const rt = createRuntime({
      registry: {
        payer: { name: "payer", does: "pays invoices", tools: [payTool({ defineTool, pending })] },
      },
      llm: { baseUrl: server.baseUrl, style: "openai", apiKey: API_KEY, model: MODEL },
    })
    await inFlight(count, CONCURRENCY, async (i) => {
      const h = rt.spawn(rt.root, "payer")
      rt.wake(h, promptOf(offset + i))
      const result = await rt.wait(h)
      if (result.status !== "pending" || rt.stateOf(h) !== "suspended") {
        throw new Error(`agents: unexpected result ${JSON.stringify(result)}`)
      }
    })
    return {
      keep: rt,
      async check() {
        const parked = rt.list().filter((v) => v.state === "suspended").length
        if (parked !== count) throw new Error(`agents: ${parked} handles parked, not ${count}`)
      },
    }
  },
}
const names = Object.keys(variants).filter((name) => options.only === undefined || name === options.only)

/**
 * One measurement, in a process of its own (so that nothing another variant left behind, nor
 * its code, moves the baseline): warm up, take the baseline, park, measure, print JSON.
 */
async function measureHere(name) {
  let parked = await variants[name](options.warmup, 0)
  // Dropped explicitly: a suspended async frame may otherwise keep the warm-up instance.
  parked = undefined
  const before = heapUsedAfterGc()
  parked = await variants[name](options.runs, options.warmup)
  const after = heapUsedAfterGc()
  await parked.check()
  return (after - before) / options.runs
}

/** Forks this script to measure `name` once; resolves with bytes per parked run. */
function measureInChild(name) {
  const args = ["--child", name, "--runs", String(options.runs), "--warmup", String(options.warmup)]
  const child = fork(fileURLToPath(import.meta.url), [...args, "--base-url", server.baseUrl], {
    execArgv: ["--expose-gc"],
    stdio: ["ignore", "pipe", "inherit", "ipc"],
  })
  let out = ""
  child.stdout.on("data", (chunk) => {
    out += chunk
  })
  return new Promise((resolve, reject) => {
    child.on("close", (code) => {
      if (code !== 0) reject(new Error(`${name}: the measuring process exited with ${code}`))
      else resolve(JSON.parse(out).bytesPerRun)
    })
  })
}

if (options.values.child) {
  try {
    const bytesPerRun = await measureHere(options.values.child)
    process.stdout.write(`${JSON.stringify({ bytesPerRun })}\n`)
  } finally {
    await closeFloorAgent()
  }
  process.exit(0)
}

console.log("parked-memory: heap bytes per parked run (a tool suspends, no waitFor; 1 LLM request per run)")
console.log(
  `${machineLine()}, ${options.runs} parked runs per measurement, ${options.rounds} rounds, ` +
    `${options.warmup} warm-up runs, ${CONCURRENCY} in flight while parking, one process per measurement`,
)

const started = Date.now()
const samples = Object.fromEntries(names.map((name) => [name, []]))
const ratios = { sdk: [], agents: [] }
try {
  for (let round = 0; round < options.rounds; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse()
    for (const name of order) {
      samples[name].push(await measureInChild(name))
      if (options.verbose)
        console.log(`  round ${round + 1} ${name}: ${samples[name].at(-1).toFixed(0)} B/run`)
    }
    if (samples.floor?.length === round + 1) {
      for (const name of ["sdk", "agents"]) {
        if (samples[name]) ratios[name].push(samples[name][round] / samples.floor[round])
      }
    }
  }
} finally {
  server.close()
}

const rows = names.map((name) => {
  const values = samples[name]
  const spread = ((Math.max(...values) - Math.min(...values)) / median(values)) * 100
  const ratio = ratios[name]?.length ? `${median(ratios[name]).toFixed(2)}x` : "-"
  return [name, median(values).toFixed(0), `±${spread.toFixed(0)}%`, ratio]
})
printRows(["variant", "heap B/parked run", "spread", "ratio to floor"], rows)
console.log("(medians of the rounds; spread = (max - min) / median; ratio: median of the per-round ratios)")
console.log(`(${((Date.now() - started) / 1000).toFixed(1)} s)`)
