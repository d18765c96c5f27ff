// Fresh-process resume: a run parked in SQLite is resumed by a brand-new `node` process, as a
// worker started by a webhook would. Measured per sample (one process each): the module
// import time, and the time from the answer (right after the imports) to the resumed run's
// first LLM request as the mock endpoint receives it; their sum is the §7 figure. Compared
// with the floor: a fresh process that opens the same SQLite file with better-sqlite3, reads
// the transcript and pending request, repairs the halted turn and sends the same request
// with undici.
//
// The parent parks the conversations first (`client.ask(prompt, {toolkit, id})` on a
// SqliteStore, against the forked mock endpoint), then spawns `fresh-resume-child.mjs` once
// per sample, alternating sdk and floor. The SDK child resumes with
// `askWithAnswer(client, {toolkit, id, answer})` (claim, load, continueRun, save); the floor
// takes one claim by hand too (one UPDATE in an immediate transaction) before it reads.
// Then the same child resumes a second parked conversation: the time from that answer to its
// request is the §7 "second resume in the same process" figure (statements prepared, modules
// compiled, connections open). Timestamps are epoch milliseconds: the child's `performance.timeOrigin + performance.now()` and the
// mock's receive time (taken when the request's headers are read), on the same machine clock.
//
//   node fresh-resume.mjs [--runs N] [--warmup W] [--only sdk|floor] [--cpu-prof-dir DIR] [--verbose]
import { spawn } from "node:child_process"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createClient, createToolkit, defineTool, pending } from "@toolnexus/core"
import { SqliteStore } from "@toolnexus/durable/sqlite"
import { API_KEY, MODEL, cliOptions, machineLine, median, printRows, startMockServer } from "./harness.mjs"
import { FINAL, MOCK_ARGS, OPENAI_TOOLS, PAID, PAY, payTool, promptOf } from "./pay-scenario.mjs"

const options = cliOptions(
  { runs: 10, rounds: 1, warmup: 1 },
  { variants: ["sdk", "floor"], extra: { "cpu-prof-dir": { type: "string" } } },
)
// --cpu-prof-dir DIR: each child writes a CPU profile there (the figures then include its cost).
const childFlags = options.values["cpu-prof-dir"]
  ? ["--cpu-prof", `--cpu-prof-dir=${options.values["cpu-prof-dir"]}`]
  : []
const names = ["sdk", "floor"].filter((name) => options.only === undefined || name === options.only)
const CHILD = new URL("./fresh-resume-child.mjs", import.meta.url).pathname

console.log(
  "fresh-resume: fresh process, module import + answer → first LLM request of the resumed run (SQLite)",
)
console.log(
  `${machineLine()}, ${options.runs} samples per variant (+ ${options.warmup} warm-up), one process per sample`,
)

const server = await startMockServer(MOCK_ARGS)
const dir = await mkdtemp(join(tmpdir(), "toolnexus-fresh-"))
const path = join(dir, "runs.db")

/** Spawns one child; resolves with its report and the mock's receive time of its request. */
async function sample(mode, parked) {
  const config = {
    path,
    id: parked.id,
    answer: { id: parked.requestId, ok: true },
    second: { id: parked.second.id, answer: { id: parked.second.requestId, ok: true } },
    baseUrl: server.baseUrl,
    model: MODEL,
    apiKey: API_KEY,
    pay: PAY,
    tools: OPENAI_TOOLS,
  }
  await server.stats(true) // reset; digest this child's request
  const child = spawn(process.execPath, [...childFlags, CHILD, mode, JSON.stringify(config)], {
    stdio: ["ignore", "pipe", "inherit"],
  })
  let out = ""
  child.stdout.on("data", (chunk) => {
    out += chunk
  })
  const code = await new Promise((resolve) => child.on("close", resolve))
  if (code !== 0) throw new Error(`${mode} child exited with ${code}`)
  const report = JSON.parse(out)
  const seen = await server.stats(false)
  if (seen.requests !== 2) throw new Error(`${mode}: two resumes sent ${seen.requests} LLM requests, not 2`)
  for (const result of report.results) {
    if (result.status !== "done" || result.text !== FINAL || result.output !== PAID) {
      throw new Error(`${mode}: unexpected result ${JSON.stringify(result)}`)
    }
  }
  const origin = report.timeOrigin
  return {
    digest: seen.digest,
    importMs: report.imported - report.start,
    answerMs: seen.firstRequestAt - (origin + report.imported),
    secondMs: seen.arrivals[1] - (origin + report.second),
    totalMs: seen.firstRequestAt - (origin + report.start),
    fromStartMs: seen.firstRequestAt - origin,
  }
}

const started = Date.now()
const samples = Object.fromEntries(names.map((name) => [name, []]))
try {
  // Park one conversation per sample, all with the same prompt (so every resume request has
  // the same bytes, whichever side sends it).
  const perVariant = options.runs + options.warmup
  const store = new SqliteStore({ path })
  const toolkit = await createToolkit({ extraTools: [payTool({ defineTool, pending })] })
  const client = createClient({
    baseUrl: server.baseUrl,
    style: "openai",
    model: MODEL,
    apiKey: API_KEY,
    store,
  })
  const parked = {}
  for (const name of names) {
    parked[name] = []
    const park = async (id) => {
      const result = await client.ask(promptOf(0), { toolkit, id })
      if (result.status !== "pending") throw new Error(`not parked: ${JSON.stringify(result)}`)
      return { id, requestId: result.pending.id }
    }
    for (let i = 0; i < perVariant; i++) {
      parked[name].push({ ...(await park(`${name}-${i}`)), second: await park(`${name}-${i}-b`) })
    }
  }
  await store.close()

  const digests = new Set()
  for (let i = 0; i < perVariant; i++) {
    const order = i % 2 === 0 ? names : [...names].reverse()
    for (const name of order) {
      const s = await sample(name, parked[name][i])
      digests.add(s.digest)
      if (i < options.warmup) continue
      samples[name].push(s)
      if (options.verbose) {
        console.log(
          `  ${name} ${i}: import ${s.importMs.toFixed(1)} ms, answer → request ${s.answerMs.toFixed(1)} ms, ` +
            `from process start ${s.fromStartMs.toFixed(1)} ms, second resume → request ${s.secondMs.toFixed(1)} ms`,
        )
      }
    }
  }
  console.log(
    digests.size === 1
      ? `resume requests: byte-identical for ${names.join(" and ")}`
      : `WARNING: the resume requests differ (${digests.size} different bodies)`,
  )
} finally {
  server.close()
  await rm(dir, { recursive: true, force: true })
}

const figures = [
  ["module import", "importMs"],
  ["answer → first LLM request", "answerMs"],
  ["import + answer → request (§7)", "totalMs"],
  ["process start → request", "fromStartMs"],
  ["second resume, same process → its request (§7)", "secondMs"],
]
const rows = figures.map(([label, key]) => {
  const row = [label]
  for (const name of names) row.push(median(samples[name].map((s) => s[key])).toFixed(1))
  if (names.length === 2) {
    // Each sample of one side is paired with the sample of the other side taken next to it.
    const ratios = samples.sdk.map((s, i) => s[key] / samples.floor[i][key])
    row.push(`${median(ratios).toFixed(2)}x`)
  }
  return row
})
printRows(["ms (median)", ...names, ...(names.length === 2 ? ["sdk/floor"] : [])], rows)
console.log("(medians of the samples; ratio: median of the paired per-sample ratios)")
console.log(`(${((Date.now() - started) / 1000).toFixed(1)} s)`)
