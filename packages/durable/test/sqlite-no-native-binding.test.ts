import { describe, expect, it, vi } from "vitest"
import { SqliteStore } from "../src/sqlite/index.js"

// An install whose addon is not at the driver's build path: the store opens the database the
// driver's own way (its `bindings` lookup) and works as usual.
vi.mock("../src/sqlite/native-binding.js", () => ({ nativeBinding: undefined }))

describe("SQLite without a preloaded addon", () => {
  it("opens, saves and reads through the driver's own addon lookup", async () => {
    const store = new SqliteStore({ path: ":memory:" })
    await store.save("c1", [{ role: "user", content: "hi" }])
    expect(await store.get("c1")).toEqual([{ role: "user", content: "hi" }])
    store.close()
  })
})
