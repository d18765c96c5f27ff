#!/usr/bin/env node
// Installs each publishable package the way a user would — its packed tarball alone, with
// only its documented peers, into an empty project — then type-checks a consumer of every
// export entry under `strict` with `skipLibCheck: false` (moduleResolution node16, bundler,
// and a CommonJS file under nodenext), imports and requires every entry at run time, and runs
// each command the package installs (its `bin`) with `--help`.
// Run after `turbo run build`. Everything lives in a temp folder; nothing is cached here.
//
//   node scripts/check-consumers.mjs [--runtime-only] [--tarballs <dir>] [@toolnexus/core ...]
//     (default: every package below, packed here)
//
// --runtime-only skips the type-checks: their result does not depend on the Node that runs
// tsc, so CI type-checks once and, on its other Node versions, installs and loads only.
// --tarballs takes the packages from a folder scripts/pack.mjs wrote (its unversioned names),
// so CI packs once for every run. The consumers are checked a few at a time: most of a
// check is npm waiting on the registry, and each one has its own folder.
import { execFile, execFileSync } from "node:child_process"
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { parseArgs, promisify } from "node:util"

const root = resolve(import.meta.dirname, "..")

/**
 * The publishable packages. Workspace peers are installed from their tarballs and required
 * registry peers at their declared range, both read from package.json; `optionalPeers`
 * names the optional peers a consumer of every entry needs for its types (a user of that
 * backend installs them). Add a package here and the check covers it.
 */
const PACKAGES = [
  // DESIGN §7: core with all its runtime dependencies stays within 3 MB installed.
  { name: "@toolnexus/core", maxInstalledBytes: 3_000_000 },
  // /engine-testing's engine contract suite runs under vitest.
  { name: "@toolnexus/agents", optionalPeers: ["vitest"] },
  // /redis is typed with ioredis' own types, /testing's store contract suite runs under vitest;
  // /sqlite and /postgres need no driver at all.
  { name: "@toolnexus/durable", optionalPeers: ["ioredis", "vitest"] },
  { name: "@toolnexus/mcp" },
  // The AI SDK and AG-UI wire formats are written by the package: no `ai` or `@ag-ui/*` types needed.
  { name: "@toolnexus/ui" },
  { name: "@toolnexus/a2a" },
  { name: "@toolnexus/restate" },
  { name: "@toolnexus/dbos" },
]

/**
 * The compiler and Node's types, installed once beside the consumers (not into them), so a
 * consumer's node_modules holds exactly the package, its dependencies and peers, and its
 * size is the installed size a user gets.
 */
const TOOLCHAIN = ["typescript@~5.9.3", "@types/node@^20.19.0"]

const TSCONFIGS = {
  node16: { module: "node16", moduleResolution: "node16", include: ["consumer.ts"] },
  bundler: { module: "esnext", moduleResolution: "bundler", include: ["consumer.ts"] },
  "nodenext-cjs": { module: "nodenext", moduleResolution: "nodenext", include: ["consumer.cts"] },
}

const workspace = readWorkspace()
checkListIsComplete()
const { values: flags, positionals: selected } = parseArgs({
  options: { "runtime-only": { type: "boolean", default: false }, tarballs: { type: "string" } },
  allowPositionals: true,
})
const runtimeOnly = flags["runtime-only"]
/** Consumers checked at once (each is an npm install, then tsc and node runs). */
const CONCURRENCY = 3
const targets = selected.length ? PACKAGES.filter((p) => selected.includes(p.name)) : PACKAGES
if (selected.length && targets.length !== selected.length) fail(`unknown package in ${selected.join(", ")}`)

