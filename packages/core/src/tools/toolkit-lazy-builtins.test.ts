import { afterEach, describe, expect, it, vi } from "vitest"

// The cold window (DESIGN §7): a toolkit without builtins must not load their code.
describe("createToolkit loads the builtins only when asked for", () => {
  afterEach(() => {
    vi.doUnmock("../builtins/builtin-tools.js")
    vi.resetModules()
  })

  it("never imports builtin-tools without `builtins`, and does with it", async () => {
    vi.resetModules()
    let loaded = 0
    vi.doMock("../builtins/builtin-tools.js", async (original) => {
      loaded++
      return await original()
    })
    const { createToolkit } = await import("./toolkit.js")
    const plain = await createToolkit({})
    expect(plain.tools()).toEqual([])
    await createToolkit({ builtins: false })
    expect(loaded).toBe(0)
    const withBuiltins = await createToolkit({ builtins: { tools: { bash: false } } })
    expect(loaded).toBe(1)
    expect(withBuiltins.tools().map((t) => t.name)).toContain("read")
  })
})
