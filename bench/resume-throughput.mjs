// Resume throughput: --runs parked runs (10,000 by default) resumed with 32 in flight, each
// with `{id, ok: true}`: the halted `pay` call runs again with the answer and the model is
// asked once more, answering in text. Compared with the floor doing the same by hand.
//
// - sdk: a `@toolnexus/core` client (`createClient` against the forked mock endpoint, its
//   default MemoryStore) parks the runs with `client.ask(prompt, {toolkit, id})`; each is
//   resumed with `askWithAnswer(client, {toolkit, id, answer})` from `@toolnexus/durable`
//   (on a MemoryStore: load transcript and pending request, `client.continueRun`, save).
// - floor: parks the same conversations by hand (transcript + pending request in a Map) and
//   resumes each by retrying the tool and sending the same follow-up request.
// - agents: a `@toolnexus/agents` runtime (default store) with one parked handle per
//   conversation; each is resumed with `rt.resume(answer)`.
//
// Parking is not measured. The figure is resumes per second (wall time of the batch) and
// client CPU per resume. The mock counts the LLM requests of each resume batch: a resume of
// a single-level parked run must send exactly one. Each variant parks and resumes in its own
// process (as in harness.mjs's runBenchmark), unless --same-process is given. Between parking
// and the measured batch, 1,000 more resumes make the resume path hot again. No batch is
// preceded by a forced gc() (see harness.mjs's phase()).
//
//   node --expose-gc resume-throughput.mjs [--runs N] [--rounds R] [--warmup W] [--only sdk|floor|agents]
//     [--same-process]
import { createRuntime } from "@toolnexus/agents"
import { createClient, createToolkit, defineTool, pending } from "@toolnexus/core"
import { askWithAnswer } from "@toolnexus/durable"
import {
  API_KEY,
  MODEL,
  cliOptions,
  forkVariant,
  inFlight,
  machineLine,
  median,
  printRows,
  serveVariant,
  startMockServer,
  variantOfThisProcess,
} from "./harness.mjs"
import {
  FINAL,
  MOCK_ARGS,
  PAID,
  closeFloorAgent,
  createParkingFloor,
  payTool,
  promptOf,
} from "./pay-scenario.mjs"

const options = cliOptions(
  { runs: 10_000, rounds: 2, warmup: 1000 },
  { variants: ["sdk", "floor", "agents"] },
)
const CONCURRENCY = 32

const server = await startMockServer(MOCK_ARGS)
const toolkit = await createToolkit({ extraTools: [payTool({ defineTool, pending })] })

/**
 * Each variant parks `count` conversations (numbered from `offset`) and returns `resume(i)`,
 * which resumes the i-th of them and checks the outcome.
 */
const variants = {
  async sdk(count, offset) {
    const client = createClient({ baseUrl: server.baseUrl, style: "openai", model: MODEL, apiKey: API_KEY })
    const requestIds = new Array(count)
    await inFlight(count, CONCURRENCY, async (i) => {
      const result = await client.ask(promptOf(offset + i), { toolkit, id: `conv-${offset + i}` })
      if (result.status !== "pending") throw new Error(`sdk: not parked: ${JSON.stringify(result)}`)
      requestIds[i] = result.pending.id
    })
    return async (i) => {
      const answer = { id: requestIds[i], ok: true }
      const result = await askWithAnswer(client, { toolkit, id: `conv-${offset + i}`, answer })
      if (result.status !== "done" || result.text !== FINAL || result.toolCalls[0]?.output !== PAID) {
        throw new Error(`sdk: unexpected result ${JSON.stringify(result)}`)
      }
    }
  },
  async floor(count, offset) {
    const floor = createParkingFloor({ baseUrl: server.baseUrl })
    const requestIds = new Array(count)
    await inFlight(count, CONCURRENCY, async (i) => {
      requestIds[i] = (await floor.park(`conv-${offset + i}`, promptOf(offset + i))).id
    })
    return async (i) => {
      const result = await floor.resume(`conv-${offset + i}`, { id: requestIds[i], ok: true })
      if (result.text !== FINAL || result.output !== PAID) {
        throw new Error(`floor: unexpected result ${JSON.stringify(result)}`)
      }
    }
  },
  async agents(count, offset) {
    const rt = createRuntime({
      registry: {
        payer: { name: "payer", does: "pays invoices", tools: [payTool({ defineTool, pending })] },
      },
      llm: { baseUrl: server.baseUrl, style: "openai", apiKey: API_KEY, model: MODEL },
    })
    const parked = new Array(count)
    await inFlight(count, CONCURRENCY, async (i) => {
      const h = rt.spawn(rt.root, "payer")
      rt.wake(h, promptOf(offset + i))
      const result = await rt.wait(h)
      if (result.status !== "pending") throw new Error(`agents: not parked: ${JSON.stringify(result)}`)
      parked[i] = { h, requestId: result.pending.id }
    })
    return async (i) => {
      const { h, requestId } = parked[i]
      await rt.resume({ id: requestId, ok: true })
      const result = await rt.wait(h)
      if (result.status !== "done" || result.text !== FINAL || rt.stateOf(h) !== "idle") {
        throw new Error(`agents: unexpected result ${JSON.stringify(result)}`)
      }
    }
  },
}
/** Resumes run after the parking and before the measured batch, unmeasured and uncounted. */
const REWARM = 1000

