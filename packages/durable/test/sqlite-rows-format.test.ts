import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createClient, createToolkit, defineTool, type Message, pending } from "@toolnexus/core"
import { createFakeLLMServer, type FakeLLMServer } from "@toolnexus/core/testing"
import Database from "better-sqlite3"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { askWithAnswer } from "../src/resume/ask-with-answer.js"
import { SqliteStore } from "../src/sqlite/index.js"
import { migrateSqlite } from "../src/sqlite/migrate-sqlite.js"
import { SQLITE_MIGRATIONS } from "../src/sqlite/migrations.js"

// What the SQLite store keeps is a stored format (DESIGN §17): conversation rows, message
// bodies (compact arrays and plain JSON, store-engine/compact-message.ts), the request index
// with its decisions, and snapshots. Its version is the schema version in tnx_meta, checked on
// open (SchemaVersionError for a newer one) and migrated forward (src/sqlite/migrations.ts).
// Every schema version this code reads has a golden file of its rows under
// fixtures/sqlite-rows/ (and fixtures/sqlite-v4.db for version 4), saved once by the release
// that wrote it and read here forever; a change to what the store writes fails the last test
// until it gets a new schema version (and a new file). An old file is never edited.

interface Golden {
  schemaVersion: number
  /** Every table's rows, in key order. */
  tables: Record<string, Record<string, unknown>[]>
}

const TABLES = ["tnx_meta", "tnx_conversations", "tnx_messages", "tnx_requests", "tnx_snapshots"]
const fixture = (version: number) => new URL(`./fixtures/sqlite-rows/v${version}.json`, import.meta.url)
const golden = (version: number) => JSON.parse(readFileSync(fixture(version), "utf8")) as Golden
/** The schema versions with a golden file of rows (version 4's is a database file). */
const ROW_VERSIONS = [5]

const dir = mkdtempSync(join(tmpdir(), "tnx-sqlite-rows-"))
let server: FakeLLMServer
beforeAll(async () => {
  server = await createFakeLLMServer()
})
afterAll(async () => {
  await server.close()
  rmSync(dir, { recursive: true, force: true })
})
let files = 0
const newFile = () => join(dir, `db-${files++}.db`)

/** The agent: its `lookup` tool needs approval; the model calls it, then says "done: <result>". */
async function agent(store: SqliteStore) {
  const runs: boolean[] = []
  const lookup = defineTool({
    name: "lookup",
    description: "Look up the data.",
    inputSchema: { type: "object", properties: {} },
    run: (_args, ctx) => {
      if (!ctx.answer) return pending({ kind: "approval", prompt: "approve lookup?" })
      runs.push(ctx.answer.ok)
      return "data"
    },
  })
  const client = createClient({
    baseUrl: `${server.url}/v1`,
    style: "openai",
    model: "m",
    apiKey: "k",
    store,
  })
  return { client, runs, toolkit: await createToolkit({ extraTools: [lookup] }) }
}

/** A message with no compact form (content parts), stored as its JSON object. */
const RAW: Message = { role: "user", content: [{ type: "text", text: "a picture of a cat" }] } as Message

/**
 * The fixed scenario: "parked" waits on the approval of a `lookup` call; "answered" was
 * approved and finished; "raw" holds a message with no compact form; "snap-1" is a snapshot.
 */
async function writeScenario(file: string): Promise<Golden> {
  const store = new SqliteStore({ path: file })
  try {
    const { client, toolkit } = await agent(store)
    server.enqueue(
      { toolCalls: [{ id: "call_parked", name: "lookup", arguments: {} }] },
      { toolCalls: [{ id: "call_answered", name: "lookup", arguments: {} }] },
      { text: "done: data" },
    )
    expect((await client.ask("look up parked", { id: "parked", toolkit })).status).toBe("pending")
    const first = await client.ask("look up answered", { id: "answered", toolkit })
    const answer = { id: first.pending?.id as string, ok: true }
    expect((await askWithAnswer(client, { toolkit, id: "answered", answer })).status).toBe("done")
    await store.save("raw", [RAW])
    await store.putSnapshot("snap-1", { kind: "golden", n: 1 })
  } finally {
    await store.close()
  }
  const db = new Database(file, { readonly: true })
  try {
    const tables: Golden["tables"] = {}
    for (const t of TABLES)
      tables[t] = db.prepare(`SELECT * FROM ${t} ORDER BY 1`).all() as Record<string, unknown>[]
    return { schemaVersion: SQLITE_MIGRATIONS.length, tables }
  } finally {
    db.close()
  }
}

