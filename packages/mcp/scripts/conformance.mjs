#!/usr/bin/env node
// Runs the official MCP conformance suite's client scenarios against conformance/harness.mjs
// (on the built dist: build first). The suite needs Node 22; both it and Node 22 are installed
// from the npm registry into a cache folder on first use and reused after that.
//
//   node scripts/conformance.mjs                  the default run and both frozen sets (CI)
//   node scripts/conformance.mjs initialize auth/basic-cimd   these scenarios of the default run
//   node scripts/conformance.mjs --requirements 2026-07-28   one revision's frozen client set
//   node scripts/conformance.mjs --server 2026-07-28         one revision's frozen server set
//
// A server set runs the 0.2 suite against conformance/server-harness.mjs (createMcpServer of
// `@toolnexus/mcp/server` with the suite's fixtures), checked against
// conformance/server-expected-failures.json the same way; its scenarios that are not scored
// (extensions such as tasks, pending ones) are reported, each failing one with its reason from
// that file's "not scored" list.
//
// The default run is the suite's own (0.1.16): every scenario must pass. A frozen requirement
// set (2026-07-28, 2025-11-25; from the 0.2 suite, each scenario run at that revision) is checked
// against conformance/expected-failures.json: the run fails only on a failure not listed there
// (a regression); a listed scenario that passes is reported, to be taken off the list.
//
// TOOLNEXUS_CONFORMANCE_CACHE overrides the cache folder (default:
// <package>/node_modules/.cache/toolnexus-conformance).
import { spawn, spawnSync } from "node:child_process"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const SUITE_VERSION = "0.1.16"
/** The suite release whose frozen requirement sets are checked (installed under an alias). */
const SETS_SUITE_VERSION = "0.2.0-alpha.12"
const SETS_ALIAS = "mcp-conformance-sets"
const REVISIONS = ["2026-07-28", "2025-11-25"]
const NODE_MAJOR = 22
const PARALLEL = 2
const SCENARIO_TIMEOUT_MS = 60_000

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const cache =
  process.env.TOOLNEXUS_CONFORMANCE_CACHE ?? join(root, "node_modules/.cache/toolnexus-conformance")
const harness = join(root, "conformance/harness.mjs")
const suiteEntry = join(cache, "node_modules/@modelcontextprotocol/conformance/dist/index.js")
const setsEntry = join(cache, `node_modules/${SETS_ALIAS}/dist/index.js`)
const expectedFailuresFile = join(root, "conformance/expected-failures.json")
const serverHarness = join(root, "conformance/server-harness.mjs")
const serverExpectedFailuresFile = join(root, "conformance/server-expected-failures.json")

function installedVersion(name) {
  try {
    return JSON.parse(readFileSync(join(cache, "node_modules", name, "package.json"), "utf8")).version
  } catch {
    return undefined
  }
}

/** The Node 22 binary: this one when it is 22 or newer, else the cached npm package's. */
function nodeBinaryPackage() {
  if (Number(process.versions.node.split(".")[0]) >= NODE_MAJOR) return undefined
  if (process.platform !== "linux" && process.platform !== "darwin" && process.platform !== "win32") {
    throw new Error(
      `no Node ${NODE_MAJOR} package for ${process.platform}; run this script with Node ${NODE_MAJOR}`,
    )
  }
  const os = process.platform === "win32" ? "win" : process.platform
  return `node-${os}-${process.arch}`
}

function ensureInstalled() {
  const nodePackage = nodeBinaryPackage()
  const nodeOk = !nodePackage || installedVersion(nodePackage)?.startsWith(`${NODE_MAJOR}.`)
  if (
    installedVersion("@modelcontextprotocol/conformance") !== SUITE_VERSION ||
    installedVersion(SETS_ALIAS) !== SETS_SUITE_VERSION ||
    !nodeOk
  ) {
    mkdirSync(cache, { recursive: true })
    // Its own package.json keeps npm from walking up into the workspace.
    writeFileSync(
      join(cache, "package.json"),
      `${JSON.stringify({ name: "toolnexus-conformance-cache", private: true })}\n`,
    )
    const wanted = [
      `@modelcontextprotocol/conformance@${SUITE_VERSION}`,
      `${SETS_ALIAS}@npm:@modelcontextprotocol/conformance@${SETS_SUITE_VERSION}`,
    ]
    if (nodePackage) wanted.push(`${nodePackage}@${NODE_MAJOR}`)
    console.error(`installing ${wanted.join(" and ")} into ${cache}`)
    const npm = process.platform === "win32" ? "npm.cmd" : "npm"
    const done = spawnSync(npm, ["install", "--no-audit", "--no-fund", "--loglevel=error", ...wanted], {
      cwd: cache,
      stdio: "inherit",
    })
    if (done.status !== 0) throw new Error(`npm install into ${cache} failed (exit ${done.status})`)
  }
  if (!nodePackage) return process.execPath
  const bin = process.platform === "win32" ? "node.exe" : "bin/node"
  return join(cache, "node_modules", nodePackage, bin)
}

