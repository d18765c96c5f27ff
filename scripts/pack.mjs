#!/usr/bin/env node
// Writes an installable tarball of every publishable package (each packages/*/package.json
// without `"private": true`, so a new package needs no edit here). `pnpm pack` replaces the
// `workspace:` ranges with the versions they point at; `npm pack` would leave them in, and
// npm cannot install those. Each tarball is also copied to an unversioned name
// (`toolnexus-core.tgz`), so a guide can name it without knowing the version.
//
//   node scripts/pack.mjs [--out <folder>] [@toolnexus/core ...]
//     (default: every publishable package into tarballs/; run after the build)
import { execFileSync } from "node:child_process"
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs"
import { basename, join, resolve } from "node:path"
import { parseArgs } from "node:util"

const root = resolve(import.meta.dirname, "..")
const { values, positionals } = parseArgs({
  options: { out: { type: "string", default: join(root, "tarballs") } },
  allowPositionals: true,
})
const out = resolve(values.out)
mkdirSync(out, { recursive: true })
const all = publishablePackages()
const unknown = positionals.filter((name) => !all.some((p) => p.name === name))
if (unknown.length) {
  console.error(`not a publishable package: ${unknown.join(", ")}`)
  process.exit(1)
}

for (const { name, dir } of all.filter((p) => !positionals.length || positionals.includes(p.name))) {
  if (!existsSync(join(dir, "dist"))) {
    console.error(`${name} has no dist/: build first (npx -y pnpm@10.34.8 exec turbo run build)`)
    process.exit(1)
  }
  const json = execFileSync("npx", ["-y", "pnpm@10.34.8", "pack", "--json", "--pack-destination", out], {
    cwd: dir,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  })
  const file = JSON.parse(json).filename
  const stable = join(out, `${name.replace(/^@/, "").replace("/", "-")}.tgz`)
  copyFileSync(file, stable)
  console.log(`${name}: ${basename(file)} (also ${basename(stable)})`)
}

/** Every package under packages/ that is not private, in folder order. */
function publishablePackages() {
  const packages = []
  for (const folder of readdirSync(join(root, "packages")).sort()) {
    const dir = join(root, "packages", folder)
    if (!existsSync(join(dir, "package.json"))) continue
    const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"))
    if (manifest.private !== true) packages.push({ name: manifest.name, dir, manifest })
  }
  return packages
}
