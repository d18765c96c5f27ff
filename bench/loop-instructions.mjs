// Client instructions per LLM turn of the plain tool loop, SDK vs floor, counted by valgrind's
// callgrind instead of timed: the SDK's own code per turn, steady on a shared machine where CPU
// time is not.
//
// It counts `inproc-loop.mjs` (the loop against an in-process fake `fetch`, OpenAI chat
// replies) under `valgrind --tool=callgrind` with `node --single-threaded` (JIT and GC on the
// counted thread), twice per variant: --runs SHORT and --runs LONG. The difference over the
// extra turns is the steady cost of a turn; start-up and compilation cancel out. Why no
// network: a process that waits on sockets runs timer and idle-time work (GC heuristics) in
// proportion to wall time, which valgrind stretches, and the counts then move with the load.
//
// `--scenario approval` counts the approval run of approval-cpu.mjs the same way.
//
//   node loop-instructions.mjs [--short 2000] [--long 10000] [--jobs 2] [--scenario loop|approval]
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { pool, printRows } from "./harness.mjs"

const { values } = parseArgs({
  options: {
    short: { type: "string", default: "2000" },
    long: { type: "string", default: "10000" },
    jobs: { type: "string", default: "2" },
    scenario: { type: "string", default: "loop" },
  },
})
const [short, long, jobs] = ["short", "long", "jobs"].map((k) => {
  const n = Number(values[k])
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${k} must be a positive integer`)
  return n
})
if (long <= short) throw new Error("--long must be greater than --short")
const TURNS_PER_RUN = 2

/** Instructions valgrind counted for one process. */
function count(variant, runs) {
  const args = [
    "--tool=callgrind",
    "--callgrind-out-file=/dev/null",
    process.execPath,
    "--single-threaded",
    fileURLToPath(new URL("inproc-loop.mjs", import.meta.url)),
    ...["--only", variant, "--runs", String(runs), "--scenario", values.scenario],
  ]
  return new Promise((resolve, reject) => {
    execFile("valgrind", args, { maxBuffer: 64 << 20 }, (error, _stdout, stderr) => {
      const found = /Collected : (\d+)/.exec(stderr)
      if (error || !found) reject(new Error(`valgrind ${variant} ${runs}: ${error?.message ?? stderr}`))
      else resolve(Number(found[1]))
    })
  })
}

const started = Date.now()
const variants = ["sdk", "floor"]
const counts = await pool(
  variants.flatMap((v) => [short, long].map((runs) => () => count(v, runs))),
  jobs,
)
const perTurn = variants.map((_, i) => (counts[2 * i + 1] - counts[2 * i]) / ((long - short) * TURNS_PER_RUN))

console.log(
  `instructions per LLM turn, in-process ${values.scenario} (callgrind, runs ${long} − ${short}, openai replies)`,
)
printRows(
  ["sdk instr/turn", "floor instr/turn", "sdk − floor", "sdk/floor"],
  [
    [
      Math.round(perTurn[0]),
      Math.round(perTurn[1]),
      Math.round(perTurn[0] - perTurn[1]),
      `${(perTurn[0] / perTurn[1]).toFixed(2)}x`,
    ],
  ],
)
console.log(`(${((Date.now() - started) / 1000).toFixed(0)} s)`)