const temp = mkdtempSync(join(tmpdir(), "tnx-consumers-"))
const failures = []
try {
  const tarballs = flags.tarballs ? packedIn(resolve(flags.tarballs)) : packAll(join(temp, "tarballs"))
  const toolchain = join(temp, "toolchain")
  mkdirSync(toolchain)
  writeJson(join(toolchain, "package.json"), { name: "toolchain", private: true })
  if (!runtimeOnly) await npmInstall(TOOLCHAIN, toolchain)
  const queue = [...targets]
  const lane = async () => {
    for (let target = queue.shift(); target; target = queue.shift()) {
      const started = Date.now()
      try {
        const size = await checkConsumer(
          target,
          tarballs,
          toolchain,
          join(temp, target.name.replace("/", "+")),
        )
        const seconds = ((Date.now() - started) / 1000).toFixed(1)
        console.log(
          `ok  ${target.name}: installed in ${(size / 1e6).toFixed(2)} MB on disk with its dependencies and peers (${seconds} s)`,
        )
      } catch (error) {
        failures.push(target.name)
        console.error(`FAIL ${target.name}\n${error.stdout ?? ""}${error.stderr ?? ""}${error.message}`)
      }
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, lane))
} finally {
  rmSync(temp, { recursive: true, force: true })
}
if (failures.length) fail(`consumer check failed for ${failures.join(", ")}`)

/** Checks one package in the empty project `dir`; returns its installed size in bytes. */
async function checkConsumer(target, tarballs, toolchain, dir) {
  const pkg = workspace.get(target.name).manifest
  const entries = Object.keys(pkg.exports)
    .filter((key) => key !== "./package.json")
    .map((key) => (key === "." ? target.name : `${target.name}/${key.slice(2)}`))

  mkdirSync(dir, { recursive: true })
  writeJson(join(dir, "package.json"), { name: "consumer", private: true, type: "module" })
  const installs = [...new Set([target.name, ...workspacePeers(target.name)])].map((name) =>
    tarballs.get(name),
  )
  await npmInstall([...installs, ...registryPeers(target)], dir)
  const size = installedBytes(join(dir, "node_modules"))
  if (target.maxInstalledBytes && size > target.maxInstalledBytes) {
    throw new Error(`installed size ${size} B exceeds the limit of ${target.maxInstalledBytes} B`)
  }

  const imports = entries.map((entry, i) => `import * as entry${i} from "${entry}"`).join("\n")
  const uses = `export const loaded: object[] = [${entries.map((_, i) => `entry${i}`).join(", ")}]`
  writeFileSync(join(dir, "consumer.ts"), `${imports}\n${uses}\n`)
  writeFileSync(join(dir, "consumer.cts"), `${imports}\n${uses}\n`)
  for (const [name, { include, ...options }] of runtimeOnly ? [] : Object.entries(TSCONFIGS)) {
    writeJson(join(dir, `tsconfig.${name}.json`), {
      compilerOptions: {
        ...options,
        target: "es2022",
        strict: true,
        skipLibCheck: false,
        noEmit: true,
        types: ["node"],
        typeRoots: [join(toolchain, "node_modules/@types")],
      },
      include,
    })
    await runAsync(
      process.execPath,
      [join(toolchain, "node_modules/typescript/bin/tsc"), "-p", `tsconfig.${name}.json`],
      dir,
    )
  }

  const list = JSON.stringify(entries)
  const assertion = `if (Object.keys(m).length === 0) throw new Error(entry + " has no exports")`
  writeFileSync(
    join(dir, "smoke.mjs"),
    `for (const entry of ${list}) { const m = await import(entry); ${assertion} }\n`,
  )
  writeFileSync(
    join(dir, "smoke.cjs"),
    `for (const entry of ${list}) { const m = require(entry); ${assertion} }\n`,
  )
  await runAsync(process.execPath, ["smoke.mjs"], dir)
  await runAsync(process.execPath, ["smoke.cjs"], dir)
  // Each command the package installs is linked and answers `--help` (which opens no store).
  const bins = typeof pkg.bin === "string" ? { [target.name.split("/")[1]]: pkg.bin } : (pkg.bin ?? {})
  for (const bin of Object.keys(bins)) {
    const { stdout } = await runAsync(join(dir, "node_modules/.bin", bin), ["--help"], dir)
    if (!/usage/i.test(stdout)) throw new Error(`\`${bin} --help\` printed no usage:\n${stdout}`)
  }
  return size
}

