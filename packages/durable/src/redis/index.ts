export { RedisStore } from "./redis-store.js"
export type { RedisStoreOptions } from "./redis-store.js"
