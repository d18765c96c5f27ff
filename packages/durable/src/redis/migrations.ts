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
  // 2: the request index: hashes `req:<request id>` (state, claim, runtime hold), sets
  // `holders:<request id>` (conversations waiting on it) and `runtime:<key>` (a saved runtime's
  // holds). Claims move from conversations to requests; the `claims` set now ranks request ids.
  `
  local p = ARGV[2]
  for _, id in ipairs(redis.call("ZRANGE", p .. "pending", 0, -1)) do
    local pid = redis.call("HGET", p .. "conv:" .. id, "pendingId")
    if pid then redis.call("SADD", p .. "holders:" .. pid, id) end
  end
  local claims = redis.call("ZRANGE", p .. "claims", 0, -1)
  redis.call("DEL", p .. "claims")
  for _, id in ipairs(claims) do
    local conv = p .. "conv:" .. id
    local f = redis.call("HMGET", conv, "claimToken", "claimRequest", "claimAnswer", "claimExpires", "pendingId")
    if f[1] and f[2] == f[5] then
      redis.call("HSET", p .. "req:" .. f[2], "state", "claimed", "attempts", "1", "claimToken", f[1],
        "claimConv", id, "claimAnswer", f[3], "claimExpires", f[4])
      redis.call("ZADD", p .. "claims", f[4], f[2])
    end
    redis.call("HDEL", conv, "claimAnswer", "claimExpires")
  end
  for _, conv in ipairs(redis.call("KEYS", p .. "conv:*")) do
    local consumed = redis.call("HGET", conv, "consumed")
    if consumed then redis.call("HSETNX", p .. "req:" .. consumed, "state", "applied") end
  end
  `,
  // 3: message bodies may be compact arrays (store-engine/compact-message.ts). No key changes:
  // the version makes an older store refuse the keys instead of misreading those messages.
  "return 0",
]