function npmInstall(specs, dir) {
  // --ignore-scripts: no driver is compiled; the checks load no driver.
  return runAsync(
    "npm",
    ["install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error", ...specs],
    dir,
  )
}

/**
 * The space every file under `dir` takes on disk (what `du -s` counts: whole blocks, so many
 * small files weigh more than their bytes), or their bytes if the file system reports no blocks.
 */
function installedBytes(dir) {
  let total = 0
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue
    const stat = statSync(join(entry.parentPath, entry.name))
    total += stat.blocks > 0 ? Math.max(stat.size, stat.blocks * 512) : stat.size
  }
  return total
}

/** Packs every workspace package any target needs; returns name → tarball path. */
function packAll(destination) {
  const names = new Set(targets.flatMap((t) => [t.name, ...workspacePeers(t.name)]))
  const tarballs = new Map()
  for (const name of names) {
    const { dir } = workspace.get(name)
    const out = run("npx", ["-y", "pnpm@10.34.8", "pack", "--json", "--pack-destination", destination], dir)
    tarballs.set(name, JSON.parse(out).filename)
  }
  return tarballs
}

/** The tarballs scripts/pack.mjs wrote into `dir` (`toolnexus-core.tgz` for @toolnexus/core). */
function packedIn(dir) {
  const names = new Set(targets.flatMap((t) => [t.name, ...workspacePeers(t.name)]))
  const tarballs = new Map()
  for (const name of names) {
    const file = join(dir, `${name.replace(/^@/, "").replace("/", "-")}.tgz`)
    if (!existsSync(file)) fail(`${file} is missing: node scripts/pack.mjs --out ${dir}`)
    tarballs.set(name, file)
  }
  return tarballs
}

/** The workspace packages `name` peers on, transitively (agents → core). */
function workspacePeers(name) {
  const peers = Object.keys(workspace.get(name).manifest.peerDependencies ?? {}).filter((p) =>
    workspace.has(p),
  )
  return peers.flatMap((peer) => [peer, ...workspacePeers(peer)])
}

/** Required registry peers at their declared ranges, plus the listed optional ones. */
function registryPeers(target) {
  const names = [target.name, ...workspacePeers(target.name)]
  const specs = []
  for (const name of names) {
    const { peerDependencies = {}, peerDependenciesMeta = {} } = workspace.get(name).manifest
    for (const [peer, range] of Object.entries(peerDependencies)) {
      if (workspace.has(peer)) continue
      const wanted = name === target.name && target.optionalPeers?.includes(peer)
      if (!peerDependenciesMeta[peer]?.optional || wanted) specs.push(`${peer}@${range}`)
    }
  }
  return [...new Set(specs)]
}

function readWorkspace() {
  const packages = new Map()
  for (const folder of readdirSync(join(root, "packages"))) {
    const dir = join(root, "packages", folder)
    let manifest
    try {
      manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"))
    } catch {
      continue
    }
    packages.set(manifest.name, { dir, manifest })
  }
  return packages
}

/** A new publishable package must be added to PACKAGES, not silently skipped. */
function checkListIsComplete() {
  const listed = new Set(PACKAGES.map((p) => p.name))
  const missing = [...workspace.values()].filter((p) => !p.manifest.private && !listed.has(p.manifest.name))
  if (missing.length)
    fail(`add to PACKAGES in scripts/check-consumers.mjs: ${missing.map((p) => p.manifest.name)}`)
}

function run(command, args, cwd) {
  return execFileSync(command, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
}

/** `run` without blocking the other consumers; rejects like execFileSync (stdout, stderr on the error). */
function runAsync(command, args, cwd) {
  return promisify(execFile)(command, args, { cwd, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 })
}

function writeJson(path, value) {
  writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`)
}

function fail(message) {
  console.error(message)
  process.exit(1)
}
