import { randomUUID } from "node:crypto"
import { readFileSync, writeFileSync } from "node:fs"
import { createFakeLLMServer, type FakeLLMServer } from "@toolnexus/core/testing"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PostgresStore } from "../src/postgres/index.js"
import { POSTGRES_MIGRATIONS } from "../src/postgres/migrations.js"
import { type GoldenRows, normalizedRows, readRowsScenario, writeRowsScenario } from "./rows-format-kit.js"

// What the PostgreSQL store keeps is a stored format (DESIGN §17), versioned by the schema
// version in tnx_meta (checked on open, migrated forward: src/postgres/migrations.ts). Every
// schema version this code reads has a golden file of its rows under fixtures/postgres-rows/,
// saved once by the release that wrote it and read here forever; a change to what the store
// writes fails the last test until it gets a new schema version (and a new file).

const url = process.env.TOOLNEXUS_TEST_PG_URL
const skip = url === undefined
if (skip) console.warn("postgres-rows-format: TOOLNEXUS_TEST_PG_URL is not set; skipped")
/** The schema versions with a golden file of rows. */
const ROW_VERSIONS = [4, 5]
const TABLES = ["tnx_meta", "tnx_conversations", "tnx_messages", "tnx_requests", "tnx_snapshots"]
const fixture = (version: number) => new URL(`./fixtures/postgres-rows/v${version}.json`, import.meta.url)
const golden = (version: number) => JSON.parse(readFileSync(fixture(version), "utf8")) as GoldenRows

// Namespaces of our own per run: parallel runs never meet, and dropping them cleans up.
const run = randomUUID().replaceAll("-", "").slice(0, 16)
const schemas: string[] = []
const newSchema = () => {
  const schema = `tnx_rows_${run}_${schemas.length}`
  schemas.push(schema)
  return schema
}
let admin: pg.Pool
let server: FakeLLMServer
beforeAll(async () => {
  if (skip) return
  admin = new pg.Pool({ connectionString: url, max: 2 })
  server = await createFakeLLMServer()
})
afterAll(async () => {
  if (skip) return
  try {
    for (const s of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`)
  } finally {
    await admin.end()
    await server.close()
  }
})

async function dump(schema: string): Promise<GoldenRows> {
  const tables: GoldenRows["tables"] = {}
  for (const t of TABLES) tables[t] = (await admin.query(`SELECT * FROM "${schema}".${t} ORDER BY 1, 2`)).rows
  return { schemaVersion: POSTGRES_MIGRATIONS.length, tables }
}

/** A schema of version `g.schemaVersion` holding exactly the golden file's rows. */
async function schemaOf(g: GoldenRows): Promise<string> {
  const schema = newSchema()
  const migrations = POSTGRES_MIGRATIONS.slice(0, g.schemaVersion)
  const old = new PostgresStore({ connectionString: url, schema, migrations })
  await old.get("nothing") // creates the schema at that version
  await old.close()
  for (const [table, rows] of Object.entries(g.tables)) {
    if (table === "tnx_meta") continue // written by the migrations
    for (const row of rows) {
      const columns = Object.keys(row)
      await admin.query(
        `INSERT INTO "${schema}".${table} (${columns.join(", ")}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(", ")})`,
        columns.map((c) => row[c]),
      )
    }
  }
  return schema
}

describe.skipIf(skip)("the PostgreSQL store's rows", () => {
  it.each(ROW_VERSIONS)("schema v%i: its rows are read, and the parked run resumes once", async (version) => {
    const g = golden(version)
    expect(g.schemaVersion).toBe(version)
    expect(g.tables.tnx_meta).toEqual([{ key: "schema_version", value: String(version) }])
    const store = new PostgresStore({ connectionString: url, schema: await schemaOf(g) })
    try {
      const answered = g.tables.tnx_requests?.find((r) => r.state === "applied")?.request_id as string
      await readRowsScenario(server, store, answered)
    } finally {
      await store.close()
    }
  })

  it(`the store writes schema v${POSTGRES_MIGRATIONS.length} exactly as its golden file holds it`, async () => {
    const schema = newSchema()
    const store = new PostgresStore({ connectionString: url, schema })
    try {
      await writeRowsScenario(server, store)
    } finally {
      await store.close()
    }
    const written = await dump(schema)
    // Writing a new version's file, once: TOOLNEXUS_WRITE_GOLDEN=1 (never for an existing one).
    if (process.env.TOOLNEXUS_WRITE_GOLDEN === "1")
      writeFileSync(fixture(written.schemaVersion), `${JSON.stringify(written, null, 2)}\n`, { flag: "wx" })
    expect(ROW_VERSIONS).toContain(written.schemaVersion)
    expect(normalizedRows(written)).toEqual(normalizedRows(golden(written.schemaVersion)))
  })
})
