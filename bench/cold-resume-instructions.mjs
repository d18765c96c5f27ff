// Fresh process → the resumed run's first LLM request (the shared bench's S3 "TTFR cold"),
// counted in instructions by valgrind's callgrind instead of timed, so that it can be compared
// on a loaded machine. Each variant runs `cold-resume-child.mjs` twice under callgrind: once
// stopping right after its imports, once stopping when the first request has been sent; the
// difference is the work from t0 (after the imports) to the request. The parent parks the runs
// first: the SDK with `client.ask` on a SqliteStore, the floor as the shared bench's floor does
// (the messages array as JSON in one row). Also printed: the import counts (the process's
// start-up and module loading, the part the shared bench reports as `import_ms`).
//
// The t0 → request window is counted inside one process: the child marks its two ends and
// callgrind dumps its counts at each mark (`--dump-before=kill`). With `--warm`, also the
// second resume in the same process (the shared bench's S3 "TTFR warm"): from the end of a
// first resume to the second one's request.
//
// With `--main-thread`, the windows count the main thread only (callgrind `--separate-threads`):
// V8 tiers up undici's llhttp WebAssembly with TurboFan on a platform worker thread, and that
// compile (7–15 M, the same work for both sides) lands in whichever window is running, beside
// a main thread that does not wait for it.
//
// `--from setup` starts the window before the store, client and toolkit are made, as the shared
// bench does (its t0 comes before the adapter's s3Setup2); by default it starts after them.
//
// `--from import` starts the window before the imports instead (after better-sqlite3, which the
// shared bench's worker loads for every peer before the adapter): §7's "import + the resumed
// run's first LLM request". It also counts the imports alone in a window of their own (the
// same start, the end right after them; "start + imports" is the whole process).
//
// `--v8-flags=<flags>` (space-separated, after `=`) passes V8 flags to every child, both sides: `--min-semi-space-size=32`
// keeps the young generation from filling before the request, so no scavenge falls into the
// window (one costs ~5.5 M on Node 24; whether it falls there moves with every allocation
// before it, so a build can read 5 M worse without compiling more).
//
//   node cold-resume-instructions.mjs [--samples 1] [--jobs 2] [--warm] [--main-thread] [--from t0|setup|import]
//     [--v8-flags=--min-semi-space-size=32]
import { execFile } from "node:child_process"
import { readFile } from "node:fs/promises"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { CHILD, TOOLS, parkColdRuns } from "./cold-park.mjs"
import { printRows } from "./harness.mjs"

const { values } = parseArgs({
  options: {
    samples: { type: "string", default: "1" },
    jobs: { type: "string", default: "2" },
    warm: { type: "boolean", default: false },
    "main-thread": { type: "boolean", default: false },
    from: { type: "string", default: "t0" },
    "v8-flags": { type: "string", default: "" },
  },
})
const v8Flags = values["v8-flags"].split(" ").filter(Boolean)
// `--from setup`: t0 before the setup (store, client, toolkit), where the shared bench takes it;
// `--from import`: before the imports.
const REQUEST = { setup: "setup", import: "import" }[values.from] ?? "request"
const IMPORTS = values.from === "import" ? ["imported", "imports"] : ["imported"]
const samples = Number(values.samples)
const jobs = Number(values.jobs)
const mainThread = values["main-thread"]
// Park the runs of every sample: `run-<s>` (imported, request), and with --warm `<s>-b` and
// `<s>-c` (warm).
const ids = []
for (let i = 0; i < samples; i++) ids.push(`run-${i}`, ...(values.warm ? [`${i}-b`, `${i}-c`] : []))
const parked = await parkColdRuns(ids, "toolnexus-cold-")
const { dir, paths } = parked

