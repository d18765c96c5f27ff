import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const COLD_IMPORT = fileURLToPath(new URL("./fixtures/cold-import.mjs", import.meta.url))

describe("importing core, durable and durable/sqlite in a fresh process", () => {
  it("builds no ESM facade of node:crypto or node:fs, so loads neither WebCrypto nor fs streams", () => {
    // A facade reads every export of its builtin, lazy getters included: node:crypto's loads
    // WebCrypto, node:fs's its streams (~7 M and ~30 M instructions on Node 24), for nothing a
    // resume uses.
    const out = execFileSync(process.execPath, [COLD_IMPORT], { encoding: "utf8" })
    const loaded = JSON.parse(out.trim().split("\n").at(-1) as string) as string[]
    expect(loaded).toContain("NativeModule internal/crypto/random")
    expect(loaded).not.toContain("NativeModule internal/crypto/webcrypto")
    expect(loaded).not.toContain("NativeModule internal/fs/streams")
  })
})
