// Client instructions per LLM turn of the plain tool loop (or the approval run), SDK vs floor,
// counted by valgrind's callgrind instead of timed. Instruction counts do not move with the
// other work on a shared machine, so this figure is the steady one where CPU time is noisy.
//
// Each count runs `loop-cpu.mjs` (or `approval-cpu.mjs`) for one variant at concurrency 1 under
// `valgrind --tool=callgrind` with `node --single-threaded` (JIT and GC on the measured thread),
// twice: with --runs SHORT and --runs LONG. The difference divided by the extra turns is the
// steady-state cost of a turn; start-up, warm-up and compilation cancel out. The mock server is
// a forked child that valgrind does not follow.
//
//   node loop-instructions.mjs [--script loop|approval] [--style openai|anthropic|openai-responses|all]
//                              [--short 600] [--long 2400] [--warmup 300] [--jobs 2]
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { STYLES, printRows } from "./harness.mjs"

const { values } = parseArgs({
  options: {
    script: { type: "string", default: "loop" },
    style: { type: "string", default: "all" },
    short: { type: "string", default: "600" },
    long: { type: "string", default: "2400" },
    warmup: { type: "string", default: "300" },
    jobs: { type: "string", default: "2" },
  },
})
const SCRIPTS = { loop: "loop-cpu.mjs", approval: "approval-cpu.mjs" }
const script = SCRIPTS[values.script]
if (!script) throw new Error(`--script must be loop or approval, got ${values.script}`)
const styles = values.style === "all" ? STYLES : [values.style]
for (const s of styles) if (!STYLES.includes(s)) throw new Error(`unknown --style ${s}`)
const [short, long, warmup, jobs] = ["short", "long", "warmup", "jobs"].map((k) => {
  const n = Number(values[k])
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${k} must be a positive integer`)
  return n
})
if (long <= short) throw new Error("--long must be greater than --short")
const TURNS_PER_RUN = 2

/** Instructions valgrind counted for one process (the client only). */
function count(variant, style, runs) {
  const args = [
    "--tool=callgrind",
    "--callgrind-out-file=/dev/null",
    process.execPath,
    "--single-threaded",
    fileURLToPath(new URL(script, import.meta.url)),
    ...["--style", style, "--only", variant, "--concurrency", "1"],
    ...["--runs", String(runs), "--rounds", "1", "--warmup", String(warmup)],
  ]
  return new Promise((resolve, reject) => {
    execFile("valgrind", args, { maxBuffer: 64 << 20 }, (error, _stdout, stderr) => {
      const found = /Collected : (\d+)/.exec(stderr)
      if (error || !found)
        reject(new Error(`valgrind ${variant} ${style} ${runs}: ${error?.message ?? stderr}`))
      else resolve(Number(found[1]))
    })
  })
}

/** Runs the tasks with at most `jobs` valgrind processes at a time. */
async function pool(tasks) {
  const results = new Array(tasks.length)
  let next = 0
  const worker = async () => {
    while (next < tasks.length) {
      const i = next++
      results[i] = await tasks[i]()
    }
  }
  await Promise.all(Array.from({ length: jobs }, worker))
  return results
}

const started = Date.now()
const cells = styles.flatMap((style) => ["sdk", "floor"].map((variant) => ({ style, variant })))
const counts = await pool(
  cells.flatMap(({ style, variant }) => [short, long].map((runs) => () => count(variant, style, runs))),
)
const perTurn = cells.map((_, i) => (counts[2 * i + 1] - counts[2 * i]) / ((long - short) * TURNS_PER_RUN))

console.log(
  `${values.script} instructions per LLM turn (callgrind, client process, c=1, runs ${long} − ${short})`,
)
printRows(
  ["style", "sdk instr/turn", "floor instr/turn", "sdk/floor"],
  styles.map((style, s) => {
    const sdk = perTurn[2 * s]
    const floor = perTurn[2 * s + 1]
    return [style, Math.round(sdk), Math.round(floor), `${(sdk / floor).toFixed(2)}x`]
  }),
)
console.log(`(${((Date.now() - started) / 1000).toFixed(0)} s)`)
