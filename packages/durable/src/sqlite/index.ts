export { SqliteStore } from "./sqlite-store.js"
export type { SqliteStoreOptions } from "./sqlite-store.js"
export type { SqliteDatabase } from "./sqlite-database.js"
