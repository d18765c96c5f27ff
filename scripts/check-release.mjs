#!/usr/bin/env node
// Checks that the changesets release flow can publish, without publishing anything:
//   1. every publishable package (packages/* without `"private": true`) is in the changesets
//      `fixed` group, publishes publicly with provenance, names its `repository` folder,
//      declares `engines.node`, and its README shows its `npm install` line;
//   2. `changeset version` runs on a copy of the workspace's manifests and changesets (the
//      repository is left alone) and bumps every package of the group to the one version the
//      changesets ask for (a minor on 0.1.0 gives 0.2.0), each with a CHANGELOG.md, and the
//      peer ranges still admit it;
//   3. `pnpm publish -r --dry-run` packs what would be published (workspace ranges resolved).
//
//   node scripts/check-release.mjs [--skip-publish]     (after the build)
import { execFileSync, spawnSync } from "node:child_process"
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"

const root = resolve(import.meta.dirname, "..")
const problems = []
const readJson = (file) => JSON.parse(readFileSync(file, "utf8"))

const publishable = readdirSync(join(root, "packages"))
  .sort()
  .map((folder) => join(root, "packages", folder))
  .filter((dir) => existsSync(join(dir, "package.json")))
  .map((dir) => ({ dir, manifest: readJson(join(dir, "package.json")) }))
  .filter(({ manifest }) => manifest.private !== true)

// 1. Metadata.
const config = readJson(join(root, ".changeset/config.json"))
const fixed = config.fixed.flat()
// A placeholder until the public repository exists; every package names the same one.
const repositoryUrl = "git+https://github.com/toolnexus/toolnexus-ts.git"
for (const { dir, manifest } of publishable) {
  const { name } = manifest
  if (!fixed.includes(name)) problems.push(`${name}: not in the "fixed" group of .changeset/config.json`)
  if (manifest.publishConfig?.access !== "public")
    problems.push(`${name}: publishConfig.access is not "public"`)
  if (manifest.publishConfig?.provenance !== true)
    problems.push(`${name}: publishConfig.provenance is not true`)
  if (!manifest.engines?.node) problems.push(`${name}: no engines.node`)
  // npm provenance ties the tarball to the source repository: it needs `repository`.
  const folder = dir.slice(root.length + 1)
  if (manifest.repository?.url !== repositoryUrl || manifest.repository?.directory !== folder)
    problems.push(`${name}: repository is not { url: "${repositoryUrl}", directory: "${folder}" }`)
  const readme = existsSync(join(dir, "README.md")) ? readFileSync(join(dir, "README.md"), "utf8") : ""
  if (!new RegExp(`^(npm|pnpm) (install|add) [^\\n]*${name.replace("/", "\\/")}(\\s|$)`, "m").test(readme))
    problems.push(`${name}: README.md has no \`npm install ${name}\` line`)
}

