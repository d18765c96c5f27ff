#!/usr/bin/env node
// Type-checks every TypeScript block (```ts / ```typescript) of every README and doc: the root
// README.md, packages/*/README.md, apps/*/README.md, bench/README.md and docs/**/*.md.
//
// Each block is compiled as its own module, next to the README of the package it documents
// (so `./src/…` imports and that package's dependencies resolve as they do for its code);
// the root README and docs/ are compiled in the private docs package, which depends on every
// published package, one folder per Markdown file. There a block may be a named file of a
// tutorial, ```ts file=tools.ts, which the file's other blocks import as "./tools.js".
// Settings: the repository's tsconfig.base.json (strict). A block that cannot stand alone is
// marked ```ts fragment and is skipped; prefer a complete snippet. Errors point at the
// Markdown line. Run after the packages are built (their types are dist/).
//
//   node scripts/check-snippets.mjs
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { blocksOf } from "./markdown-blocks.mjs"

const root = resolve(import.meta.dirname, "..")
const docsPackage = join(root, "docs")
const PREFIX = ".snippet-"
const SNIPPETS = ".snippets"

/** Every Markdown file whose TypeScript blocks are checked. */
function markdownFiles() {
  const files = [join(root, "README.md"), join(root, "bench/README.md")]
  for (const folder of ["packages", "apps"]) {
    for (const name of readdirSync(join(root, folder))) files.push(join(root, folder, name, "README.md"))
  }
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === "node_modules" || entry.name.startsWith(".")) continue
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith(".md")) files.push(path)
    }
  }
  walk(docsPackage)
  return files.filter((file) => existsSync(file))
}

/** Where a Markdown file's blocks compile: its own package when it has one, else docs/. */
function hostOf(file) {
  const dir = dirname(file)
  return dir !== root && existsSync(join(dir, "package.json")) ? dir : docsPackage
}

const byHost = new Map()
let fragments = 0
for (const [index, file] of markdownFiles().entries()) {
  const host = hostOf(file)
  // In docs/, each Markdown file gets a folder, so its named files do not meet another's.
  const folder = host === docsPackage ? `${SNIPPETS}/${index}/` : PREFIX
  const list = byHost.get(host) ?? []
  byHost.set(host, list)
  for (const block of blocksOf(readFileSync(file, "utf8"))) {
    if (block.fragment) {
      fragments++
      continue
    }
    if (block.file && host !== docsPackage) {
      throw new Error(
        `${relative(root, file)}:${block.line - 1}: file= blocks are for docs/ and the root README`,
      )
    }
    const name = `${folder}${block.file ?? `${list.length + 1}.ts`}`
    list.push({ name, file, line: block.line, code: block.code })
  }
}

const tsc = join(root, "node_modules/typescript/bin/tsc")
let failed = false
let checked = 0
for (const [host, snippets] of byHost) {
  if (!snippets.length) continue
  const config = join(host, `${PREFIX}tsconfig.json`)
  try {
    for (const snippet of snippets) {
      mkdirSync(dirname(join(host, snippet.name)), { recursive: true })
      writeFileSync(join(host, snippet.name), `${snippet.code}\n`)
    }
    writeFileSync(
      config,
      JSON.stringify({
        extends: relative(host, join(root, "tsconfig.base.json")),
        compilerOptions: { noEmit: true, moduleDetection: "force", types: ["node"] },
        files: snippets.map((s) => s.name),
      }),
    )
    checked += snippets.length
    execFileSync(process.execPath, [tsc, "-p", config], { cwd: host, encoding: "utf8", stdio: "pipe" })
  } catch (error) {
    failed = true
    process.stderr.write(pointAtMarkdown(`${error.stdout ?? ""}${error.stderr ?? error.message}`, snippets))
  } finally {
    rmSync(config, { force: true })
    for (const snippet of snippets) rmSync(join(host, snippet.name), { force: true })
    rmSync(join(host, SNIPPETS), { recursive: true, force: true })
  }
}
console.log(`${checked} TypeScript blocks type-checked, ${fragments} marked as fragments`)
if (failed) process.exit(1)

/** Rewrites `.snippet-3.ts(4,7): error …` as `packages/x/README.md:52:7: error …`. */
function pointAtMarkdown(output, snippets) {
  return output.replace(/([^\s(]+\.tsx?)\((\d+),(\d+)\)/g, (match, name, line, column) => {
    const snippet = snippets.find((s) => s.name === name.replace(/^\.\//, ""))
    if (!snippet) return match
    return `${relative(root, snippet.file)}:${snippet.line + Number(line) - 1}:${column}`
  })
}