let runs = 0
function count(mode, stop, id, id2) {
  const cfg = { path: paths[mode], id, id2, baseUrl: parked.baseUrl, tools: TOOLS }
  // `imported`: the whole process; otherwise the part between the child's two marks, which is
  // the second of the dumps callgrind writes at them (`<out>.2`).
  const out = join(dir, `callgrind-${runs++}.out`)
  const args = [
    "--tool=callgrind",
    stop === "imported" ? "--callgrind-out-file=/dev/null" : `--callgrind-out-file=${out}`,
    ...(stop === "imported" ? [] : ["--dump-before=kill"]),
    ...(stop !== "imported" && mainThread ? ["--separate-threads=yes"] : []),
    process.execPath,
    "--single-threaded",
    ...v8Flags,
    CHILD,
    mode,
    stop,
    JSON.stringify(cfg),
  ]
  return new Promise((resolve, reject) => {
    execFile("valgrind", args, { maxBuffer: 64 << 20 }, async (error, _stdout, stderr) => {
      const found =
        stop === "imported"
          ? /Collected : (\d+)/.exec(stderr)
          : /^summary: (\d+)/m.exec(
              await readFile(`${out}.2${mainThread ? "-01" : ""}`, "utf8").catch(() => ""),
            )
      if (error || !found) reject(new Error(`valgrind ${mode} ${stop}: ${error?.message ?? stderr}`))
      else resolve(Number(found[1]))
    })
  })
}
const tasks = []
for (let s = 0; s < samples; s++)
  for (const mode of ["sdk", "floor"]) {
    for (const stop of [...IMPORTS, REQUEST]) tasks.push({ mode, stop, id: `run-${s}` })
    if (values.warm) {
      tasks.push({ mode, stop: "warm", id: `${s}-b`, id2: `${s}-c` })
    }
  }
const results = new Array(tasks.length)
let next = 0
await Promise.all(
  Array.from({ length: jobs }, async () => {
    while (next < tasks.length) {
      const i = next++
      const t = tasks[i]
      results[i] = await count(t.mode, t.stop, t.id, t.id2)
    }
  }),
)
await parked.close()

const samplesOf = (mode, stop) => results.filter((_, i) => tasks[i].mode === mode && tasks[i].stop === stop)
const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const of = (mode, stop) => median(results.filter((_, i) => tasks[i].mode === mode && tasks[i].stop === stop))
const toRequest = (mode) => of(mode, REQUEST)
const warm = (mode) => of(mode, "warm")
const M = (n) => `${(n / 1e6).toFixed(mainThread ? 2 : 1)} M`
console.log(
  `cold resume, t0 → first LLM request sent (callgrind, ${samples} sample(s), median${mainThread ? ", main thread" : ""}${v8Flags.length ? `, ${v8Flags.join(" ")}` : ""})`,
)
printRows(
  ["", "sdk", "floor", "sdk/floor"],
  [
    [
      REQUEST === "import" ? "import + t0 → request" : "t0 → request",
      M(toRequest("sdk")),
      M(toRequest("floor")),
      `${(toRequest("sdk") / toRequest("floor")).toFixed(2)}x`,
    ],
    ...(values.warm
      ? [
          [
            "second resume → request",
            M(warm("sdk")),
            M(warm("floor")),
            `${(warm("sdk") / warm("floor")).toFixed(2)}x`,
          ],
        ]
      : []),
    ...(REQUEST === "import"
      ? [
          [
            "imports (window)",
            M(of("sdk", "imports")),
            M(of("floor", "imports")),
            `${(of("sdk", "imports") / of("floor", "imports")).toFixed(2)}x`,
          ],
        ]
      : []),
    [
      "start + imports",
      M(of("sdk", "imported")),
      M(of("floor", "imported")),
      `${(of("sdk", "imported") / of("floor", "imported")).toFixed(2)}x`,
    ],
  ],
)
// Single samples of one window move by several M (a collection or a timer falling inside it or
// not), so every sample is shown beside the medians.
if (samples > 1)
  for (const mode of ["sdk", "floor"])
    for (const [stop, label] of [
      [REQUEST, "t0 → request"],
      ...(values.warm ? [["warm", "second resume"]] : []),
    ])
      console.log(`${mode} ${label}, each sample: ${samplesOf(mode, stop).map(M).join(", ")}`)
