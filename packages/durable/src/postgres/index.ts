export { PostgresStore } from "./postgres-store.js"
export type { PostgresStoreOptions } from "./postgres-store.js"
