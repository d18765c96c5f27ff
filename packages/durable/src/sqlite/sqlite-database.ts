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
  /**
   * Compiles one SQL statement into a better-sqlite3 `Statement`; the store prepares each on its first use.
   */
  prepare(source: string): unknown
  /**
   * Wraps `fn` as a better-sqlite3 transaction function; the store calls its `.immediate`
   * form, which takes the write lock at once and rolls back if `fn` throws.
   */
  transaction(fn: (...args: any[]) => unknown): unknown
}
