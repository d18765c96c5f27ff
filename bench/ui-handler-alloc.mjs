// The chat handler's heap allocation and GC per streamed turn, beside the hand-written SSE
// endpoint (DESIGN §7's chat handler row): what callgrind's instruction count and the timed
// ratio weigh differently. Each variant serves its turns in a process of its own, run with
// `--trace-gc-nvp`: V8 reports every collection's `allocated` bytes (since the one before) and
// its pause, so the bytes allocated over the measured turns are the sum between two forced
// collections. Also each variant's user and system CPU over the same turns (timed: noisy on a
// loaded machine, read the bytes first) and the store calls it made.
//
//   node ui-handler-alloc.mjs [--warmup 300] [--turns 1000] [--variants fast,byhand] [--single-threaded]
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { printRows } from "./harness.mjs"

const VARIANTS = {
  fast: "node:http + toNodeListener, fast path",
  fetch: "node:http + toNodeListener, Fetch path",
  byhand: "node:http, hand-written SSE around client.ask",
}

const { values } = parseArgs({
  options: {
    warmup: { type: "string", default: "300" },
    turns: { type: "string", default: "1000" },
    variants: { type: "string", default: "fast,byhand" },
    child: { type: "string" },
    "single-threaded": { type: "boolean", default: false },
  },
})
const WARMUP = Number(values.warmup)
const TURNS = Number(values.turns)
const MARK = "@@ui-alloc-mark@@"

if (values.child) await child(values.child)
else await main()

async function main() {
  const variants = values.variants.split(",")
  for (const v of variants) if (!(v in VARIANTS)) throw new Error(`unknown variant ${v}`)
  const rows = []
  for (const v of variants) {
    const r = await measure(v)
    rows.push([
      VARIANTS[v],
      Math.round(r.allocated / TURNS),
      (r.scavenges / TURNS).toFixed(3),
      r.markCompacts,
      ((r.pauseMs * 1000) / TURNS).toFixed(1),
      (r.user / TURNS).toFixed(0),
      (r.system / TURNS).toFixed(0),
      r.calls,
    ])
  }
  console.log(`per streamed turn, ${TURNS} turns after ${WARMUP} warm-up turns (--trace-gc-nvp)`)
  printRows(
    [
      "variant",
      "bytes allocated",
      "scavenges",
      "mark-compacts (all)",
      "GC pause µs",
      "user µs",
      "system µs",
      "store calls / turn",
    ],
    rows,
  )
}

/** Runs `variant`'s process; sums what V8 reported between the two marks. */
function measure(variant) {
  const args = [
    "--trace-gc-nvp",
    "--expose-gc",
    ...(values["single-threaded"] ? ["--single-threaded"] : []),
    fileURLToPath(import.meta.url),
    ...["--child", variant, "--warmup", String(WARMUP), "--turns", String(TURNS)],
  ]
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { maxBuffer: 256 << 20 }, (error, stdout) => {
      if (error) return reject(error)
      const lines = stdout.split("\n")
      const from = lines.findIndex((l) => l.startsWith(MARK))
      const to = lines.findLastIndex((l) => l.startsWith(MARK))
      if (from < 0 || to <= from) return reject(new Error(`no marks in ${variant}'s output`))
      const summary = JSON.parse(lines[to].slice(MARK.length))
      let allocated = 0
      let pauseMs = 0
      let scavenges = 0
      let markCompacts = 0
      // The first collection after the start mark counts the bytes since the forced one at the
      // mark; the forced one at the end mark (its line follows it) closes the window.
      for (const line of lines.slice(from + 1, to + 2)) {
        const a = /allocated=(\d+)/.exec(line)
        if (!a) continue
        allocated += Number(a[1])
        pauseMs += Number(/pause=([\d.]+)/.exec(line)?.[1] ?? 0)
        const kind = /gc=(\w+)/.exec(line)?.[1]
        if (kind === "s") scavenges++
        else markCompacts++
      }
      resolve({ allocated, pauseMs, scavenges, markCompacts, ...summary })
    })
  })
}

/** The measured process: sets up `variant`, warms up, marks, serves the turns, marks. */
async function child(variant) {
  const { createClient, createToolkit } = await import("@toolnexus/core")
  const { toNodeListener } = await import("@toolnexus/ui")
  const { createChatHandler } = await import("@toolnexus/ui/ai-sdk")
  const { byHandListener, driveTurns, fakeModel, forkHelper, listen } = await import("./ui-variants.mjs")
  const model = await fakeModel()
  const client = createClient({ baseUrl: model.baseUrl, style: "openai", model: "bench", apiKey: "sk-bench" })
  const toolkit = await createToolkit({})
  const handler = createChatHandler({ client, toolkit })
  // Store calls, counted on the store both variants run on (the handler's host adopted it).
  const store = client.conversationStore()
  let calls = 0
  for (const name of [
    "get",
    "save",
    "getPending",
    "getSnapshot",
    "putSnapshot",
    "createSnapshot",
    "commitResume",
  ]) {
    const own = store[name]
    if (typeof own !== "function") continue
    store[name] = function (...args) {
      calls++
      return own.apply(this, args)
    }
  }
  const listener =
    variant === "fast"
      ? toNodeListener(handler)
      : variant === "fetch"
        ? toNodeListener((req) => handler(req))
        : byHandListener(client, toolkit)
  const { server, url } = await listen(listener)
  const driver = forkHelper("ui-http-driver.mjs")
  await driveTurns(driver, url, WARMUP)
  globalThis.gc()
  // TNX_ALLOC_PROFILE=<file>: also a sampling heap profile of every allocation over the turns,
  // the collected ones included (what `--heap-prof` leaves out).
  // TNX_CPU_PROFILE=<file>: a CPU profile of the turns instead (V8's sampler, 100 µs).
  const profileTo = process.env.TNX_ALLOC_PROFILE
  const cpuTo = process.env.TNX_CPU_PROFILE
  const session = profileTo || cpuTo ? new (await import("node:inspector")).Session() : undefined
  const post = (method, params) =>
    new Promise((resolve, reject) =>
      session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))),
    )
  if (session && cpuTo) {
    session.connect()
    await post("Profiler.enable")
    await post("Profiler.setSamplingInterval", { interval: 100 })
    await post("Profiler.start")
  } else if (session) {
    session.connect()
    await post("HeapProfiler.startSampling", {
      samplingInterval: 1024,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    })
  }
  console.log(MARK)
  calls = 0
  const cpu = process.cpuUsage()
  await driveTurns(driver, url, TURNS)
  const used = process.cpuUsage(cpu)
  const counted = calls
  if (session) {
    const { profile } = await post(cpuTo ? "Profiler.stop" : "HeapProfiler.stopSampling")
    ;(await import("node:fs")).writeFileSync(cpuTo ?? profileTo, JSON.stringify(profile))
    session.disconnect()
  }
  console.log(`${MARK}${JSON.stringify({ user: used.user, system: used.system, calls: counted / TURNS })}`)
  globalThis.gc()
  driver.disconnect()
  server.close()
  model.child.disconnect()
}
