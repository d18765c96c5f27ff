import { copyFileSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  createClient,
  createToolkit,
  defineTool,
  pending,
  SchemaVersionError,
  StoreError,
} from "@toolnexus/core"
import { createFakeLLMServer } from "@toolnexus/core/testing"
import Database from "better-sqlite3"
import { afterAll, describe, expect, it } from "vitest"
import { askWithAnswer } from "../src/resume/ask-with-answer.js"
import { SqliteStore } from "../src/sqlite/index.js"
import { migrateSqlite } from "../src/sqlite/migrate-sqlite.js"
import { SQLITE_MIGRATIONS } from "../src/sqlite/migrations.js"
import { turns } from "../src/testing/contract/context.js"

const dir = mkdtempSync(join(tmpdir(), "tnx-durable-migrate-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
const newFile = () => join(dir, `db-${files++}.db`)

const version = (db: Database.Database) =>
  (db.prepare("SELECT value FROM tnx_meta WHERE key = 'schema_version'").get() as { value: string }).value
const tables = (db: Database.Database) =>
  (
    db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as {
      name: string
    }[]
  ).map((row) => row.name)

/** A conversation as versions 1–3 store it: messages keyed by the conversation id. */
function writeLegacy(
  db: Database.Database,
  id: string,
  messages: unknown[],
  pending?: { id: string; kind: string; prompt: string },
) {
  const now = Date.now()
  db.prepare(
    "INSERT INTO tnx_conversations (id, revision, message_count, pending, pending_id, pending_kind, " +
      "pending_since, created_at, updated_at) VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?)",
  ).run(
    id,
    messages.length,
    pending ? JSON.stringify(pending) : null,
    pending?.id ?? null,
    pending?.kind ?? null,
    pending ? now : null,
    now,
    now,
  )
  const insert = db.prepare("INSERT INTO tnx_messages (conversation_id, seq, body) VALUES (?, ?, ?)")
  for (const [seq, message] of messages.entries()) insert.run(id, seq, JSON.stringify(message))
}

/** A database migrated to `version`, holding conversation "a" (waiting on request "r") and "b". */
function legacyDatabase(version: number): { file: string; db: Database.Database } {
  const file = newFile()
  const db = new Database(file)
  migrateSqlite(db, SQLITE_MIGRATIONS.slice(0, version), `a version-${version} database`)
  writeLegacy(db, "a", turns(3), { id: "r", kind: "approval", prompt: "ok?" })
  writeLegacy(db, "b", turns(2))
  return { file, db }
}

const NEXT =
  "ALTER TABLE tnx_conversations ADD COLUMN labels TEXT; CREATE TABLE tnx_labels (name TEXT PRIMARY KEY);"

describe("SQLite schema migrations", () => {
  it("creates the newest schema in an empty database, on first use and in WAL mode", async () => {
    const file = newFile()
    const store = new SqliteStore({ path: file })
    await store.get("anything")
    await store.close()
    const db = new Database(file)
    expect(version(db)).toBe(String(SQLITE_MIGRATIONS.length))
    expect(tables(db)).toEqual([
      "tnx_conversations",
      "tnx_messages",
      "tnx_meta",
      "tnx_requests",
      "tnx_snapshots",
    ])
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal")
    db.close()
  })

  it("moves version 2's messages into the rowid table of version 3, in order and still appendable", async () => {
    const { file, db } = legacyDatabase(2)
    migrateSqlite(db, SQLITE_MIGRATIONS.slice(0, 3), "a version-3 database")
    expect(version(db)).toBe("3")
    const sql = db.prepare("SELECT sql FROM sqlite_master WHERE name = 'tnx_messages'").get() as {
      sql: string
    }
    expect(sql.sql).not.toMatch(/WITHOUT ROWID/)
    // The (conversation_id, seq) key still refuses a duplicate.
    expect(() =>
      db.prepare("INSERT INTO tnx_messages (conversation_id, seq, body) VALUES ('b', 0, '{}')").run(),
    ).toThrow(/UNIQUE/)
    db.close()

    const store = new SqliteStore({ path: file })
    expect(await store.get("a")).toEqual(turns(3))
    expect(await store.getPending("a")).toMatchObject({ id: "r" })
    await store.save("b", turns(4))
    expect(await store.get("b")).toEqual(turns(4))
    await store.close()
  })

  it("keys version 3's messages by the conversation's integer key in version 4", async () => {
    const { file, db: raw } = legacyDatabase(3)
    // A claim taken before the upgrade, and a message row no conversation owns.
    const now = Date.now()
    raw
      .prepare(
        "INSERT INTO tnx_requests (request_id, state, attempts, claim_token, claim_conversation_id, " +
          "claim_answer, claim_expires_at, updated_at) VALUES ('r', 'claimed', 1, 'tok', 'a', ?, ?, ?)",
      )
      .run(JSON.stringify({ id: "r", ok: true }), now + 60_000, now)
    raw
      .prepare("UPDATE tnx_conversations SET claim_token = 'tok', claim_request_id = 'r' WHERE id = 'a'")
      .run()
    raw.prepare("INSERT INTO tnx_messages (conversation_id, seq, body) VALUES ('orphan', 0, '{}')").run()
    raw.close()

    const v4 = new SqliteStore({ path: file })
    expect(await v4.get("a")).toEqual(turns(3))
    expect(await v4.get("b")).toEqual(turns(2))
    expect(await v4.get("orphan")).toBeUndefined()
    expect(await v4.findRequest("r")).toMatchObject({ state: "claimed", attempts: 1 })
    // The claim still fences, and the final save consumes it.
    await expect(v4.save("a", turns(4), { pending: null, claim: "other" })).rejects.toThrow()
    await v4.save("a", turns(4), { pending: null, claim: "tok" })
    expect(await v4.getDecision("r")).toEqual({ ok: true })
    await v4.save("b", turns(3))
    await v4.save("orphan", turns(1))
    expect(await v4.get("b")).toEqual(turns(3))
    expect(await v4.get("orphan")).toEqual(turns(1))
    await v4.deleteConversation("b")
    expect(await v4.get("b")).toBeUndefined()
    await v4.close()
    // Opening it again finds the newest version and changes nothing.
    const again = new SqliteStore({ path: file })
    expect(await again.get("a")).toEqual(turns(4))
    await again.close()

    const db = new Database(file)
    expect(version(db)).toBe(String(SQLITE_MIGRATIONS.length))
    expect(tables(db)).toEqual([
      "tnx_conversations",
      "tnx_messages",
      "tnx_meta",
      "tnx_requests",
      "tnx_snapshots",
    ])
    expect(db.prepare("SELECT count(*) AS n FROM tnx_messages").get()).toEqual({ n: 5 })
    const indexes = db
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'tnx_conversations' " +
          "AND sql IS NOT NULL ORDER BY name",
      )
      .all()
    expect(indexes).toEqual([
      { name: "tnx_conversations_claims" },
      { name: "tnx_conversations_pending" },
      { name: "tnx_conversations_pending_id" },
    ])
    // (key, seq) refuses a duplicate, and ids stay unique.
    const { conversation_key: key } = db
      .prepare("SELECT conversation_key FROM tnx_conversations WHERE id = 'a'")
      .get() as { conversation_key: number }
    expect(() =>
      db.prepare("INSERT INTO tnx_messages (message_key, body) VALUES (? * 4294967296, '{}')").run(key),
    ).toThrow(/UNIQUE/)
    expect(() =>
      db.prepare("INSERT INTO tnx_conversations (id, revision, created_at) VALUES ('a', 1, 0)").run(),
    ).toThrow(/UNIQUE/)
    db.close()
  })

  it("upgrades a database left at an older version, keeping its data", async () => {
    const file = newFile()
    const old = new SqliteStore({ path: file })
    await old.save("c", turns(3), { pending: { id: "r", kind: "approval", prompt: "ok?" } })
    await old.putSnapshot("s", { v: 1 })
    await old.close()

    const upgraded = new SqliteStore({ path: file, migrations: [...SQLITE_MIGRATIONS, NEXT] })
    expect(await upgraded.get("c")).toEqual(turns(3))
    expect(await upgraded.getPending("c")).toMatchObject({ id: "r" })
    expect(await upgraded.getSnapshot("s")).toEqual({ v: 1 })
    await upgraded.save("c", turns(4))
    await upgraded.close()

    const db = new Database(file)
    expect(version(db)).toBe(String(SQLITE_MIGRATIONS.length + 1))
    expect(tables(db)).toContain("tnx_labels")
    expect(db.prepare("SELECT labels FROM tnx_conversations WHERE id = 'c'").get()).toEqual({ labels: null })
    db.close()
    // The code that knows only the old version now refuses the database.
    const stale = new SqliteStore({ path: file })
    await expect(stale.get("c")).rejects.toBeInstanceOf(SchemaVersionError)
    await stale.close()
  })

  it("rolls a failed migration back whole", async () => {
    const file = newFile()
    const old = new SqliteStore({ path: file })
    await old.save("c", turns(1))
    await old.close()
    const broken = new SqliteStore({
      path: file,
      migrations: [...SQLITE_MIGRATIONS, "CREATE TABLE tnx_half (x); SELECT * FROM no_such_table;"],
    })
    await expect(broken.get("c")).rejects.toBeInstanceOf(StoreError)
    await broken.close()
    const db = new Database(file)
    expect(version(db)).toBe(String(SQLITE_MIGRATIONS.length))
    expect(tables(db)).not.toContain("tnx_half")
    db.close()
  })

  it("refuses a database from the future without writing to it", async () => {
    const file = newFile()
    const old = new SqliteStore({ path: file })
    await old.save("c", turns(2))
    await old.close()
    const db = new Database(file)
    db.prepare("UPDATE tnx_meta SET value = '99' WHERE key = 'schema_version'").run()
    const before = db.prepare("SELECT revision, created_at FROM tnx_conversations").all()
    const store = new SqliteStore({ path: file })
    const save = store.save("c", turns(3))
    await expect(save).rejects.toBeInstanceOf(SchemaVersionError)
    await expect(save).rejects.toThrow(/schema version "99"/)
    await store.close()
    expect(db.prepare("SELECT revision, created_at FROM tnx_conversations").all()).toEqual(before)
    expect(db.prepare("SELECT count(*) AS n FROM tnx_messages").get()).toEqual({ n: 2 })
    expect(version(db)).toBe("99")
    db.close()
  })

  it("refuses a version that is not a number", async () => {
    const db = new Database(":memory:")
    db.exec("CREATE TABLE tnx_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.prepare("INSERT INTO tnx_meta VALUES ('schema_version', 'banana')").run()
    await expect(new SqliteStore({ db }).get("c")).rejects.toBeInstanceOf(SchemaVersionError)
    db.close()
  })

  it("moves version-1 claims and applied requests into the request index (migration 2)", async () => {
    const file = newFile()
    const db = new Database(file)
    migrateSqlite(db, SQLITE_MIGRATIONS.slice(0, 1), "a version-1 database")
    const past = Date.now() - 60_000
    const pending = (id: string) => JSON.stringify({ id, kind: "approval", prompt: "ok?" })
    const insert = db.prepare(`
      INSERT INTO tnx_conversations (id, revision, message_count, pending, pending_id, pending_kind,
        pending_since, consumed_id, claim_token, claim_request_id, claim_answer, claim_expires_at,
        created_at, updated_at)
      VALUES (?, 1, 0, ?, ?, 'approval', ?, ?, ?, ?, ?, ?, ?, ?)`)
    const answer = JSON.stringify({ id: "r-claimed", ok: true, data: { by: "v1" } })
    insert.run(
      "claimed",
      pending("r-claimed"),
      "r-claimed",
      past,
      null,
      "tok",
      "r-claimed",
      answer,
      past,
      past,
      past,
    )
    insert.run("done", null, null, null, "r-done", null, null, null, null, past, past)
    db.close()

    const store = new SqliteStore({ path: file })
    expect(await store.listExpiredClaims()).toEqual([
      { id: "claimed", request: JSON.parse(pending("r-claimed")), answer: JSON.parse(answer) },
    ])
    expect(await store.findRequest("r-claimed")).toMatchObject({ state: "claimed", attempts: 1 })
    await expect(store.claimAnswer("done", { id: "r-done", ok: true })).rejects.toThrow(/already applied/)
    const taken = await store.claimAnswer("claimed", { id: "r-claimed", ok: false })
    expect(taken).toMatchObject({ takeover: true, answer: JSON.parse(answer) })
    await store.save("claimed", turns(1), { pending: null, claim: taken.token })
    expect(await store.getDecision("r-claimed")).toEqual({ ok: true })
    await store.close()
  })

  it("resumes a run parked by the version-4 store, from its database file (migration 5)", async () => {
    // test/fixtures/sqlite-v4.db: written by the schema-4 store (main at e08b879) through
    // ask(): "parked" waits on the approval of a `lookup` call, "chat" holds two finished turns.
    const file = newFile()
    copyFileSync(join(import.meta.dirname, "fixtures", "sqlite-v4.db"), file)
    const server = await createFakeLLMServer()
    server.enqueue({ text: "resumed" })
    const store = new SqliteStore({ path: file })
    try {
      const roles = (messages: unknown) => (messages as { role: string }[]).map((m) => m.role)
      expect(roles(await store.get("chat"))).toEqual([
        ...["user", "assistant", "tool", "assistant"],
        ...["user", "assistant", "tool", "assistant"],
      ])
      const request = await store.getPending("parked")
      expect(request).toMatchObject({ kind: "approval", prompt: "approve lookup?" })
      const lookup = defineTool({
        name: "lookup",
        description: "Look up the data.",
        inputSchema: { type: "object", properties: {} },
        run: (_args, ctx) =>
          ctx.answer?.ok ? "data" : pending({ kind: "approval", prompt: "approve lookup?" }),
      })
      const client = createClient({
        baseUrl: `${server.url}/v1`,
        style: "openai",
        model: "m",
        apiKey: "k",
        store,
      })
      const toolkit = await createToolkit({ extraTools: [lookup] })
      const id = (request as { id: string }).id
      const done = await askWithAnswer(client, { toolkit, id: "parked", answer: { id, ok: true } })
      expect(done.text).toBe("resumed")
      expect(server.requests).toHaveLength(1)
      expect(await store.getPending("parked")).toBeUndefined()
      expect(await store.getDecision(id)).toEqual({ ok: true })
      const transcript = (await store.get("parked")) as { role: string; content?: unknown }[]
      expect(roles(transcript)).toEqual(["user", "assistant", "tool", "assistant"])
      expect(transcript[2]?.content).toBe("data")
      // An old conversation takes new turns.
      await store.save("chat", [...((await store.get("chat")) ?? []), { role: "user", content: "third" }])
      expect(await store.get("chat")).toHaveLength(9)
    } finally {
      await store.close()
      await server.close()
    }
    const db = new Database(file)
    expect(version(db)).toBe(String(SQLITE_MIGRATIONS.length))
    const sql = (name: string) =>
      (db.prepare("SELECT sql FROM sqlite_master WHERE name = ?").get(name) as { sql: string }).sql
    expect(sql("tnx_messages")).toMatch(/message_key INTEGER PRIMARY KEY/)
    // The old rows are in their conversation's key range, in order.
    const chat = db
      .prepare("SELECT conversation_key AS k FROM tnx_conversations WHERE id = 'chat'")
      .get() as {
      k: number
    }
    const seqs = db
      .prepare(
        "SELECT message_key - ? * 4294967296 AS seq FROM tnx_messages WHERE message_key / 4294967296 = ?",
      )
      .all(chat.k, chat.k)
    expect(seqs).toEqual(Array.from({ length: 9 }, (_, seq) => ({ seq })))
    expect(sql("tnx_conversations")).not.toMatch(/message_count|updated_at/)
    db.close()
  })
})
