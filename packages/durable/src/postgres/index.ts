export { PostgresStore } from "./postgres-store.js"
export type { PostgresStoreOptions } from "./postgres-store.js"
export type { PostgresPool } from "./postgres-pool.js"
