import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"
import { describe, expect, it } from "vitest"

const DRIVERS = ["better-sqlite3", "pg", "ioredis"] as const
const src = resolve(dirname(fileURLToPath(import.meta.url)), "../src")
const requireHere = createRequire(import.meta.url)

/** The drivers present in Node's module cache: whatever this process has loaded so far. */
function loadedDrivers(): string[] {
  const paths = Object.keys(requireHere.cache)
  return DRIVERS.filter((name) => paths.some((path) => path.includes(`/node_modules/${name}/`)))
}

/** Every module specifier a file imports for its value (type-only imports and `import()` excluded). */
function staticImports(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.ES2022)
  const specifiers: string[] = []
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement) && !statement.importClause?.isTypeOnly) {
      specifiers.push((statement.moduleSpecifier as ts.StringLiteral).text)
    } else if (ts.isExportDeclaration(statement) && statement.moduleSpecifier && !statement.isTypeOnly) {
      specifiers.push((statement.moduleSpecifier as ts.StringLiteral).text)
    }
  }
  return specifiers
}

/** The bare packages reachable from `entry` through static imports of relative files. */
function staticPackages(entry: string): Set<string> {
  const packages = new Set<string>()
  const seen = new Set<string>()
  const pending = [entry]
  while (pending.length > 0) {
    const file = pending.pop() as string
    if (seen.has(file)) continue
    seen.add(file)
    for (const specifier of staticImports(file)) {
      if (specifier.startsWith(".")) pending.push(resolve(dirname(file), specifier.replace(/\.js$/, ".ts")))
      else packages.add(specifier)
    }
  }
  return packages
}

describe("the root entry", () => {
  it("statically imports no driver, not even through the backends' modules", () => {
    const reachable = staticPackages(resolve(src, "index.ts"))
    for (const driver of DRIVERS) expect(reachable).not.toContain(driver)
    // The backends' entries load their driver only when a store is constructed.
    for (const backend of ["sqlite", "postgres", "redis"]) {
      const packages = staticPackages(resolve(src, backend, "index.ts"))
      for (const driver of DRIVERS) expect(packages).not.toContain(driver)
    }
  })

  it("loads no driver at runtime until a store of that backend is opened", async () => {
    // Vitest runs each test file in a fresh process, so nothing is loaded yet.
    expect(loadedDrivers()).toEqual([])
    const root = await import("../src/index.js")
    await expect(root.openStore("mysql://localhost/db")).rejects.toThrow(/cannot open/)
    expect(loadedDrivers()).toEqual([])

    const store = await root.openStore("sqlite::memory:")
    await store.save("c", [{ role: "user", content: "hi" }])
    expect(await store.get("c")).toEqual([{ role: "user", content: "hi" }])
    await store.close()
    expect(loadedDrivers()).toEqual(["better-sqlite3"])
  })
})
