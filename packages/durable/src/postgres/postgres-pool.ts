/**
 * The part of a pg `Pool` that {@link PostgresStore} needs from a pool the host owns. It is
 * declared here, structurally, so the published types compile without `@types/pg`; any pg 8.x
 * `Pool` satisfies it. The store sends its statements as named (prepared) query objects.
 */
export interface PostgresPool {
  connect(): Promise<unknown>
  query(
    query: string | { name?: string; text: string; values?: unknown[] },
    values?: unknown[],
  ): Promise<unknown>
}
