import { describe, expect, it, vi } from "vitest"
import { MemoryStore } from "../src/memory/memory-store.js"
import { SqliteStore } from "../src/sqlite/index.js"

// A blocking store (better-sqlite3, memory) prepares its schema on its first call without a
// deadline timer: the setup runs to its end before a timer could fire, and a cold resume's first
// store call should not compile and run the deadline's code for nothing.

describe("a blocking store's first call", () => {
  for (const [name, make] of [
    ["SqliteStore", () => new SqliteStore({ path: ":memory:" })],
    ["MemoryStore", () => new MemoryStore()],
  ] as const) {
    it(`${name}: prepares the schema without arming a timer`, async () => {
      const store = make()
      const setTimeoutSpy = vi.spyOn(globalThis, "setTimeout")
      let timers: number
      try {
        expect(await store.getPending("c")).toBeUndefined()
      } finally {
        // Read before the restore, which forgets the calls.
        timers = setTimeoutSpy.mock.calls.length
        setTimeoutSpy.mockRestore()
      }
      expect(timers).toBe(0)
      await store.close()
    })
  }

  it("a setup that fails still fails with the store's error, and the next call tries again", async () => {
    const store = new SqliteStore({ path: ":memory:", migrations: ["THIS IS NOT SQL"] })
    await expect(store.getPending("c")).rejects.toThrow(
      /SqliteStore could not open an in-memory SQLite database/,
    )
    await expect(store.getPending("c")).rejects.toThrow(/SqliteStore could not open/)
    await store.close()
  })
})
