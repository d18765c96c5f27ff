// The shared bench's S2 and S4 rows counted instead of timed, through the shared bench's own
// adapter files and mock server (a copy of ../shared/bench after `npm ci`), so that two builds
// can be compared on a loaded machine.
//
// s2 — CPU per approval run (a new client per run, as the bench's `ours.mjs` does): each
//   (peer, checkout) runs `shared-rows-child.mjs` under `valgrind --tool=callgrind` with
//   `node --single-threaded` twice, with --short and --long runs after the same warm-up; the
//   difference over the extra runs is the instructions one approval run costs.
// s4r — instructions per resume of S4's resume-all (10,000 parked at c=32, resumed at c=32): the
//   bench's S4 warm-up, then --parked runs parked and --short or --long of them resumed, each
//   process under callgrind; the difference over the extra resumes is one resume's cost.
// s4t — the resume-all row's instructions per resume on every thread, the mock's included (the
//   row is wall-clock throughput on two cores, so the mock server's work and the client's GC and
//   compiler threads share them): the worker's own S4 sequence (`s4w`: warm-up, --parked parked,
//   forced collections, the unmeasured re-warm), then --short or --long resumes; each run gets
//   its own mock, and both processes run under callgrind with `--separate-threads=yes`. Prints,
//   per resume (the difference over the extra resumes), the client's main thread, its other
//   threads, and the mock's.
// s4gc — the same window's collections (`--trace-gc-nvp`, no valgrind): per resume, collections
//   of each kind, their pause, and the bytes allocated (the heap used at the window's end less
//   at its start, plus what each collection inside it freed), median of --samples processes.
// s4 — heap per parked run: the bench's S4 parking (10,000 runs at c=32 after 300 warm-up runs),
//   heap and external bytes after forced collections, --samples processes per column, median.
//
//   node shared-rows.mjs --bench <bench copy> --scenario s2|s4r|s4t|s4gc|s4 [--peers floor,ours]
//     [--ours label=<checkout>,label=<checkout>] [--short 200] [--long 1000] [--warmup 100]
//     [--parked 10000] [--samples 3] [--jobs 2] [--snapshot-dir <dir>] [--deps <dir>] [--keep <dir>]
//
// `--deps` runs the adapters from the bench's second dependency set (e.g. `node24`, under the
// Node that runs this script), as the bench's `run.mjs --deps` does: adapters/ and lib/ are copied
// into `<deps>/.harness/rows-<pid>/` (removed at exit). `--keep <dir>` keeps each callgrind
// profile there (`callgrind_annotate --inclusive=yes` reads them).
//
// `--ours` names the checkouts (the folder holding packages/, built) that `ours.mjs` runs
// from, each its own column (default: this checkout).
import { execFile, spawn } from "node:child_process"
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"

const { values } = parseArgs({
  options: {
    bench: { type: "string" },
    scenario: { type: "string", default: "s2" },
    peers: { type: "string", default: "floor,ours" },
    ours: { type: "string" },
    short: { type: "string", default: "200" },
    long: { type: "string", default: "1000" },
    warmup: { type: "string", default: "100" },
    parked: { type: "string", default: "10000" },
    samples: { type: "string", default: "3" },
    jobs: { type: "string", default: "2" },
    "snapshot-dir": { type: "string" },
    deps: { type: "string" },
    keep: { type: "string" },
  },
})
if (!values.bench) throw new Error("--bench <a copy of the shared bench, after npm ci>")
const here = fileURLToPath(new URL(".", import.meta.url))
const checkouts = (values.ours ?? `this=${join(here, "..")}`).split(",").map((s) => {
  const at = s.indexOf("=")
  return at < 0 ? { label: s, root: s } : { label: s.slice(0, at), root: s.slice(at + 1) }
})
const columns = values.peers
  .split(",")
  .flatMap((peer) =>
    peer === "ours"
      ? checkouts.map((c) => ({ name: `ours(${c.label})`, peer, root: c.root }))
      : [{ name: peer, peer, root: checkouts[0].root }],
  )

let harness = values.bench
if (values.deps) {
  harness = join(resolve(values.bench, values.deps), ".harness", `rows-${process.pid}`)
  for (const d of ["lib", "adapters"]) cpSync(join(values.bench, d), join(harness, d), { recursive: true })
  process.on("exit", () => rmSync(harness, { recursive: true, force: true }))
}

