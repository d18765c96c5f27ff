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
//   node mcp-server-instructions.mjs [--short 200] [--long 1000] [--warmup 200] [--jobs 2]
//                                    [--variants official,toolnexus[,toolnexusBare]]
import { execFile } from "node:child_process"
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
    variants: { type: "string", default: "official,toolnexus" },
    child: { type: "string" },
    calls: { type: "string" },
  },
})

if (values.child) await child(values.child, Number(values.warmup), Number(values.calls))
else await main()

async function main() {
  const [short, long, warmup, jobs] = ["short", "long", "warmup", "jobs"].map((k) => {
    const n = Number(values[k])
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${k} must be a positive integer`)
    return n
  })
  if (long <= short) throw new Error("--long must be greater than --short")
  const variants = values.variants.split(",")
  for (const v of variants) if (!(v in VARIANTS)) throw new Error(`unknown variant ${v}`)
  const started = Date.now()
  const tasks = variants.flatMap((v) => [short, long].map((calls) => () => count(v, warmup, calls)))
  const counts = await pool(tasks, jobs)
  const perCall = Object.fromEntries(
    variants.map((v, i) => [v, (counts[2 * i + 1] - counts[2 * i]) / (long - short)]),
  )
  console.log(
    `instructions per call through one input_required round (callgrind, calls ${long} − ${short}, warm-up ${warmup}, Node ${process.version})`,
  )
  printRows(
    ["variant", "instr/call", "vs official"],
    variants.map((v) => [
      VARIANTS[v],
      Math.round(perCall[v]),
      perCall.official ? `${(perCall[v] / perCall.official).toFixed(3)}×` : "—",
    ]),
  )
  console.log(`(${((Date.now() - started) / 1000).toFixed(0)} s)`)
}

/** Instructions valgrind counted for one process serving `calls` calls of `variant`. */
function count(variant, warmup, calls) {
  const args = [
    "--tool=callgrind",
    "--callgrind-out-file=/dev/null",
    process.execPath,
    "--single-threaded",
    fileURLToPath(import.meta.url),
    ...["--child", variant, "--warmup", String(warmup), "--calls", String(calls)],
  ]
  return new Promise((resolve, reject) => {
    execFile("valgrind", args, { maxBuffer: 64 << 20 }, (error, _stdout, stderr) => {
      const found = /Collected : (\d+)/.exec(stderr)
      if (error || !found) reject(new Error(`valgrind ${variant} ${calls}: ${error?.message ?? stderr}`))
      else resolve(Number(found[1]))
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
