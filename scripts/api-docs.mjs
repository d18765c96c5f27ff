#!/usr/bin/env node
// Generates the API reference, docs/api/, from the TSDoc of every public export: one folder
// per publishable package (packages/* without `"private": true`; a new package needs no edit
// here), one module per export entry of its package.json (`"./testing"` → src/testing/index.ts),
// rendered by TypeDoc with typedoc-plugin-markdown. An export without TSDoc fails the run,
// naming it. TypeDoc's own `validation.notDocumented` flags every undocumented member (an
// interface's property or method); the ones undocumented when this check began are listed in
// docs/api/undocumented.txt, and any other undocumented member fails the run: new members come
// with TSDoc, and documenting a listed one means deleting its line (the run says which).
//
//   node scripts/api-docs.mjs            write docs/api/ (undocumented.txt keeps its entries)
//   node scripts/api-docs.mjs --check    generate into a temp folder and fail if docs/api/ differs
//                                        (CI: the committed reference is the current one)
//   node scripts/api-docs.mjs --members  also rewrite undocumented.txt from what is undocumented
import { execFileSync } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { Application, ReflectionKind } from "typedoc"

const root = resolve(import.meta.dirname, "..")
const check = process.argv.includes("--check")
const rewriteKnown = process.argv.includes("--members")
const knownFile = join(root, "docs/api/undocumented.txt")
const known = new Set(
  existsSync(knownFile)
    ? readFileSync(knownFile, "utf8")
        .split("\n")
        .filter((line) => line && !line.startsWith("#"))
    : [],
)
/** Every undocumented member TypeDoc reports, as "<member> (<kind>) in <file>". */
const undocumentedMembers = []
const target = join(root, "docs/api")
const out = check ? mkdtempSync(join(tmpdir(), "tnx-api-")) : target

const packages = readdirSync(join(root, "packages"))
  .sort()
  .map((folder) => ({ folder, dir: join(root, "packages", folder) }))
  .filter(({ dir }) => existsSync(join(dir, "package.json")))
  .map((p) => ({ ...p, manifest: JSON.parse(readFileSync(join(p.dir, "package.json"), "utf8")) }))
  .filter(({ manifest }) => manifest.private !== true)

if (!check) rmSync(target, { recursive: true, force: true })
let failed = false
try {
  for (const { folder, dir, manifest } of packages) {
    const entryPoints = sourceEntries(dir, manifest)
    const app = await Application.bootstrapWithPlugins({
      name: manifest.name,
      entryPoints,
      entryPointStrategy: "resolve",
      tsconfig: join(dir, "tsconfig.json"),
      plugin: ["typedoc-plugin-markdown"],
      out: join(out, folder),
      readme: "none",
      excludeInternal: true,
      excludePrivate: true,
      excludeExternals: true,
      disableSources: true,
      hideGenerator: true,
      githubPages: false,
      skipErrorChecking: true,
      validation: { notExported: false, invalidLink: false, notDocumented: true },
      treatValidationWarningsAsErrors: false,
      logLevel: "Warn",
      // Markdown that diffs well: one file per module, members inline.
      outputFileStrategy: "modules",
      hidePageHeader: true,
      hideBreadcrumbs: true,
      useCodeBlocks: true,
      entryFileName: "README.md",
    })
    const project = await app.convert()
    if (!project || app.logger.hasErrors()) {
      failed = true
      continue
    }
    collectUndocumented(app, project)
    const undocumented = undocumentedExports(project)
    if (undocumented.length) {
      console.error(`${manifest.name}: exports without TSDoc:\n  ${undocumented.join("\n  ")}`)
      failed = true
      continue
    }
    await app.generateOutputs(project)
    nameEntryPages(join(out, folder), manifest.name, entryPoints.length)
  }
  if (failed) throw new Error("the API reference was not generated: document the exports named above")
  checkMembers()
  writeFileSync(join(out, "README.md"), index())
  writeFileSync(join(out, "undocumented.txt"), knownText())
  if (check) {
    try {
      execFileSync("diff", ["-r", "-q", target, out], { stdio: "pipe", encoding: "utf8" })
    } catch (error) {
      throw new Error(
        `docs/api/ is not the current reference; run node scripts/api-docs.mjs and commit it:\n${error.stdout ?? error.message}`,
      )
    }
    console.log("ok  docs/api/ is up to date")
  } else console.log(`wrote ${target}`)
} catch (error) {
  console.error(error.message)
  process.exitCode = 1
} finally {
  if (check) rmSync(out, { recursive: true, force: true })
}

