import { ConfigError, StoreError } from "@toolnexus/core"
import { afterEach, describe, expect, it, vi } from "vitest"

// How a store opens when the addon was not loaded with the entry: `absent` leaves the lookup to
// the driver; an `error` (an addon built for another Node) is what opening reports.
async function storeWith(nativeBinding: unknown) {
  vi.resetModules()
  vi.doMock("../src/sqlite/native-binding.js", () => ({ nativeBinding }))
  const { SqliteStore } = await import("../src/sqlite/index.js")
  return new SqliteStore({ path: ":memory:" })
}

afterEach(() => {
  vi.doUnmock("../src/sqlite/native-binding.js")
})

describe("SQLite without the addon loaded with the entry", () => {
  it("absent: opens, saves and reads through the driver's own addon lookup", async () => {
    const store = await storeWith({ absent: true })
    await store.save("c1", [{ role: "user", content: "hi" }])
    expect(await store.get("c1")).toEqual([{ role: "user", content: "hi" }])
    store.close()
  })

  it("failing to load: every use reports the addon's own error, and nothing is opened", async () => {
    const wrongNode = new Error(
      "The module was compiled against a different Node.js version using NODE_MODULE_VERSION 137",
    )
    const store = await storeWith({ error: wrongNode })
    const failure = await store.get("c1").catch((e: unknown) => e)
    // The store module was loaded afresh (with its own copy of core): told apart by its code.
    expect(StoreError.isInstance(failure)).toBe(true)
    expect((failure as Error).message).toContain("SqliteStore could not open an in-memory SQLite database")
    expect((failure as Error).message).toContain("NODE_MODULE_VERSION 137")
    expect((failure as Error).message).not.toContain("self-register")
    expect(ConfigError.isInstance(failure)).toBe(false)
    // Not remembered as opened: the next call reports it again.
    await expect(store.save("c1", [{ role: "user", content: "hi" }])).rejects.toThrow(
      /NODE_MODULE_VERSION 137/,
    )
  })
})