/** The client scenarios, as the suite itself lists them. */
function clientScenarios(node) {
  const listed = spawnSync(node, [suiteEntry, "list"], { encoding: "utf8" })
  if (listed.status !== 0) throw new Error(`conformance list failed: ${listed.stderr}`)
  const text = `${listed.stdout}\n${listed.stderr}`
  const section = text.slice(text.indexOf("Client scenarios"))
  return [...section.matchAll(/^\s+-\s+(\S+)/gm)].map((m) => m[1])
}

/** The scored client scenarios of a revision's frozen requirement set. */
function requiredScenarios(node, revision) {
  const listed = spawnSync(node, [setsEntry, "list", "--requirements", revision], { encoding: "utf8" })
  if (listed.status !== 0) throw new Error(`conformance list --requirements failed: ${listed.stderr}`)
  const text = `${listed.stdout}\n${listed.stderr}`
  const start = text.indexOf("Client scenarios")
  const end = text.indexOf("never scored", start)
  const section = text.slice(start, end === -1 ? undefined : end)
  return [...section.matchAll(/^\s+-\s+(\S+)/gm)].map((m) => m[1])
}

/** One scenario: of the default suite, or (with `revision`) of the sets' suite at that revision. */
function runScenario(node, scenario, revision) {
  const started = Date.now()
  const command = `"${process.execPath}" "${harness}"`
  const args = [
    revision ? setsEntry : suiteEntry,
    "client",
    "--command",
    command,
    "--scenario",
    scenario,
    "--timeout",
    String(SCENARIO_TIMEOUT_MS),
    ...(revision ? ["--spec-version", revision] : []),
  ]
  return new Promise((done) => {
    const child = spawn(node, args, { stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (chunk) => (output += chunk))
    child.stderr.on("data", (chunk) => (output += chunk))
    child.on("close", (code) => done({ scenario, ok: code === 0, ms: Date.now() - started, output }))
  })
}

/** Runs the scenarios two at a time; prints each outcome (a failure's output only when `loud`). */
async function runAll(node, scenarios, revision, loud) {
  const results = []
  const queue = [...scenarios]
  const worker = async () => {
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      const result = await runScenario(node, next, revision)
      results.push(result)
      console.error(`${result.ok ? "PASS" : "FAIL"} ${next} (${(result.ms / 1000).toFixed(1)} s)`)
      if (!result.ok && loud(next)) console.error(result.output.replace(/^/gm, "    "))
    }
  }
  await Promise.all(Array.from({ length: Math.min(PARALLEL, scenarios.length) }, worker))
  return results
}

/** The default run: every scenario (or the named ones) must pass. */
async function defaultRun(node, wanted) {
  const all = clientScenarios(node)
  const unknown = wanted.filter((s) => !all.includes(s))
  if (unknown.length > 0)
    throw new Error(`unknown scenarios: ${unknown.join(", ")} (known: ${all.join(", ")})`)
  const scenarios = wanted.length > 0 ? wanted : all
  const started = Date.now()
  const results = await runAll(node, scenarios, undefined, () => true)
  const failed = results.filter((r) => !r.ok).map((r) => r.scenario)
  const seconds = ((Date.now() - started) / 1000).toFixed(1)
  console.error(
    `default run (suite ${SUITE_VERSION}): ${results.length - failed.length} of ${results.length} client scenarios passed in ${seconds} s`,
  )
  if (failed.length > 0) console.error(`failed: ${failed.join(", ")}`)
  return failed.length === 0
}

/** A frozen requirement set, against the expected failures: false only on a regression. */
async function requirementRun(node, revision) {
  const expected = JSON.parse(readFileSync(expectedFailuresFile, "utf8"))[revision] ?? {}
  const scenarios = requiredScenarios(node, revision)
  const started = Date.now()
  const results = await runAll(node, scenarios, revision, (s) => !(s in expected))
  const failed = results.filter((r) => !r.ok).map((r) => r.scenario)
  const regressions = failed.filter((s) => !(s in expected))
  const fixed = results.filter((r) => r.ok && r.scenario in expected).map((r) => r.scenario)
  const seconds = ((Date.now() - started) / 1000).toFixed(1)
  console.error(
    `requirement set ${revision} (suite ${SETS_SUITE_VERSION}): ${results.length - failed.length} of ${results.length} client scenarios passed in ${seconds} s; ${failed.length - regressions.length} expected failures`,
  )
  if (fixed.length > 0)
    console.error(`now passing, take off conformance/expected-failures.json: ${fixed.join(", ")}`)
  if (regressions.length > 0) console.error(`REGRESSIONS (not expected to fail): ${regressions.join(", ")}`)
  return regressions.length === 0
}