// 2. `changeset version` on a copy: the manifests, the changesets and the workspace file.
const temp = mkdtempSync(join(tmpdir(), "tnx-release-"))
try {
  const copy = (path) => {
    if (!existsSync(join(root, path))) return
    mkdirSync(dirname(join(temp, path)), { recursive: true })
    cpSync(join(root, path), join(temp, path), { recursive: true })
  }
  for (const path of ["package.json", "pnpm-workspace.yaml", ".changeset"]) copy(path)
  for (const folder of ["packages", "apps"]) {
    for (const name of readdirSync(join(root, folder))) {
      copy(`${folder}/${name}/package.json`)
      copy(`${folder}/${name}/CHANGELOG.md`)
    }
  }
  for (const path of ["bench/package.json", "docs/package.json"]) copy(path)
  const pending = readdirSync(join(temp, ".changeset")).filter((f) => f.endsWith(".md") && f !== "README.md")
  execFileSync(join(root, "node_modules/.bin/changeset"), ["version"], { cwd: temp, stdio: "pipe" })
  const versions = new Set()
  for (const { dir, manifest } of publishable) {
    const relative = dir.slice(root.length + 1)
    const bumped = readJson(join(temp, relative, "package.json"))
    versions.add(bumped.version)
    if (pending.length && bumped.version === manifest.version)
      problems.push(`${manifest.name}: changeset version left it at ${manifest.version}`)
    if (pending.length && !existsSync(join(temp, relative, "CHANGELOG.md")))
      problems.push(`${manifest.name}: changeset version wrote no CHANGELOG.md`)
  }
  // The fixed group moves by the largest bump any changeset asks for, and by nothing else: a
  // 0.x peer range leaving `^` would make changesets bump every dependent major (0.1.0 → 1.0.0),
  // which is why the peers are `>=0.1.0 <1.0.0` and `onlyUpdatePeerDependentsWhenOutOfRange` is set.
  const current = publishable[0]?.manifest.version ?? "0.0.0"
  const expected = pending.length ? bumpVersion(current, largestBump(pending)) : current
  for (const version of versions) {
    if (version !== expected)
      problems.push(`changeset version goes ${current} → ${version}; the changesets ask for ${expected}`)
  }
  for (const { dir, manifest } of publishable) {
    const bumped = readJson(join(temp, dir.slice(root.length + 1), "package.json"))
    for (const [peer, range] of Object.entries(bumped.peerDependencies ?? {})) {
      if (peer.startsWith("@toolnexus/") && !satisfiesWorkspaceRange(expected, range))
        problems.push(
          `${manifest.name}: after changeset version its peer ${peer}@${range} excludes ${expected}`,
        )
    }
  }
  if (versions.size > 1) problems.push(`the fixed group got different versions: ${[...versions].join(", ")}`)
  console.log(
    `ok  changeset version (dry run): ${pending.length} changesets → ${[...versions].join(", ")} for ${publishable.length} packages`,
  )
} catch (error) {
  problems.push(`changeset version failed: ${error.stderr ?? ""}${error.message}`)
} finally {
  rmSync(temp, { recursive: true, force: true })
}

/** The largest bump ("major" > "minor" > "patch") any of the changesets asks for. */
function largestBump(files) {
  const order = ["patch", "minor", "major"]
  let largest = 0
  for (const file of files) {
    const text = readFileSync(join(root, ".changeset", file), "utf8")
    for (const [, type] of text.matchAll(/^"[^"]+":\s*(patch|minor|major)\s*$/gm))
      largest = Math.max(largest, order.indexOf(type))
  }
  return order[largest]
}

/** `version` bumped as changesets does (semver's inc: on 0.x a major still goes to 1.0.0). */
function bumpVersion(version, type) {
  const [major, minor, patch] = version.split(".").map(Number)
  if (type === "major") return `${major + 1}.0.0`
  if (type === "minor") return `${major}.${minor + 1}.0`
  return `${major}.${minor}.${patch + 1}`
}

/** Whether `version` is inside a `workspace:>=a.b.c <x.y.z` peer range (the form our peers use). */
function satisfiesWorkspaceRange(version, range) {
  const match = /^workspace:>=(\d+\.\d+\.\d+) <(\d+\.\d+\.\d+)$/.exec(range)
  if (!match) return false
  const key = (v) => v.split(".").reduce((sum, part) => sum * 1000 + Number(part), 0)
  return key(match[1]) <= key(version) && key(version) < key(match[2])
}

// 3. What `pnpm publish` would upload. --no-git-checks: CI runs on a detached or dirty tree.
if (!process.argv.includes("--skip-publish")) {
  const run = spawnSync(
    "npx",
    ["-y", "pnpm@10.34.8", "publish", "-r", "--dry-run", "--no-git-checks", "--filter", "./packages/*"],
    { cwd: root, encoding: "utf8" },
  )
  // npm prints the tarball details on stderr and the `+ name@version` lines on stdout.
  const out = `${run.stdout}${run.stderr}`
  if (run.status !== 0) problems.push(`pnpm publish -r --dry-run failed (exit ${run.status}):\n${out}`)
  else {
    for (const { manifest } of publishable) {
      if (!out.includes(`+ ${manifest.name}@${manifest.version}`))
        problems.push(`pnpm publish --dry-run did not list ${manifest.name}@${manifest.version}`)
    }
    console.log(`ok  pnpm publish -r --dry-run: ${publishable.map((p) => p.manifest.name).join(", ")}`)
  }
}

if (problems.length) {
  console.error(`release check failed:\n- ${problems.join("\n- ")}`)
  process.exit(1)
}
