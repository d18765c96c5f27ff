import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { loadNativeBinding, nativeBinding } from "../src/sqlite/native-binding.js"

const FIRST_OPEN = fileURLToPath(new URL("./fixtures/first-open.mjs", import.meta.url))
const dir = mkdtempSync(join(tmpdir(), "tnx-addon-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("better-sqlite3's addon", () => {
  it("is loaded with the SQLite entry, from the driver's own build", () => {
    expect("addon" in nativeBinding && typeof (nativeBinding.addon as { Database?: unknown }).Database).toBe(
      "function",
    )
  })

  it("the first store of a fresh process opens without the `bindings` lookup", () => {
    // The lookup probes a dozen paths on the way to a cold resume's first LLM request.
    const out = execFileSync(process.execPath, [FIRST_OPEN, join(dir, "first.db")], { encoding: "utf8" })
    const seen = JSON.parse(out.trim().split("\n").at(-1) as string)
    expect(seen.messages).toEqual([{ role: "user", content: "hi" }])
    expect(seen.addon).toBe(true)
    expect(seen.bindings).toBe(false)
  })

  it("an addon that is not where the build puts it is left to the driver to find", () => {
    const missing = (id: string) => {
      throw Object.assign(new Error(`Cannot find module '${id}'`), { code: "MODULE_NOT_FOUND" })
    }
    expect(loadNativeBinding(missing)).toEqual({ absent: true })
  })

  it("an addon that is there but does not load keeps its own error", () => {
    const wrongNode = new Error(
      "was compiled against a different Node.js version using NODE_MODULE_VERSION 137",
    )
    const load = () => {
      throw wrongNode
    }
    expect(loadNativeBinding(load)).toEqual({ error: wrongNode })
    // A missing module that is not the addon (one it links to, say) is a load failure too.
    const other = Object.assign(new Error("Cannot find module 'libsqlite3.so'"), { code: "MODULE_NOT_FOUND" })
    expect(
      loadNativeBinding(() => {
        throw other
      }),
    ).toEqual({ error: other })
  })
})
