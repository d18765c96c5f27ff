// §7's MCP server row in instructions instead of CPU time (steady on a shared machine where CPU
// time is not): the same call through one `input_required` round as mcp-server.mjs, the
// official v2 server with an in-memory handler against `createMcpServer` over a store host on
// the memory store, each served in a process of its own under `valgrind --tool=callgrind`.
// Each variant runs twice, --short and --long calls (after the same warm-up); the difference
// over the extra calls is the steady cost of a call: start-up, imports, warm-up and most
// compilation cancel out. Both servers are driven in process through their `fetch` handlers,
// so the count holds no HTTP and no client beyond building the requests and reading the replies
// (the same for both).
//
// `--runs N` repeats the short/long pair N times (fresh processes each) and prints each run's
// figures and, per variant, the median with the spread: the official server's count moved by
// ±10 % between runs of one build. `--main-thread` counts the main thread only (callgrind
// `--separate-threads`; the all-threads figure is printed beside it): the official server's
// state codec runs on WebCrypto, whose jobs run on libuv's thread pool.
//
//   node mcp-server-instructions.mjs [--short 200] [--long 1000] [--warmup 200] [--jobs 2]
//                                    [--variants official,toolnexus[,toolnexusBare]]
//                                    [--runs 1] [--main-thread] [--node-flags "…"]
import { execFile } from "node:child_process"
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { pool, printRows } from "./harness.mjs"

const VARIANTS = {
  official: "official v2 server, in-memory handler",
  toolnexus: "createMcpServer over createStoreHost(memory)",
  toolnexusBare: "createMcpServer over a bare in-memory host (the MCP layer alone)",
}

const { values } = parseArgs({
  options: {
    short: { type: "string", default: "200" },
    long: { type: "string", default: "1000" },
    warmup: { type: "string", default: "200" },
    jobs: { type: "string", default: "2" },
    runs: { type: "string", default: "1" },
    "main-thread": { type: "boolean", default: false },
    "node-flags": { type: "string", default: "" },
    variants: { type: "string", default: "official,toolnexus" },
    child: { type: "string" },
    calls: { type: "string" },
  },
})

// Extra flags for the counted processes, both variants alike (e.g. a fixed young generation:
// "--min-semi-space-size=16 --max-semi-space-size=16 --no-memory-reducer").
const nodeFlags = values["node-flags"].split(" ").filter(Boolean)

if (values.child) await child(values.child, Number(values.warmup), Number(values.calls))
else await main()

