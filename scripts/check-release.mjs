#!/usr/bin/env node
// Checks that the changesets release flow can publish, without publishing anything:
//   1. every publishable package (packages/* without `"private": true`) is in the changesets
//      `fixed` group, publishes publicly with provenance, declares `engines.node`, and its
//      README shows its `npm install` line;
//   2. `changeset version` runs on a copy of the workspace's manifests and changesets (the
//      repository is left alone) and bumps every package of the group to one version, each
//      with a CHANGELOG.md;
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
for (const { dir, manifest } of publishable) {
  const { name } = manifest
  if (!fixed.includes(name)) problems.push(`${name}: not in the "fixed" group of .changeset/config.json`)
  if (manifest.publishConfig?.access !== "public")
    problems.push(`${name}: publishConfig.access is not "public"`)
  if (manifest.publishConfig?.provenance !== true)
    problems.push(`${name}: publishConfig.provenance is not true`)
  if (!manifest.engines?.node) problems.push(`${name}: no engines.node`)
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
  // changesets bumps a package major when a peer it depends on leaves the peer's range, and on
  // 0.x a minor is outside `^`: say so, since it is not what the changesets asked for.
  const majors = pending.some((f) => /:\s*major\s*$/m.test(readFileSync(join(root, ".changeset", f), "utf8")))
  const current = publishable[0]?.manifest.version ?? "0.0.0"
  for (const version of versions) {
    if (!majors && version.split(".")[0] !== current.split(".")[0])
      console.warn(
        `warning: changeset version goes ${current} → ${version} though no changeset is major (a 0.x peer leaving its ^ range is bumped as major)`,
      )
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
