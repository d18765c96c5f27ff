/**
 * The Redis key layout, as an append-only list of migrations: entry `i` is a Lua chunk that
 * upgrades the keys under a prefix from version `i` to version `i + 1`, so the list's length
 * is the newest layout version. A chunk runs atomically with `ARGV[2]` set to the full key
 * prefix. Never edit a shipped entry; append a new one.
 */
export const REDIS_MIGRATIONS: readonly string[] = [
  // 1: hashes `conv:<id>`, lists `msgs:<id>`, sorted sets `pending` and `claims`, strings
  // `snap:<key>`. Keys appear on first write, so there is nothing to create.
  "return 0",
]