const KEEP_ALIVE_PATCH = `import http from "node:http"
const listen = http.Server.prototype.listen
http.Server.prototype.listen = function (...a) { this.keepAliveTimeout = 600000; return listen.apply(this, a) }`
/**
 * Starts the bench's mock server (under `prefix`, e.g. valgrind, when given); resolves its
 * origin and a `stop()` that ends it with SIGTERM (it closes and exits 0) and waits for its exit.
 */
async function startMock(prefix = []) {
  // Under valgrind the mock is ~50× slower, so its 5 s keep-alive timeout closed connections the
  // client had just picked for a request ("other side closed", and the bench's clients have
  // `retries: 0`): it gets ten minutes, for every column alike.
  const keepAlive = prefix.length
    ? ["--import", `data:text/javascript,${encodeURIComponent(KEEP_ALIVE_PATCH)}`]
    : []
  const argv = [
    ...prefix,
    process.execPath,
    ...keepAlive,
    join(values.bench, "lib", "mock-server.mjs"),
    "--port",
    "0",
  ]
  const mock = spawn(argv[0], argv.slice(1), { stdio: ["pipe", "pipe", "inherit"] })
  process.on("exit", () => mock.exitCode === null && mock.kill("SIGTERM"))
  const exited = new Promise((resolve) => mock.on("exit", resolve))
  const origin = await new Promise((resolve, reject) => {
    let buf = ""
    mock.stdout.on("data", (d) => {
      buf += d
      const m = /LISTENING (\d+)/.exec(buf)
      if (m) resolve(`http://127.0.0.1:${m[1]}`)
    })
    mock.on("exit", (c) => reject(new Error(`mock exited (${c})`)))
  })
  return {
    origin,
    stop: () => {
      mock.kill("SIGTERM")
      return exited
    },
  }
}
const { origin } = await startMock()

const child = fileURLToPath(new URL("shared-rows-child.mjs", import.meta.url))
function run(cmd, args, root) {
  return new Promise((resolve, reject) => {
    execFile(
      cmd,
      args,
      { maxBuffer: 64 << 20, env: { ...process.env, TN_OURS: root } },
      (error, stdout, stderr) =>
        error
          ? reject(new Error(`${cmd} ${args.join(" ")}: ${error.message}\n${stderr}`))
          : resolve({ stdout, stderr }),
    )
  })
}
async function pool(tasks, jobs) {
  const out = new Array(tasks.length)
  let next = 0
  await Promise.all(
    Array.from({ length: jobs }, async () => {
      while (next < tasks.length) {
        const i = next++
        out[i] = await tasks[i]()
      }
    }),
  )
  return out
}
const median = (xs) => {
  const a = xs.slice().sort((p, q) => p - q)
  return a.length % 2 ? a[a.length >> 1] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2
}
/**
 * The `--trace-gc-nvp` lines between the child's `MARK start` and `MARK end`: per resume, the
 * collections of each kind, their pause (µs), and the bytes allocated (heap used at the end less
 * at the start, plus what each collection in between took off the heap).
 */
function gcWindow(stdout, runs) {
  const lines = stdout.split("\n")
  const from = lines.findIndex((l) => l.startsWith("MARK start"))
  const to = lines.findIndex((l) => l.startsWith("MARK end"))
  if (from < 0 || to < from) throw new Error("s4gc: no MARK lines")
  const used = (l) => Number(l.split(" ")[3])
  const field = (l, k) => Number(new RegExp(` ${k}=([^ ]+)`).exec(l)?.[1] ?? Number.NaN)
  const w = {
    bytes: used(lines[to]) - used(lines[from]),
    scavenges: 0,
    minorMs: 0,
    markCompacts: 0,
    pauseUs: 0,
  }
  for (const l of lines.slice(from + 1, to)) {
    const kind = / gc=([a-z]+)/.exec(l)?.[1]
    if (kind === undefined) continue
    if (kind === "s") w.scavenges++
    else if (kind === "mmc" || kind === "mms") w.minorMs++
    else w.markCompacts++
    w.pauseUs += field(l, "pause") * 1000
    // Node 24's names, else Node 20's
    const before = / start_object_size=/.test(l) ? "start_object_size" : "total_size_before"
    const after = / end_object_size=/.test(l) ? "end_object_size" : "total_size_after"
    w.bytes += field(l, before) - field(l, after)
  }
  w.bytes /= runs
  w.pauseUs /= runs
  for (const k of ["scavenges", "minorMs", "markCompacts"]) w[k] *= 1000 / runs
  return w
}
const adapterOf = (col) => join(harness, "adapters", `${col.peer}.mjs`)
/** callgrind's arguments: its profile kept under --keep as <column>-<scenario>-<n>, else dropped. */
const callgrind = (col, scenario, n) => [
  "--tool=callgrind",
  `--callgrind-out-file=${values.keep ? join(values.keep, `${col.name}-${scenario}-${n}.out`) : "/dev/null"}`,
]
const jobs = Number(values.jobs)
const started = Date.now()

