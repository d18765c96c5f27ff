import { mkdtempSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import Database from "better-sqlite3"
import { afterAll, describe, expect, it } from "vitest"
import { SqliteStore } from "../src/sqlite/index.js"
import { turns } from "../src/testing/contract/context.js"

// The write path of schema 5: a save that only appends writes the messages' leaf and leaves
// the conversation row alone; the row's revision plus the stored count is what a store's
// transcript cache checks, so another writer's append is never mistaken for its own state.

const dir = mkdtempSync(join(tmpdir(), "tnx-sqlite-write-path-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0

function walDatabase() {
  const file = join(dir, `db-${files++}.db`)
  const db = new Database(file)
  db.pragma("journal_mode = WAL")
  db.pragma("wal_autocheckpoint = 0")
  const frame = (db.pragma("page_size", { simple: true }) as number) + 24
  // Whole WAL frames so far: each is one page written.
  const frames = () => Math.round((statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0) / frame)
  const row = () =>
    db.prepare("SELECT revision, pending_id FROM tnx_conversations WHERE id = 'c'").get() as {
      revision: number
      pending_id: string | null
    }
  return { file, db, frames, row }
}

describe("SQLite write path", () => {
  it("an append writes one page and leaves the conversation row as it is", async () => {
    const { db, frames, row } = walDatabase()
    const store = new SqliteStore({ db })
    await store.save("c", turns(2))
    const before = row()
    for (let n = 3; n <= 12; n++) {
      const at = frames()
      await store.save("c", turns(n))
      expect(frames() - at).toBe(1)
    }
    expect(row()).toEqual(before)
    expect(await store.get("c")).toEqual(turns(12))
    // Parking writes the row (and its index entries) in the same transaction.
    await store.save("c", turns(13), { pending: { id: "r", kind: "approval", prompt: "ok?" } })
    expect(row()).toMatchObject({ pending_id: "r" })
    expect(row().revision).toBeGreaterThan(before.revision)
    await store.close()
    db.close()
  })

  it("a store whose cached transcript another store appended to rereads instead of overwriting", async () => {
    const { file, db } = walDatabase()
    const a = new SqliteStore({ db })
    const b = new SqliteStore({ path: file })
    // The same message objects each time: a's cache knows them, so its next save takes the fast path.
    const base = turns(2)
    await a.save("c", base)
    expect(await b.get("c")).toEqual(base)
    // b appends two messages behind a's back: the row is untouched, only the stored count moved.
    const user = (content: string) => ({ role: "user" as const, content })
    await b.save("c", [...base, user("b1"), user("b2")])
    // a saves one message after its cached two: it must see b's rows, not write after its own
    // count and leave b's second message behind.
    await a.save("c", [...base, user("a1")])
    expect(await b.get("c")).toEqual([...base, user("a1")])
    expect(await a.get("c")).toEqual([...base, user("a1")])
    await a.close()
    await b.close()
    db.close()
  })
})
