import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { StoreError } from "@toolnexus/core"
import { afterEach, describe, expect, it } from "vitest"
import { openStore } from "../src/index.js"
import { SqliteStore } from "../src/sqlite/index.js"

const temps: string[] = []
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "tnx-sqlite-folder-"))
  temps.push(dir)
  return dir
}
afterEach(() => {
  for (const dir of temps.splice(0)) rmSync(dir, { recursive: true, force: true })
})

// Issue 37: a store on a path whose folder did not exist failed at first use ("the directory
// does not exist"), so a new app's first run failed.
describe("a SQLite store on a path whose folder does not exist", () => {
  it("makes the folder and works", async () => {
    const path = join(tempDir(), "data", "nested", "runs.db")
    const store = new SqliteStore({ path })
    try {
      await store.save("c1", [{ role: "user", content: "hello" }])
      expect(existsSync(path)).toBe(true)
      expect(await store.get("c1")).toEqual([{ role: "user", content: "hello" }])
    } finally {
      await store.close()
    }
  })

  it("through openStore's sqlite: URL too", async () => {
    const path = join(tempDir(), "fresh", "runs.db")
    const store = await openStore(`sqlite:${path}`)
    try {
      await store.save("c1", [{ role: "user", content: "hi" }])
      expect(existsSync(path)).toBe(true)
    } finally {
      await store.close()
    }
  })

  it("names the path in a StoreError when the folder cannot be made", async () => {
    const blocker = join(tempDir(), "a-file")
    writeFileSync(blocker, "not a folder")
    const path = join(blocker, "runs.db")
    const store = new SqliteStore({ path })
    try {
      const failed = store.save("c1", [{ role: "user", content: "hello" }])
      await expect(failed).rejects.toThrow(StoreError)
      await expect(failed).rejects.toThrow(path)
    } finally {
      await store.close()
    }
  })
})