/**
 * Counts each column at --short and --long runs of `scenario` (its own arguments in `args`) and
 * prints the instructions per run: the difference over the extra runs.
 */
async function perRun(scenario, args, title) {
  const short = Number(values.short)
  const long = Number(values.long)
  const count = async (col, runs) => {
    const argv = [...callgrind(col, scenario, runs), process.execPath, "--single-threaded"]
    argv.push(child, "--adapter", adapterOf(col), "--origin", origin, "--scenario", scenario)
    argv.push(...args, "--runs", String(runs))
    const { stderr } = await run("valgrind", argv, col.root)
    const found = /Collected : (\d+)/.exec(stderr)
    if (!found) throw new Error(`no count: ${stderr}`)
    return Number(found[1])
  }
  const counts = await pool(
    columns.flatMap((col) => [short, long].map((n) => () => count(col, n))),
    jobs,
  )
  console.log(`${title} (callgrind, runs ${long} − ${short}; Node ${process.version})`)
  const floorAt = columns.findIndex((c) => c.peer === "floor")
  const per = columns.map((_, i) => (counts[2 * i + 1] - counts[2 * i]) / (long - short))
  for (const [i, col] of columns.entries()) {
    const ratio = floorAt >= 0 && i !== floorAt ? ` (${(per[i] / per[floorAt]).toFixed(3)}× floor)` : ""
    console.log(`${col.name.padEnd(24)} ${Math.round(per[i]).toLocaleString("en")}${ratio}`)
  }
}

