// Bytes allocated per resume of S4's resume-all, through the shared bench's own adapter and mock
// server, counted without a collection in the window: run with a young generation large enough
// that none falls in it (`--min-semi-space-size=256 --max-semi-space-size=256`), the heap used at
// a window's end less at its start is what the window allocated. Several windows, so that a
// reading is seen to repeat. With --profile, a sampling heap profile of the resumes instead
// (collected objects kept), summed by function: where the bytes go (a function's own bytes
// include those of the functions TurboFan inlined into it; `--no-turbo-inlining` separates them).
//
//   TN_OURS=<checkout> node --expose-gc --min-semi-space-size=256 --max-semi-space-size=256 \
//     resume-alloc.mjs --bench <shared bench copy> [--peer ours|floor] [--c 32] [--runs 2000] [--windows 4]
//   TN_OURS=<checkout> node resume-alloc.mjs --bench <copy> --profile [--filter packages/] [--top 40]
//
// The floor's adapter imports undici: run it from a `--deps`-style copy (see shared-rows.mjs)
// or with the bench's own Node 20 set. Parks 300 warm-up runs and resumes them at c=32 (the
// bench's warm-up), parks --parked more, resumes 1000 unmeasured, then the windows.
import { spawn } from "node:child_process"
import { Session } from "node:inspector/promises"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { getHeapStatistics } from "node:v8"

const { values } = parseArgs({
  options: {
    bench: { type: "string" },
    peer: { type: "string", default: "ours" },
    parked: { type: "string", default: "10000" },
    runs: { type: "string", default: "2000" },
    windows: { type: "string", default: "4" },
    c: { type: "string", default: "32" },
    profile: { type: "boolean", default: false },
    interval: { type: "string", default: "128" },
    filter: { type: "string", default: "" },
    top: { type: "string", default: "40" },
  },
})
if (!values.bench) throw new Error("--bench <a copy of the shared bench, after npm ci>")
const [parked, runs, windows, c] = ["parked", "runs", "windows", "c"].map((k) => Number(values[k]))
if (1000 + (values.profile ? 1 : windows) * runs > parked)
  throw new Error("--parked is too small for the windows")

const mock = spawn(process.execPath, [join(values.bench, "lib", "mock-server.mjs"), "--port", "0"], {
  stdio: ["pipe", "pipe", "inherit"],
})
const origin = await new Promise((resolve) => {
  let buf = ""
  mock.stdout.on("data", (d) => {
    buf += d
    const m = /LISTENING (\d+)/.exec(buf)
    if (m) resolve(`http://127.0.0.1:${m[1]}`)
  })
})
const env = { baseURL: `${origin}/v1`, origin, model: "mock", apiKey: "sk-bench-not-a-key" }
const adapter = await import(join(values.bench, "adapters", `${values.peer}.mjs`))

/** Runs task(from), …, task(from + total − 1), `lanes` at a time. */
async function pool(from, total, lanes, task) {
  let next = 0
  const lane = async () => {
    for (let i = next++; i < total; i = next++) await task(from + i)
  }
  await Promise.all(Array.from({ length: Math.min(lanes, total) }, lane))
}
const done = (text) => {
  if (text !== "done") throw new Error(`got ${JSON.stringify(text)}`)
}

const s = await adapter.s4Setup(env)
const warm = []
await pool(0, 300, 32, async (i) => {
  warm[i] = await s.park(i)
})
await pool(0, 300, 32, async (i) => done(await s.resume(warm[i])))
const handles = []
await pool(0, parked, 32, async (i) => {
  handles[i] = await s.park(300 + i)
})
const resume = async (i) => {
  done(await s.resume(handles[i]))
  handles[i] = null
}
await pool(0, 1000, c, resume)
let at = 1000

if (values.profile) {
  const session = new Session()
  session.connect()
  await session.post("HeapProfiler.enable")
  await session.post("HeapProfiler.startSampling", {
    samplingInterval: Number(values.interval),
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  })
  await pool(at, runs, c, resume)
  const { profile } = await session.post("HeapProfiler.stopSampling")
  const own = new Map()
  const name = (f) =>
    `${f.functionName || "(anonymous)"} ${f.url.replace(/^.*\/(node_modules|packages)\//, "$1/")}:${f.lineNumber + 1}`
  let total = 0
  const walk = (node) => {
    const k = name(node.callFrame)
    own.set(k, (own.get(k) ?? 0) + node.selfSize)
    total += node.selfSize
    for (const child of node.children) walk(child)
  }
  walk(profile.head)
  console.log(`${values.peer}, Node ${process.version}: sampled ${(total / runs).toFixed(0)} B per resume`)
  const rows = [...own].filter(([k]) => k.includes(values.filter)).sort((a, b) => b[1] - a[1])
  for (const [k, v] of rows.slice(0, Number(values.top)))
    console.log(`${(v / runs).toFixed(0).padStart(7)}  ${k}`)
} else {
  const per = []
  for (let w = 0; w < windows; w++) {
    globalThis.gc?.()
    await new Promise((resolve) => setImmediate(resolve))
    const before = getHeapStatistics().used_heap_size
    await pool(at, runs, c, resume)
    at += runs
    per.push(((getHeapStatistics().used_heap_size - before) / runs).toFixed(0))
  }
  console.log(
    `${values.peer}, Node ${process.version}, c=${c}: bytes allocated per resume, each window: ${per.join(" ")}`,
  )
}
mock.kill("SIGTERM")
process.exit(0)
