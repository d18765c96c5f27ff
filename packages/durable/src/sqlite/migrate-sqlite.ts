import type BetterSqlite3 from "better-sqlite3"
import { checkSchemaVersion } from "../store-engine/schema-version.js"

/**
 * @internal Brings the database to the newest version of `migrations`, in one immediate
 * transaction. A database newer than `migrations` fails with `SchemaVersionError` before
 * anything is written.
 */
export function migrateSqlite(db: BetterSqlite3.Database, migrations: readonly string[], what: string): void {
  const known = migrations.length
  if (readSchemaVersion(db, known, what) === known) return
  db.transaction(() => {
    // Another connection may have migrated between the check above and taking the write lock.
    const from = readSchemaVersion(db, known, what)
    db.exec("CREATE TABLE IF NOT EXISTS tnx_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    for (let version = from; version < known; version++) db.exec(migrations[version] as string)
    db.prepare(
      "INSERT INTO tnx_meta (key, value) VALUES ('schema_version', ?) " +
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    ).run(String(known))
  }).immediate()
}

/** @internal The stored schema version, 0 for a database the store never touched. */
export function readSchemaVersion(db: BetterSqlite3.Database, known: number, what: string): number {
  // One statement when the schema exists (every open but the first); a database without
  // `tnx_meta` fails to prepare it.
  let statement: BetterSqlite3.Statement
  try {
    statement = db.prepare("SELECT value FROM tnx_meta WHERE key = 'schema_version'")
  } catch (error) {
    if (isMissingMeta(error)) return 0
    throw error
  }
  const row = statement.get() as { value: unknown } | undefined
  return row === undefined ? 0 : checkSchemaVersion(row.value, known, what)
}

function isMissingMeta(error: unknown): boolean {
  return error instanceof Error && /no such table: (main\.)?tnx_meta\b/.test(error.message)
}