/** A database of schema `version` holding exactly the golden file's rows. */
function databaseOf(g: Golden): string {
  const file = newFile()
  const db = new Database(file)
  migrateSqlite(db, SQLITE_MIGRATIONS.slice(0, g.schemaVersion), `a version-${g.schemaVersion} database`)
  for (const [table, rows] of Object.entries(g.tables)) {
    if (table === "tnx_meta") continue // written by the migration
    for (const row of rows) {
      const columns = Object.keys(row)
      db.prepare(
        `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
      ).run(...columns.map((c) => row[c]))
    }
  }
  db.close()
  return file
}

/** What differs between runs (times, generated request ids and claim tokens) as placeholders. */
function normalized(value: unknown): unknown {
  const names = new Map<string, string>()
  const walk = (v: unknown, key = ""): unknown => {
    if (typeof v === "number" && /(_at|_since)$/.test(key)) return "<time>"
    if (typeof v === "string")
      return v.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|pnd-[\w-]+/g, (id) => {
        if (!names.has(id)) names.set(id, `<id-${names.size + 1}>`)
        return names.get(id) as string
      })
    if (Array.isArray(v)) return v.map((x) => walk(x))
    if (typeof v === "object" && v !== null)
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, k)]))
    return v
  }
  return walk(value)
}

describe("the SQLite store's rows", () => {
  it.each(ROW_VERSIONS)("schema v%i: its rows are read, and the parked run resumes once", async (version) => {
    const g = golden(version)
    expect(g.schemaVersion).toBe(version)
    expect(g.tables.tnx_meta).toEqual([{ key: "schema_version", value: String(version) }])
    const store = new SqliteStore({ path: databaseOf(g) })
    try {
      const roles = (messages: Message[] | undefined) =>
        (messages ?? []).map((m) => (m as { role?: string }).role)
      expect(await store.get("raw")).toEqual([RAW])
      expect(roles(await store.get("answered"))).toEqual(["user", "assistant", "tool", "assistant"])
      const request = await store.getPending("parked")
      expect(request).toMatchObject({ kind: "approval", prompt: "approve lookup?", data: { tool: "lookup" } })
      const id = request?.id as string
      expect(await store.findRequest(id)).toMatchObject({ state: "open", conversationId: "parked" })
      const answered = (g.tables.tnx_requests ?? []).find((r) => r.request_id !== id)?.request_id as string
      expect(await store.getDecision(answered)).toEqual({ ok: true })
      expect(await store.getSnapshot("snap-1")).toEqual({ kind: "golden", n: 1 })

      const { client, toolkit, runs } = await agent(store)
      server.enqueue({ text: "resumed" })
      const done = await askWithAnswer(client, { toolkit, id: "parked", answer: { id, ok: true } })
      expect(done.text).toBe("resumed")
      expect(runs).toEqual([true])
      expect(await store.getDecision(id)).toEqual({ ok: true })
    } finally {
      await store.close()
    }
  })

  it(`the store writes schema v${SQLITE_MIGRATIONS.length} exactly as its golden file holds it`, async () => {
    const written = await writeScenario(newFile())
    // Writing a new version's file, once: TOOLNEXUS_WRITE_GOLDEN=1 (never for an existing one).
    if (process.env.TOOLNEXUS_WRITE_GOLDEN === "1")
      writeFileSync(fixture(SQLITE_MIGRATIONS.length), `${JSON.stringify(written, null, 2)}\n`, {
        flag: "wx",
      })
    expect(ROW_VERSIONS).toContain(SQLITE_MIGRATIONS.length)
    expect(normalized(written)).toEqual(normalized(golden(SQLITE_MIGRATIONS.length)))
  })
})
