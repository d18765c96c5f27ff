/**
 * The part of a pg `Pool` that {@link PostgresStore} needs from a pool the host owns. It is
 * declared here, structurally, so the published types compile without `@types/pg`; any pg 8.x
 * `Pool` satisfies it. The store sends its statements as named (prepared) query objects.
 */
export interface PostgresPool {
  /**
   * Checks out one client (a pg `PoolClient`) for a transaction; the store runs BEGIN/COMMIT
   * on it and releases it afterwards, with the error when the connection broke.
   */
  connect(): Promise<unknown>
  /**
   * Runs one statement on any pooled connection: a query object with `name` (prepared once
   * per connection), `text` and positional `values` (`$1`, `$2`, …), resolving with pg's
   * `QueryResult`.
   */
  query(
    query: string | { name?: string; text: string; values?: unknown[] },
    values?: unknown[],
  ): Promise<unknown>
}
