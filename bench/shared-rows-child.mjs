// One process of `shared-rows.mjs`: the shared bench's S2 or S4 driven through one of its own
// adapter files (`<bench copy>/adapters/<peer>.mjs`), against its mock server, counted rather
// than timed.
//
//   node --expose-gc shared-rows-child.mjs --adapter <file> --origin <url> --scenario s2 --warmup W --runs N
//   node --expose-gc shared-rows-child.mjs --adapter <file> --origin <url> --scenario s4 --parked N [--snapshot <file>]
//   node shared-rows-child.mjs --adapter <file> --origin <url> --scenario s4r --parked N --runs R
//   node --expose-gc shared-rows-child.mjs --adapter <file> --origin <url> --scenario s4w --parked N --runs R [--mark]
//
// s2: W approval runs, then N more (the caller counts the process's instructions at two N and
// subtracts). s4: as the shared bench's worker: park and resume 300 runs at c=32, then park N at
// c=32 and print the heap bytes they hold after forced collections (`HEAP <json>`); with
// --snapshot, a V8 heap snapshot is written after the reading. s4r: the same warm-up, then park N
// at c=32 and resume the first R of them at c=32 (the caller counts at two R, same N, and
// subtracts: the instructions one resume of the resume-all row costs). s4w: the shared bench
// worker's own S4 sequence up to its timed window (warm-up, park N, forced collections, the
// unmeasured re-warm of min(1000, N/10) resumes), then R resumes of the window; with --mark it
// writes `MARK start|end <epoch ms> <used heap bytes>` to fd 1 around those R (synchronously, so
// the lines fall between the `--trace-gc-nvp` lines V8 prints there).
import { writeSync } from "node:fs"
import { getHeapStatistics } from "node:v8"
import { performance } from "node:perf_hooks"
import { writeHeapSnapshot } from "node:v8"
import { parseArgs } from "node:util"

const { values } = parseArgs({
  options: {
    adapter: { type: "string" },
    origin: { type: "string" },
    scenario: { type: "string" },
    warmup: { type: "string", default: "100" },
    runs: { type: "string", default: "0" },
    parked: { type: "string", default: "10000" },
    snapshot: { type: "string" },
    mark: { type: "boolean", default: false },
  },
})
const env = {
  baseURL: `${values.origin}/v1`,
  origin: values.origin,
  model: "mock",
  apiKey: "sk-bench-not-a-key",
}
const adapter = await import(values.adapter)

async function pool(total, concurrency, task) {
  let next = 0
  const results = new Array(total)
  async function lane() {
    while (true) {
      const i = next++
      if (i >= total) return
      results[i] = await task(i)
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, lane))
  return results
}
function collect() {
  for (let i = 0; i < 4; i++) globalThis.gc()
}
const done = (text) => {
  if (text !== "done") throw new Error(`got ${JSON.stringify(text)}`)
}

/** S4's set-up and warm-up, as the shared bench's worker does them: park and resume 300 at c=32. */
async function s4Warm() {
  const s = await adapter.s4Setup(env)
  const w = 300
  const wh = await pool(w, 32, (i) => s.park(i))
  await pool(w, 32, async (i) => done(await s.resume(wh[i])))
  return { s, w }
}

if (values.scenario === "s2") {
  const s = await adapter.s2Setup(env)
  const n = Number(values.warmup) + Number(values.runs)
  for (let i = 0; i < n; i++) done(await s.approve(await s.start()))
  process.exit(0)
} else if (values.scenario === "s4") {
  const { s, w } = await s4Warm()
  const n = Number(values.parked)
  const handles = new Array(n)
  await new Promise((r) => setTimeout(r, 50))
  collect()
  const m0 = process.memoryUsage()
  await pool(n, 32, async (i) => {
    handles[i] = await s.park(w + i)
  })
  await new Promise((r) => setTimeout(r, 50))
  collect()
  const m1 = process.memoryUsage()
  console.log(
    `HEAP ${JSON.stringify({
      heap: (m1.heapUsed - m0.heapUsed) / n,
      external: (m1.external - m0.external) / n,
      retained: (m1.heapUsed - m0.heapUsed + m1.external - m0.external) / n,
    })}`,
  )
  globalThis.keep = handles
  if (values.snapshot) writeHeapSnapshot(values.snapshot)
  process.exit(0)
} else if (values.scenario === "s4r") {
  if (Number(values.runs) > Number(values.parked)) throw new Error("s4r: --runs must not exceed --parked")
  const { s, w } = await s4Warm()
  const n = Number(values.parked)
  const handles = await pool(n, 32, (i) => s.park(w + i))
  await pool(Number(values.runs), 32, async (i) => {
    done(await s.resume(handles[i]))
    handles[i] = null
  })
  process.exit(0)
} else if (values.scenario === "s4w") {
  const { s, w } = await s4Warm()
  const n = Number(values.parked)
  const runs = Number(values.runs)
  const rewarm = Math.min(1000, Math.floor(n / 10))
  if (runs > n - rewarm) throw new Error(`s4w: --runs must not exceed ${n - rewarm}`)
  const handles = await pool(n, 32, (i) => s.park(w + i))
  await new Promise((r) => setTimeout(r, 50))
  collect()
  const resume = async (i) => {
    done(await s.resume(handles[i]))
    handles[i] = null
  }
  await pool(rewarm, 32, resume)
  const mark = (what) => {
    if (values.mark)
      writeSync(
        1,
        `MARK ${what} ${performance.timeOrigin + performance.now()} ${getHeapStatistics().used_heap_size}\n`,
      )
  }
  mark("start")
  await pool(runs, 32, (j) => resume(rewarm + j))
  mark("end")
  process.exit(0)
} else throw new Error("--scenario must be s2, s4, s4r or s4w")