if (values.scenario === "s2") {
  await perRun(
    "s2",
    ["--warmup", values.warmup],
    `S2: instructions per approval run, warm-up ${values.warmup}`,
  )
} else if (values.scenario === "s4r") {
  await perRun("s4r", ["--parked", values.parked], `S4: instructions per resume, ${values.parked} parked`)
} else if (values.scenario === "s4t") {
  const short = Number(values.short)
  const long = Number(values.long)
  const dir = values.keep ?? mkdtempSync(join(tmpdir(), "s4t-"))
  /** Instructions of each thread of the profile `file` (callgrind writes `<file>-01`, `-02`, … per thread). */
  const threads = (file) =>
    readdirSync(dir)
      .filter((f) => f.startsWith(`${file}-`))
      .sort()
      .map((f) => Number(/^(?:summary|totals): (\d+)/m.exec(readFileSync(join(dir, f), "utf8"))[1]))
  const count = async (col, runs) => {
    const name = `${col.name}-s4t-${runs}`
    const grind = (who) => [
      "valgrind",
      "--tool=callgrind",
      "--separate-threads=yes",
      `--callgrind-out-file=${join(dir, `${name}-${who}`)}`,
    ]
    const mock = await startMock(grind("mock"))
    const argv = [
      ...grind("client").slice(1),
      process.execPath,
      "--expose-gc",
      child,
      "--adapter",
      adapterOf(col),
    ]
    argv.push("--origin", mock.origin, "--scenario", "s4w", "--parked", values.parked, "--runs", String(runs))
    await run("valgrind", argv, col.root)
    await mock.stop()
    const client = threads(`${name}-client`)
    const server = threads(`${name}-mock`)
    const sum = (xs) => xs.reduce((a, b) => a + b, 0)
    return { main: client[0], other: sum(client.slice(1)), mock: sum(server), nThreads: client.length }
  }
  const counts = await pool(
    columns.flatMap((col) => [short, long].map((n) => () => count(col, n))),
    jobs,
  )
  if (!values.keep) rmSync(dir, { recursive: true, force: true })
  console.log(
    `S4 resume-all: instructions per resume by thread (callgrind --separate-threads=yes, ${values.parked} parked, window resumes ${long} − ${short}; Node ${process.version})`,
  )
  const keys = ["main", "other", "mock"]
  const per = columns.map((_, i) => {
    const o = Object.fromEntries(
      keys.map((k) => [k, (counts[2 * i + 1][k] - counts[2 * i][k]) / (long - short)]),
    )
    o.client = o.main + o.other
    o.all = o.client + o.mock
    return o
  })
  const floorAt = columns.findIndex((c) => c.peer === "floor")
  console.log(
    `${"".padEnd(24)} ${["main thread", "other threads", "client", "mock", "client + mock"].map((h) => h.padStart(16)).join("")}`,
  )
  for (const [i, col] of columns.entries()) {
    const cell = (k) => {
      const r = floorAt >= 0 && i !== floorAt ? ` ${(per[i][k] / per[floorAt][k]).toFixed(2)}×` : ""
      return `${Math.round(per[i][k]).toLocaleString("en")}${r}`.padStart(16)
    }
    console.log(
      `${col.name.padEnd(24)} ${["main", "other", "client", "mock", "all"].map(cell).join("")}  (threads: ${counts[2 * i].nThreads}, ${counts[2 * i + 1].nThreads})`,
    )
  }
} else if (values.scenario === "s4gc") {
  const samples = Number(values.samples)
  const runs = Number(values.long)
  const tasks = []
  for (let s = 0; s < samples; s++)
    for (const [i, col] of columns.entries())
      tasks.push(async () => {
        const args = ["--expose-gc", "--trace-gc-nvp", child, "--adapter", adapterOf(col), "--origin", origin]
        args.push("--scenario", "s4w", "--parked", values.parked, "--runs", String(runs), "--mark")
        const { stdout } = await run(process.execPath, args, col.root)
        return { col: i, ...gcWindow(stdout, runs) }
      })
  const rows = await pool(tasks, 1)
  console.log(
    `S4 resume-all: collections per resume in the window (${values.parked} parked, ${runs} resumes after the re-warm, median of ${samples}; Node ${process.version})`,
  )
  for (const [i, col] of columns.entries()) {
    const mine = rows.filter((r) => r.col === i)
    const f = (k, d = 0) => median(mine.map((r) => r[k])).toFixed(d)
    console.log(
      `${col.name.padEnd(24)} allocated ${f("bytes")} B/resume; per 1000 resumes: scavenges ${f("scavenges", 2)}, minor MS ${f("minorMs", 2)}, mark-compacts ${f("markCompacts", 2)}; pause ${f("pauseUs", 2)} µs/resume  [bytes ${mine.map((r) => r.bytes.toFixed(0)).join(", ")}]`,
    )
  }
} else if (values.scenario === "s4") {
  const samples = Number(values.samples)
  const tasks = []
  for (let s = 0; s < samples; s++)
    for (const [i, col] of columns.entries())
      tasks.push(async () => {
        const args = [
          "--expose-gc",
          child,
          "--adapter",
          adapterOf(col),
          "--origin",
          origin,
          "--scenario",
          "s4",
        ]
        args.push("--parked", values.parked)
        if (values["snapshot-dir"] && s === 0)
          args.push("--snapshot", join(values["snapshot-dir"], `${col.name}.heapsnapshot`))
        const { stdout } = await run(process.execPath, args, col.root)
        return { col: i, ...JSON.parse(/HEAP (.*)/.exec(stdout)[1]) }
      })
  // one at a time by default: a heap reading is per process, but parking is timed by nothing
  const rows = await pool(tasks, Math.min(jobs, 2))
  console.log(`S4: bytes per parked run after forced GC (${values.parked} parked, median of ${samples})`)
  for (const [i, col] of columns.entries()) {
    const mine = rows.filter((r) => r.col === i)
    const f = (k) => median(mine.map((r) => r[k])).toFixed(0)
    console.log(
      `${col.name.padEnd(24)} heap ${f("heap")} B, external ${f("external")} B, retained ${f("retained")} B  [${mine.map((r) => r.retained.toFixed(0)).join(", ")}]`,
    )
  }
} else throw new Error("--scenario must be s2, s4r, s4t, s4gc or s4")
console.log(`(${((Date.now() - started) / 1000).toFixed(0)} s)`)
process.exit(0)