async function main() {
  const [short, long, warmup, jobs, runs] = ["short", "long", "warmup", "jobs", "runs"].map((k) => {
    const n = Number(values[k])
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${k} must be a positive integer`)
    return n
  })
  if (long <= short) throw new Error("--long must be greater than --short")
  const mainThread = values["main-thread"]
  const variants = values.variants.split(",")
  for (const v of variants) if (!(v in VARIANTS)) throw new Error(`unknown variant ${v}`)
  const started = Date.now()
  const dir = mainThread ? await mkdtemp(join(tmpdir(), "mcp-instructions-")) : undefined
  // Task order: run, variant, short/long; each count is { all, main }.
  const tasks = []
  for (let r = 0; r < runs; r++)
    for (const v of variants)
      for (const calls of [short, long]) tasks.push(() => count(v, warmup, calls, dir))
  const counts = await pool(tasks, jobs)
  if (dir) await rm(dir, { recursive: true, force: true })
  const at = (r, i, calls) => counts[(r * variants.length + i) * 2 + (calls === short ? 0 : 1)]
  const perCall = (r, i, key) => (at(r, i, long)[key] - at(r, i, short)[key]) / (long - short)
  const key = mainThread ? "main" : "all"
  const official = variants.indexOf("official")
  console.log(
    `instructions per call through one input_required round (callgrind, calls ${long} − ${short}, warm-up ${warmup}, ${runs} run(s), ${mainThread ? "main thread" : "all threads"}, Node ${process.version}${nodeFlags.length ? `, ${nodeFlags.join(" ")}` : ""})`,
  )
  const fmt = (n) => Math.round(n).toLocaleString("en-US")
  const rows = []
  for (let r = 0; r < runs; r++)
    for (const [i, v] of variants.entries()) {
      const ratio = official < 0 ? "—" : `${(perCall(r, i, key) / perCall(r, official, key)).toFixed(3)}×`
      rows.push([
        String(r + 1),
        VARIANTS[v],
        fmt(perCall(r, i, key)),
        ...(mainThread ? [fmt(perCall(r, i, "all"))] : []),
        ratio,
      ])
    }
  printRows(["run", "variant", "instr/call", ...(mainThread ? ["all threads"] : []), "vs official"], rows)
  if (runs > 1) {
    const median = (xs) => {
      const s = [...xs].sort((a, b) => a - b)
      return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
    }
    const of = (i) => Array.from({ length: runs }, (_, r) => perCall(r, i, key))
    printRows(
      ["variant", "median", "min", "max", "spread", "median ÷ official median"],
      variants.map((v, i) => {
        const xs = of(i)
        const m = median(xs)
        return [
          VARIANTS[v],
          fmt(m),
          fmt(Math.min(...xs)),
          fmt(Math.max(...xs)),
          `±${(((Math.max(...xs) - Math.min(...xs)) / 2 / m) * 100).toFixed(1)} %`,
          official < 0 ? "—" : `${(m / median(of(official))).toFixed(3)}×`,
        ]
      }),
    )
  }
  console.log(`(${((Date.now() - started) / 1000).toFixed(0)} s)`)
}

/**
 * Instructions valgrind counted for one process serving `calls` calls of `variant`: `all`
 * threads, and with `dir` (--main-thread) also the `main` thread's alone.
 */
function count(variant, warmup, calls, dir) {
  const out = dir && join(dir, `${variant}-${calls}-${Math.random().toString(36).slice(2)}.out`)
  const args = [
    "--tool=callgrind",
    ...(out ? [`--callgrind-out-file=${out}`, "--separate-threads=yes"] : ["--callgrind-out-file=/dev/null"]),
    process.execPath,
    "--single-threaded",
    ...nodeFlags,
    fileURLToPath(import.meta.url),
    ...["--child", variant, "--warmup", String(warmup), "--calls", String(calls)],
  ]
  return new Promise((resolve, reject) => {
    execFile("valgrind", args, { maxBuffer: 64 << 20 }, async (error, _stdout, stderr) => {
      const found = /Collected : (\d+)/.exec(stderr)
      if (error || !found)
        return reject(new Error(`valgrind ${variant} ${calls}: ${error?.message ?? stderr}`))
      const all = Number(found[1])
      // Each count as it comes (stderr), so a run cut short still shows what it counted.
      const report = (main) =>
        console.error(`${variant} ${calls} calls: ${all} all threads${main ? `, ${main} main` : ""}`)
      if (!out) {
        report()
        return resolve({ all })
      }
      // One file per thread, `<out>-01` the main thread's.
      const text = await readFile(`${out}-01`, "utf8").catch(() => "")
      const main = /^summary: (\d+)/m.exec(text) ?? /^totals: (\d+)/m.exec(text)
      const base = out.slice(out.lastIndexOf("/") + 1)
      for (const f of await readdir(dir)) if (f.startsWith(base)) await rm(join(dir, f), { force: true })
      if (!main) return reject(new Error(`no main-thread count in ${out}-01`))
      report(Number(main[1]))
      resolve({ all, main: Number(main[1]) })
    })
  })
}

/** The counted process: sets up `variant`, warms it up, serves `calls` calls, exits. */
async function child(variant, warmup, calls) {
  const variants = await import("./mcp-variants.mjs")
  const server = await variants[variant]()
  for (let i = 0; i < warmup; i++) await variants.round(server.fetch, i)
  for (let i = 0; i < calls; i++) await variants.round(server.fetch, i)
  await server.close()
}
