import Database from "better-sqlite3"
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

// A save and a claim run as immediate transactions of their own (BEGIN IMMEDIATE, COMMIT,
// ROLLBACK prepared once), not better-sqlite3's `db.transaction`, whose first use prepares
// every BEGIN kind and the savepoints and compiles four functions in a cold resume.
describe("SqliteStore's transactions", () => {
  const message = (content: string) => ({ role: "user" as const, content })

  it("a save and a claim go without better-sqlite3's transaction wrapper", async () => {
    const db = new Database(":memory:")
    const store = new SqliteStore({ db })
    // The first call migrates the new database, in a transaction of better-sqlite3's.
    await store.save("c", [message("hi")], { pending: { id: "r", kind: "approval", prompt: "ok?" } })
    const wrapper = vi.spyOn(db, "transaction")
    await store.save("c", [message("hi")], { pending: { id: "r", kind: "approval", prompt: "ok?" } })
    const claim = await store.claimAnswer("c", { id: "r", ok: true })
    expect(claim).toBeDefined()
    await store.save("c", [message("hi"), message("again")])
    expect(wrapper).not.toHaveBeenCalled()
    expect((await store.get("c"))?.length).toBe(2)
    await store.close()
    db.close()
  })

  it("a failed save is rolled back, and the next one commits", async () => {
    const db = new Database(":memory:")
    const store = new SqliteStore({ db })
    await store.save("c", [message("one")])
    db.exec(`CREATE TRIGGER refuse BEFORE INSERT ON tnx_messages
      BEGIN SELECT RAISE(ABORT, 'refused'); END;`)
    await expect(store.save("c", [message("one"), message("two")])).rejects.toThrow(/refused/)
    expect(db.inTransaction).toBe(false)
    db.exec("DROP TRIGGER refuse")
    await store.save("c", [message("one"), message("two")])
    expect((await store.get("c"))?.map((m) => ("content" in m ? m.content : undefined))).toEqual([
      "one",
      "two",
    ])
    await store.close()
    db.close()
  })

  it("inside a transaction the host holds open, a save nests and goes with the host's rollback", async () => {
    const db = new Database(":memory:")
    const store = new SqliteStore({ db })
    await store.save("c", [message("one")])
    db.exec("BEGIN")
    await store.save("c", [message("one"), message("two")])
    expect(db.inTransaction).toBe(true)
    db.exec("ROLLBACK")
    expect((await store.get("c"))?.map((m) => ("content" in m ? m.content : undefined))).toEqual(["one"])
    await store.close()
    db.close()
  })
})