/** Starts the server harness on a free port; resolves with it and its URL once it listens. */
function startServerHarness() {
  const child = spawn(process.execPath, [serverHarness], { stdio: ["ignore", "pipe", "inherit"] })
  return new Promise((resolve, reject) => {
    let out = ""
    child.stdout.on("data", (chunk) => {
      out += chunk
      if (out.includes("\n")) resolve({ child, url: out.split("\n")[0] })
    })
    child.on("exit", (code) => reject(new Error(`the server harness exited (${code}) before listening`)))
  })
}

/** A frozen server set against the server harness: false only on a regression. */
async function serverRun(node, revision) {
  const expectations = JSON.parse(readFileSync(serverExpectedFailuresFile, "utf8"))
  const expected = expectations[revision] ?? {}
  /** Why an unscored scenario (an extension's, a pending one) fails, where known. */
  const unscoredReasons = expectations["not scored"] ?? {}
  const started = Date.now()
  const { child, url } = await startServerHarness()
  let text
  try {
    const args = [
      setsEntry,
      "server",
      "--url",
      url,
      "--requirements",
      revision,
      "--timeout",
      String(SCENARIO_TIMEOUT_MS),
    ]
    text = await new Promise((done) => {
      const suite = spawn(node, args, { stdio: ["ignore", "pipe", "pipe"] })
      let output = ""
      suite.stdout.on("data", (chunk) => (output += chunk))
      suite.stderr.on("data", (chunk) => (output += chunk))
      suite.on("close", () => done(output))
    })
  } finally {
    child.kill()
  }
  // Every scenario is listed once; the "Not scored" summary after the total names the ones that
  // do not count at this revision (extensions, pending ones).
  const cut = text.indexOf("Not scored")
  const unscored = [...(cut === -1 ? "" : text.slice(cut)).matchAll(/^\s+([✓✗]) (\S+) \(/gm)]
  const notScored = new Set(unscored.map((m) => m[2]))
  const outcomes = [...text.matchAll(/^([✓✗]) (\S+):/gm)].filter((m) => !notScored.has(m[2]))
  if (outcomes.length === 0) throw new Error(`the server set ${revision} reported no scenarios:\n${text}`)
  const failed = outcomes.filter((m) => m[1] === "✗").map((m) => m[2])
  const regressions = failed.filter((s) => !(s in expected))
  const fixed = outcomes.filter((m) => m[1] === "✓" && m[2] in expected).map((m) => m[2])
  const seconds = ((Date.now() - started) / 1000).toFixed(1)
  console.error(
    `server set ${revision} (suite ${SETS_SUITE_VERSION}): ${outcomes.length - failed.length} of ${outcomes.length} server scenarios passed in ${seconds} s; ${failed.length - regressions.length} expected failures`,
  )
  if (unscored.length > 0) {
    const unscoredFailed = unscored.filter((m) => m[1] === "✗").map((m) => m[2])
    console.error(
      `  not scored (extensions, pending): ${unscored.length - unscoredFailed.length} of ${unscored.length} passed${unscoredFailed.length > 0 ? ` (${unscoredFailed.join(", ")} fail)` : ""}`,
    )
    for (const name of unscoredFailed)
      console.error(
        `    ${name}: ${unscoredReasons[name] ?? "(no reason recorded in conformance/server-expected-failures.json)"}`,
      )
    const nowPassing = unscored.filter((m) => m[1] === "✓" && m[2] in unscoredReasons).map((m) => m[2])
    if (nowPassing.length > 0)
      console.error(
        `  now passing, take off "not scored" in conformance/server-expected-failures.json: ${nowPassing.join(", ")}`,
      )
  }
  if (fixed.length > 0)
    console.error(`now passing, take off conformance/server-expected-failures.json: ${fixed.join(", ")}`)
  if (regressions.length > 0) {
    console.error(`REGRESSIONS (not expected to fail): ${regressions.join(", ")}`)
    console.error(text.replace(/^/gm, "    "))
  }
  return regressions.length === 0
}

async function main() {
  if (!existsSync(join(root, "dist/index.js")) || !existsSync(join(root, "dist/server/index.js")))
    throw new Error("build the package first (dist/index.js or dist/server/index.js is missing)")
  const node = ensureInstalled()
  const argv = process.argv.slice(2)
  let ok = true
  if (argv[0] === "--requirements") {
    const revision = argv[1]
    if (!REVISIONS.includes(revision))
      throw new Error(`--requirements takes one of ${REVISIONS.join(", ")}, got ${revision}`)
    ok = await requirementRun(node, revision)
  } else if (argv[0] === "--server") {
    const revision = argv[1]
    if (!REVISIONS.includes(revision))
      throw new Error(`--server takes one of ${REVISIONS.join(", ")}, got ${revision}`)
    ok = await serverRun(node, revision)
  } else if (argv.length > 0) ok = await defaultRun(node, argv)
  else {
    ok = await defaultRun(node, [])
    for (const revision of REVISIONS) ok = (await requirementRun(node, revision)) && ok
    for (const revision of REVISIONS) ok = (await serverRun(node, revision)) && ok
  }
  if (!ok) process.exitCode = 1
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error)
  process.exitCode = 1
})
