import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createFakeLLMServer, type FakeLLMServer } from "@toolnexus/core/testing"
import Database from "better-sqlite3"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { SqliteStore } from "../src/sqlite/index.js"
import { migrateSqlite } from "../src/sqlite/migrate-sqlite.js"
import { SQLITE_MIGRATIONS } from "../src/sqlite/migrations.js"
import { type GoldenRows, normalizedRows, readRowsScenario, writeRowsScenario } from "./rows-format-kit.js"

// What the SQLite store keeps is a stored format (DESIGN §17): conversation rows, message
// bodies (compact arrays and plain JSON, store-engine/compact-message.ts), the request index
// with its decisions and a saved runtime's holds, and snapshots (a runtime's among them; the
// runtime snapshot's own format is @toolnexus/agents', with its own fixtures). Its version is the schema version in tnx_meta, checked on
// open (SchemaVersionError for a newer one) and migrated forward (src/sqlite/migrations.ts).
// Every schema version this code reads has a golden file of its rows under
// fixtures/sqlite-rows/ (and fixtures/sqlite-v4.db for version 4), saved once by the release
// that wrote it and read here forever; a change to what the store writes fails the last test
// until it gets a new schema version (and a new file). An old file is never edited.

const TABLES = ["tnx_meta", "tnx_conversations", "tnx_messages", "tnx_requests", "tnx_snapshots"]
const fixture = (version: number) => new URL(`./fixtures/sqlite-rows/v${version}.json`, import.meta.url)
const golden = (version: number) => JSON.parse(readFileSync(fixture(version), "utf8")) as GoldenRows
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

async function writeScenario(file: string): Promise<GoldenRows> {
  const store = new SqliteStore({ path: file })
  try {
    await writeRowsScenario(server, store)
  } finally {
    await store.close()
  }
  const db = new Database(file, { readonly: true })
  try {
    const tables: GoldenRows["tables"] = {}
    for (const t of TABLES)
      tables[t] = db.prepare(`SELECT * FROM ${t} ORDER BY 1`).all() as Record<string, unknown>[]
    return { schemaVersion: SQLITE_MIGRATIONS.length, tables }
  } finally {
    db.close()
  }
}

/** A database of schema `version` holding exactly the golden file's rows. */
function databaseOf(g: GoldenRows): string {
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

describe("the SQLite store's rows", () => {
  it.each(ROW_VERSIONS)("schema v%i: its rows are read, and the parked run resumes once", async (version) => {
    const g = golden(version)
    expect(g.schemaVersion).toBe(version)
    expect(g.tables.tnx_meta).toEqual([{ key: "schema_version", value: String(version) }])
    const store = new SqliteStore({ path: databaseOf(g) })
    try {
      const answered = g.tables.tnx_requests?.find((r) => r.state === "applied")?.request_id as string
      await readRowsScenario(server, store, answered)
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
    expect(normalizedRows(written)).toEqual(normalizedRows(golden(SQLITE_MIGRATIONS.length)))
  })
})
