import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import Database from "better-sqlite3"
import { afterAll, describe, expect, it, vi } from "vitest"
import { readWriteStats } from "../src/store-engine/write-stats.js"
import { SqliteStore } from "../src/sqlite/index.js"
import { SQLITE_MIGRATIONS } from "../src/sqlite/migrations.js"
import { type Message, StoreError } from "@toolnexus/core"
import { describeStoreContract } from "../src/testing/store-contract.js"
import { message, turns } from "../src/testing/contract/context.js"

const dir = mkdtempSync(join(tmpdir(), "tnx-durable-sqlite-"))
const file = join(dir, "contract.db")
const memory = new Database(":memory:")
afterAll(() => {
  memory.close()
  rmSync(dir, { recursive: true, force: true })
})

/** Runs `fn` on a second connection to the same database, behind the store's back. */
function behindTheBack(db: Database.Database | undefined, fn: (db: Database.Database) => void): void {
  const conn = db ?? new Database(file)
  try {
    fn(conn)
  } finally {
    if (db === undefined) conn.close()
  }
}

for (const [name, db] of [
  ["SqliteStore (file)", undefined],
  ["SqliteStore (:memory:)", memory],
] as const) {
  describeStoreContract(name, {
    writeStats: readWriteStats,
    create: async (extra) =>
      db
        ? new SqliteStore({ db, opTimeoutMs: 10, ...extra })
        : new SqliteStore({ path: file, opTimeoutMs: 10, ...extra }),
    corruptPending: async (_store, id) =>
      behindTheBack(db, (conn) => {
        conn.prepare("UPDATE tnx_conversations SET pending = '{not json' WHERE id = ?").run(id)
      }),
    corrupt: async (_store, id, index) =>
      behindTheBack(db, (conn) => {
        conn
          .prepare(
            "UPDATE tnx_messages SET body = 'not json {' WHERE message_key = ? + 4294967296 * " +
              "(SELECT conversation_key FROM tnx_conversations WHERE id = ?)",
          )
          .run(index, id)
      }),
    setSchemaVersion: async (_store, version) =>
      behindTheBack(db, (conn) => {
        conn.prepare("UPDATE tnx_meta SET value = ? WHERE key = 'schema_version'").run(String(version))
      }),
    schemaVersion: SQLITE_MIGRATIONS.length,
    // A store makes a missing folder, so the unopenable path lies under a regular file.
    unreachable: async () => {
      const blocker = join(dir, "not-a-folder")
      writeFileSync(blocker, "")
      return new SqliteStore({ path: join(blocker, "x.db") })
    },
  })
}

describe("SqliteStore saves", () => {
  it("repairs a resumed run's last message without reading the transcript back", async () => {
    const store = new SqliteStore({ path: ":memory:" })
    const parked = turns(3)
    await store.save("c", parked)
    const before = store.stats
    const repaired = [...parked.slice(0, 2), { role: "user", content: "repaired" } as Message, message(3)]
    await store.save("c", repaired)
    const after = store.stats
    expect(after.messageRowsRead - before.messageRowsRead).toBe(0)
    expect(after.messageRowsDeleted - before.messageRowsDeleted).toBe(1)
    expect(await store.get("c")).toEqual(repaired)
    await store.close()
  })
})

describe("SqliteStore connection", () => {
  it("opens a file in WAL mode with synchronous = NORMAL, and a commit is on disk for the next process", async () => {
    const pragma = vi.spyOn(Database.prototype, "pragma")
    const path = join(dir, "normal.db")
    const store = new SqliteStore({ path })
    try {
      await store.save("c", turns(2))
      const opened = pragma.mock.calls.map(([source]) => source)
      expect(opened).toEqual(["journal_mode = WAL", "synchronous = NORMAL"])
      // The WAL holds the commit: a new connection (another process's) reads it.
      const other = new Database(path, { readonly: true })
      try {
        expect(other.pragma("journal_mode", { simple: true })).toBe("wal")
      } finally {
        other.close()
      }
      const next = new SqliteStore({ path })
      try {
        expect(await next.get("c")).toHaveLength(2)
      } finally {
        await next.close()
      }
    } finally {
      pragma.mockRestore()
      await store.close()
    }
  })

  it("leaves the pragmas of a database the host opened as they are", async () => {
    const db = new Database(join(dir, "host.db"))
    db.pragma("synchronous = FULL")
    const store = new SqliteStore({ db })
    await store.save("c", turns(2))
    expect(db.pragma("synchronous", { simple: true })).toBe(2)
    expect(db.pragma("journal_mode", { simple: true })).toBe("delete")
    await store.close()
    db.close()
  })
})

describe("SqliteStore deadlines", () => {
  it("gives up on a write another process holds locked after opTimeoutMs, as a StoreError, and loses nothing", async () => {
    const path = join(dir, "locked.db")
    const store = new SqliteStore({ path, opTimeoutMs: 150 })
    await store.save("c", turns(2))
    const other = new Database(path)
    other.exec("BEGIN IMMEDIATE") // holds the write lock, as a second worker mid-save would
    try {
      const started = performance.now()
      const error = await store.save("c", turns(3)).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(StoreError)
      expect((error as Error).message).toMatch(/SqliteStore failed to save conversation "c".*locked/)
      // better-sqlite3 waits out its busy timeout (opTimeoutMs) before it reports the lock.
      expect(performance.now() - started).toBeGreaterThanOrEqual(140)
    } finally {
      other.exec("ROLLBACK")
      other.close()
    }
    expect(await store.get("c")).toEqual(turns(2))
    await store.save("c", turns(3))
    expect(await store.get("c")).toEqual(turns(3))
    await store.close()
  })
})