/**
 * One variant's side of a measurement: `park` parks `count` runs numbered from `offset` and
 * REWARM more, and resumes the REWARM extra runs, so the resume path is hot again after the
 * parking; `resume` then resumes the `count` runs (32 in flight) and returns the batch's CPU
 * and wall time. Only `resume` is measured and counted.
 */
function variantSide(name) {
  let parked
  return async ({ op, count, offset }) => {
    if (op === "park") {
      const resume = await variants[name](count + REWARM, offset)
      await inFlight(REWARM, CONCURRENCY, (i) => resume(count + i))
      parked = { resume, count }
      return {}
    }
    return inFlight(parked.count, CONCURRENCY, parked.resume)
  }
}
if (variantOfThisProcess !== undefined) await serveVariant(variantSide(variantOfThisProcess))

const names = Object.keys(variants).filter((name) => options.only === undefined || name === options.only)

console.log(
  "resume-throughput: parked runs resumed per second ({id, ok:true}: retry the tool, 1 LLM request)",
)
console.log(
  `${machineLine()}, ${options.runs} parked runs per round, ${options.rounds} rounds, ` +
    `${options.warmup} warm-up resumes, ${CONCURRENCY} in flight, ` +
    `${options.sameProcess ? "all variants in this process" : "each variant in its own process"}`,
)

const sides = {}
for (const name of names) {
  sides[name] = options.sameProcess
    ? { call: variantSide(name), close() {} }
    : await forkVariant(name, server)
}

/** Parks `count` runs, then resumes them all; resumes/s, CPU µs per resume, requests seen. */
async function measure(name, count, offset, check = false) {
  await sides[name].call({ op: "park", count, offset })
  await server.stats(check) // reset the counters; digest the resumes' bodies when checking
  const m = await sides[name].call({ op: "resume" })
  const seen = await server.stats(false)
  return { perSec: count / (m.wallNs / 1e9), cpuUs: m.cpuUs / count, requests: seen.requests, seen }
}

const started = Date.now()
const samples = Object.fromEntries(names.map((name) => [name, { perSec: [], cpuUs: [], requests: 0 }]))
const ratios = { sdk: [], agents: [] }
let offset = 0
try {
  // Warm-up, and a check that the SDK and the floor send byte-identical resume requests
  // (the conversations are numbered alike, so their bodies are too).
  const digests = {}
  for (const name of names) {
    const w = await measure(name, options.warmup, 0, true)
    if (w.requests !== options.warmup) {
      throw new Error(`${name}: ${options.warmup} resumes sent ${w.requests} LLM requests`)
    }
    digests[name] = w.seen.digest
  }
  offset = options.warmup
  if (names.length > 1) {
    const differ = names.filter((name) => digests[name] !== digests[names[0]])
    console.log(
      differ.length === 0
        ? `resume requests: byte-identical for ${names.join(", ")}`
        : `WARNING: the resume requests differ (${names.map((n) => `${n} ${digests[n]}`).join(", ")})`,
    )
  }

  for (let round = 0; round < options.rounds; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse()
    const perSec = {}
    for (const name of order) {
      const m = await measure(name, options.runs, offset)
      offset += options.runs
      perSec[name] = m.perSec
      samples[name].perSec.push(m.perSec)
      samples[name].cpuUs.push(m.cpuUs)
      samples[name].requests += m.requests
      if (options.verbose) {
        console.log(
          `  round ${round + 1} ${name}: ${m.perSec.toFixed(0)} resumes/s, ${m.cpuUs.toFixed(0)} µs CPU/resume, ` +
            `${(m.requests / options.runs).toFixed(3)} LLM requests/resume`,
        )
      }
    }
    for (const name of ["sdk", "agents"]) {
      if (perSec[name] !== undefined && perSec.floor !== undefined)
        ratios[name].push(perSec[name] / perSec.floor)
    }
  }
} finally {
  for (const side of Object.values(sides)) side.close()
  await closeFloorAgent()
  server.close()
}

const rows = names.map((name) => {
  const s = samples[name]
  const spread = ((Math.max(...s.perSec) - Math.min(...s.perSec)) / median(s.perSec)) * 100
  return [
    name,
    median(s.perSec).toFixed(0),
    `±${spread.toFixed(0)}%`,
    median(s.cpuUs).toFixed(0),
    (s.requests / (options.runs * options.rounds)).toFixed(3),
    ratios[name]?.length ? `${median(ratios[name]).toFixed(2)}x` : "-",
  ]
})
printRows(
  ["variant", "resumes/s", "spread", "CPU µs/resume", "LLM requests/resume", "resumes/s vs floor"],
  rows,
)
console.log("(medians of the rounds; spread = (max - min) / median; ratio: median of the per-round ratios)")
console.log(`(${((Date.now() - started) / 1000).toFixed(1)} s)`)
