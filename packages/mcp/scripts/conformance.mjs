#!/usr/bin/env node
// Runs the official MCP conformance suite's client scenarios against conformance/harness.mjs
// (on the built dist: build first). The suite needs Node 22; both it and Node 22 are installed
// from the npm registry into a cache folder on first use and reused after that.
//
//   node scripts/conformance.mjs                  every client scenario, two at a time
//   node scripts/conformance.mjs initialize auth/basic-cimd   only these
//
// TOOLNEXUS_CONFORMANCE_CACHE overrides the cache folder (default:
// <package>/node_modules/.cache/toolnexus-conformance). Exits non-zero when any scenario fails.
import { spawn, spawnSync } from "node:child_process"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const SUITE_VERSION = "0.1.16"
const NODE_MAJOR = 22
const PARALLEL = 2
const SCENARIO_TIMEOUT_MS = 60_000

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const cache =
  process.env.TOOLNEXUS_CONFORMANCE_CACHE ?? join(root, "node_modules/.cache/toolnexus-conformance")
const harness = join(root, "conformance/harness.mjs")
const suiteEntry = join(cache, "node_modules/@modelcontextprotocol/conformance/dist/index.js")

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
  if (installedVersion("@modelcontextprotocol/conformance") !== SUITE_VERSION || !nodeOk) {
    mkdirSync(cache, { recursive: true })
    // Its own package.json keeps npm from walking up into the workspace.
    writeFileSync(
      join(cache, "package.json"),
      `${JSON.stringify({ name: "toolnexus-conformance-cache", private: true })}\n`,
    )
    const wanted = [`@modelcontextprotocol/conformance@${SUITE_VERSION}`]
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

function runScenario(node, scenario) {
  const started = Date.now()
  const command = `"${process.execPath}" "${harness}"`
  const args = [
    suiteEntry,
    "client",
    "--command",
    command,
    "--scenario",
    scenario,
    "--timeout",
    String(SCENARIO_TIMEOUT_MS),
  ]
  return new Promise((done) => {
    const child = spawn(node, args, { stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (chunk) => (output += chunk))
    child.stderr.on("data", (chunk) => (output += chunk))
    child.on("close", (code) => done({ scenario, ok: code === 0, ms: Date.now() - started, output }))
  })
}

async function main() {
  if (!existsSync(join(root, "dist/index.js")))
    throw new Error("build the package first (dist/index.js is missing)")
  const node = ensureInstalled()
  const all = clientScenarios(node)
  const wanted = process.argv.slice(2)
  const unknown = wanted.filter((s) => !all.includes(s))
  if (unknown.length > 0)
    throw new Error(`unknown scenarios: ${unknown.join(", ")} (known: ${all.join(", ")})`)
  const scenarios = wanted.length > 0 ? wanted : all
  const started = Date.now()
  const results = []
  const queue = [...scenarios]
  const worker = async () => {
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      const result = await runScenario(node, next)
      results.push(result)
      console.error(`${result.ok ? "PASS" : "FAIL"} ${next} (${(result.ms / 1000).toFixed(1)} s)`)
      if (!result.ok) console.error(result.output.replace(/^/gm, "    "))
    }
  }
  await Promise.all(Array.from({ length: Math.min(PARALLEL, scenarios.length) }, worker))
  const failed = results.filter((r) => !r.ok).map((r) => r.scenario)
  const seconds = ((Date.now() - started) / 1000).toFixed(1)
  console.error(
    `${results.length - failed.length} of ${results.length} client scenarios passed in ${seconds} s`,
  )
  if (failed.length > 0) {
    console.error(`failed: ${failed.join(", ")}`)
    process.exitCode = 1
  }
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error)
  process.exitCode = 1
})
