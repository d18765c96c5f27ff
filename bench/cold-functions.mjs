// The cold resume's window (cold-resume-instructions.mjs: t0 after the imports → the resumed
// run's first LLM request written), counted in functions V8 compiles to bytecode for the first
// time, per package. A fresh process runs `cold-resume-child.mjs` under
// `--log-function-events`; every `interpreter` event (a function compiled to bytecode) between
// the first call of the child's `mark` (t0) and its `requestSent` (the request) is counted,
// with the bytes of source it covers. A deterministic count: the same build gives it again on
// a loaded machine. `--list core,durable` prints those packages' functions one a line.
//
// `--from setup` starts the window before the store, client and toolkit are made (the shared
// bench's t0). With COLD_LOG=<prefix> V8's log is written to `<prefix>-<mode>.log` and kept
// (its parse and compile events carry times too).
//
//   node cold-functions.mjs [--list core,durable] [--mode sdk|floor] [--keep] [--from t0|setup]
import { execFile } from "node:child_process"
import { readFile } from "node:fs/promises"
import { join } from "node:path"
import { parseArgs, promisify } from "node:util"
import { CHILD, TOOLS, parkColdRuns } from "./cold-park.mjs"
import { printRows } from "./harness.mjs"

const { values } = parseArgs({
  options: {
    list: { type: "string", default: "" },
    mode: { type: "string", default: "sdk,floor" },
    keep: { type: "boolean", default: false },
    from: { type: "string", default: "t0" },
  },
})
// Park `run-0` for both sides, as cold-resume-instructions.mjs does.
const parked = await parkColdRuns(["run-0"], "toolnexus-coldfn-")
const { dir, paths } = parked

const packageOf = (url) => {
  if (!url.startsWith("file:") && !url.startsWith("/")) return "node"
  const m =
    /packages\/(\w+)\/dist\//.exec(url) ?? /node_modules\/((?:@[^/]+\/)?[^/]+)\/(?!.*node_modules)/.exec(url)
  if (m) return m[1]
  return url.endsWith("cold-resume-child.mjs") ? "child" : "other"
}
const rows = []
for (const mode of values.keep ? [] : values.mode.split(",")) {
  const log = process.env.COLD_LOG ? `${process.env.COLD_LOG}-${mode}.log` : join(dir, `${mode}.log`)
  const cfg = { path: paths[mode], id: "run-0", baseUrl: parked.baseUrl, tools: TOOLS }
  await promisify(execFile)(process.execPath, [
    "--log-function-events",
    `--logfile=${log}`,
    "--no-logfile-per-isolate",
    CHILD,
    mode,
    values.from === "setup" ? "setup" : "request",
    JSON.stringify(cfg),
  ])
  const scripts = new Map()
  const events = []
  for (const line of (await readFile(log, "utf8")).split("\n")) {
    const f = line.split(",")
    if (f[0] === "script-details") scripts.set(f[1], f[2])
    else if (f[0] === "function" && f[1] === "interpreter")
      events.push({ script: f[2], start: +f[3], end: +f[4], name: f.slice(7).join(",") })
  }
  const inChild = (e, name) => e.name === name && scripts.get(e.script)?.endsWith("cold-resume-child.mjs")
  const from = events.findIndex((e) => inChild(e, "mark"))
  const to = events.findIndex((e) => inChild(e, "requestSent"))
  if (from < 0 || to < 0) throw new Error(`${mode}: window markers not found in ${log}`)
  const by = new Map()
  const listed = new Set(values.list.split(",").filter(Boolean))
  for (const e of events.slice(from + 1, to)) {
    const pkg = packageOf(scripts.get(e.script) ?? "")
    const acc = by.get(pkg) ?? { n: 0, bytes: 0 }
    acc.n++
    acc.bytes += e.end - e.start
    by.set(pkg, acc)
    if (listed.has(pkg)) {
      const file = (scripts.get(e.script) ?? "").replace(/.*\/dist\//, "")
      console.log(`${mode} ${pkg} ${file}:${e.start} ${e.end - e.start}B ${e.name || "(anonymous)"}`)
    }
  }
  const total = [...by.values()].reduce((a, b) => ({ n: a.n + b.n, bytes: a.bytes + b.bytes }), {
    n: 0,
    bytes: 0,
  })
  rows.push([
    mode,
    `${total.n} (${total.bytes} B)`,
    ...[...by].sort((a, b) => b[1].n - a[1].n).map(([p, v]) => `${p} ${v.n}`),
  ])
}
if (values.keep) {
  // For profiling the window by hand: nothing is counted, the parked stores stay (copy them
  // before a run: a resume claims its run) and the mock serves until this process is stopped.
  for (const mode of ["sdk", "floor"]) {
    const cfg = { path: paths[mode], id: "run-0", baseUrl: parked.baseUrl, tools: TOOLS }
    console.log(`${mode}: node ${CHILD} ${mode} request '${JSON.stringify(cfg)}'`)
  }
} else {
  await parked.close()
}
if (!values.keep) console.log("functions compiled to bytecode, t0 → first LLM request written (cold)")
const width = Math.max(0, ...rows.map((r) => r.length))
if (!values.keep)
  printRows(
    ["", "total (source bytes)", ...Array.from({ length: width - 2 }, () => "")],
    rows.map((r) => [...r, ...Array.from({ length: width - r.length }, () => "")]),
  )
