/**
 * The part of a better-sqlite3 `Database` that {@link SqliteStore} needs from a connection the
 * host owns. It is declared here, structurally, so the published types compile without
 * `@types/better-sqlite3`; any better-sqlite3 12.x `Database` satisfies it.
 */
export interface SqliteDatabase {
  /** The file name the database was opened with, or `":memory:"`. */
  readonly name: string
  /** `false` once the host has closed it. */
  readonly open: boolean
  prepare(source: string): unknown
  transaction(fn: (...args: any[]) => unknown): unknown
}
