import { execFile } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { expect, it } from "vitest"

// The `toolnexus` command as npm and pnpm link it: from package.json's `bin`, which must name a
// file that exists before any build (pnpm links every workspace project's bins at install time,
// before `dist/` exists, and warns once per project otherwise).
const root = new URL("../", import.meta.url)
const manifest = JSON.parse(readFileSync(new URL("package.json", root), "utf8")) as {
  bin: Record<string, string>
  files: string[]
}
const entry = manifest.bin.toolnexus ?? ""

it("the bin is a checked-in file, published with the package", () => {
  expect(entry).not.toMatch(/^(\.\/)?dist\//)
  expect(existsSync(new URL(entry, root))).toBe(true)
  expect(manifest.files).toContain(entry.replace(/^\.\//, "").split("/")[0])
})

it("the bin runs the command", async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [
    fileURLToPath(new URL(entry, root)),
    "--help",
  ])
  expect(stdout).toMatch(/^Usage: toolnexus pending/)
})