/** Runs TypeDoc's validation with its "does not have any documentation" warnings collected, not printed. */
function collectUndocumented(app, project) {
  const warn = app.logger.warn.bind(app.logger)
  app.logger.warn = (message, ...rest) => {
    const match = /^(.+?), defined in (.+?), does not have any documentation$/.exec(String(message))
    if (match) undocumentedMembers.push(`${match[1]} in ${match[2]}`)
    else warn(message, ...rest)
  }
  try {
    app.validate(project)
  } finally {
    app.logger.warn = warn
  }
}

/** Fails on an undocumented member that is not in undocumented.txt; says which listed ones are documented now. */
function checkMembers() {
  if (rewriteKnown) {
    known.clear()
    for (const member of undocumentedMembers) known.add(member)
    return
  }
  const found = new Set(undocumentedMembers)
  const fresh = [...found].filter((member) => !known.has(member))
  const done = [...known].filter((member) => !found.has(member))
  if (done.length)
    console.warn(
      `documented now (delete their lines from docs/api/undocumented.txt):\n  ${done.join("\n  ")}`,
    )
  if (fresh.length)
    throw new Error(
      `members without TSDoc (document them; undocumented.txt lists only the old ones):\n  ${fresh.join("\n  ")}`,
    )
}

/** undocumented.txt: what was undocumented when the check began, minus what has been documented since. */
function knownText() {
  const header = "# Members without TSDoc, left from before the check; document one and delete its line.\n"
  return `${header}${[...known].sort().join("\n")}\n`
}

/**
 * The exports of every entry module (`entry.Name`) that have no TSDoc: on the declaration,
 * on a function's signature, or on the signature of a function-typed variable.
 */
function undocumentedExports(project) {
  const modules = project.children?.every((child) => child.kindOf(ReflectionKind.Module))
    ? project.children
    : [project]
  const missing = []
  for (const mod of modules) {
    for (const child of mod.children ?? []) {
      if (child.kindOf(ReflectionKind.Reference)) continue // a re-export of a documented name
      const signatures = [...(child.signatures ?? []), ...(child.type?.declaration?.signatures ?? [])]
      const documented = child.hasComment() || signatures.some((signature) => signature.hasComment())
      if (!documented) missing.push(mod === project ? child.name : `${mod.name}.${child.name}`)
    }
  }
  return missing
}

/**
 * TypeDoc names a package's entry modules after their files (`index`, `testing`); a reader
 * imports `@toolnexus/core` and `@toolnexus/core/testing`, so the pages say that.
 */
function nameEntryPages(dir, name, entries) {
  if (entries < 2) return
  const rename = (file) => (file === "index" ? name : `${name}/${file}`)
  for (const file of readdirSync(dir)) {
    if (!file.endsWith(".md")) continue
    const page = join(dir, file)
    let text = readFileSync(page, "utf8")
    if (file === "README.md") {
      text = text.replace(/^- \[([\w-]+)\]\(\1\.md\)$/gm, (_, mod) => `- [\`${rename(mod)}\`](${mod}.md)`)
    } else text = text.replace(/^# ([\w-]+)$/m, (_, mod) => `# \`${rename(mod)}\``)
    writeFileSync(page, text)
  }
}

/** The source file of each export entry: `./dist/x/index.d.ts` → `src/x/index.ts`. */
function sourceEntries(dir, manifest) {
  const files = []
  for (const [key, value] of Object.entries(manifest.exports ?? {})) {
    if (key === "./package.json") continue
    const types = typeof value === "string" ? value : (value.types ?? value.import?.types)
    const source = join(
      dir,
      String(types)
        .replace(/^\.\/dist\//, "src/")
        .replace(/\.d\.ts$/, ".ts"),
    )
    if (!existsSync(source)) throw new Error(`${manifest.name} "${key}": no source file ${source}`)
    files.push(source)
  }
  return files
}

/** docs/api/README.md: the packages and their entries, linked. */
function index() {
  const lines = [
    "# API reference",
    "",
    "Generated from the TSDoc of every public export by `node scripts/api-docs.mjs` (TypeDoc);",
    "do not edit by hand. CI fails when an export has no TSDoc or this folder is out of date.",
    "",
  ]
  for (const { folder, manifest } of packages) {
    lines.push(`- [\`${manifest.name}\`](${folder}/README.md): ${manifest.description ?? ""}`)
  }
  return `${lines.join("\n")}\n`
}
