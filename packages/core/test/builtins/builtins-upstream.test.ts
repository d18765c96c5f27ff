import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BUILTIN_TOOL_NAMES, type Toolkit, createToolkit } from "../../src/index.js"

// Upstream's JS port's builtins run on the same files (see ../fixtures/upstream-toolkit/SOURCES.md).
const here = path.dirname(fileURLToPath(import.meta.url))
const expected = JSON.parse(
  readFileSync(path.join(here, "../fixtures/upstream-toolkit/builtins.json"), "utf8"),
) as {
  files: Record<string, string>
  tools: { name: string; description: string; inputSchema: unknown; source: string }[]
  calls: {
    tool: string
    args: Record<string, unknown>
    output: string
    isError: boolean
    metadata?: Record<string, unknown>
  }[]
}

let root: string
let toolkit: Toolkit
beforeAll(async () => {
  root = realpathSync(mkdtempSync(path.join(tmpdir(), "tnx-builtins-")))
  for (const [file, text] of Object.entries(expected.files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true })
    writeFileSync(path.join(root, file), text)
  }
  // Upstream asks no approval; with approval off the calls run as there.
  toolkit = await createToolkit({ builtins: { root, requireApproval: false } })
})
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe("builtins, equal to upstream's JS port", () => {
  it("has upstream's names, order, descriptions and input schemas", () => {
    expect(BUILTIN_TOOL_NAMES).toEqual(expected.tools.map((t) => t.name))
    expect(
      toolkit.tools().map((t) => ({
        name: t.name,
        description: t.description,
        inputSchema: t.inputSchema,
        source: t.source,
      })),
    ).toEqual(expected.tools)
  })

  it("gives upstream's result texts and metadata, call after call on the same files", async () => {
    const place = (text: string) => text.split("<ROOT>").join(root)
    for (const recorded of expected.calls) {
      // The one deliberate difference (DESIGN §20): grep names files relative to the root, where
      // upstream names them absolute when no path is given.
      const call =
        recorded.tool === "grep"
          ? { ...recorded, output: recorded.output.split("<ROOT>/").join("") }
          : recorded
      const result = await toolkit.execute(call.tool, call.args)
      const metadata = result.metadata ? JSON.parse(JSON.stringify(result.metadata)) : undefined
      if (metadata?.pending) metadata.pending.id = "<ID>"
      expect({
        tool: call.tool,
        args: call.args,
        output: result.output,
        isError: result.isError,
        metadata,
      }).toEqual({
        ...call,
        output: place(call.output),
        metadata: call.metadata ? JSON.parse(place(JSON.stringify(call.metadata))) : undefined,
      })
    }
  })
})
