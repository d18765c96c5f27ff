/** Epoch milliseconds on the server's clock, and whole numbers as strings Lua won't round. */
const PRELUDE = `
local function now_ms()
  local t = redis.call("TIME")
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function fmt(n) return string.format("%.0f", n) end
`

/**
 * @internal Saves a transcript. KEYS: conv hash, msgs list, pending zset, claims zset.
 * ARGV: id, expected revision ("" = compare with the stored bodies), base (leading messages
 * not sent), total, claim token ("" = none), pending mode (keep|set|clear), pending JSON,
 * pending id, pending kind, then the bodies of messages base..total-1.
 * Returns {"OK", revision, kept, read, deleted}, {"STALE"} or {"LOST_CLAIM", request id}.
 */
export const SAVE_SCRIPT = `${PRELUDE}
local conv, msgs = KEYS[1], KEYS[2]
local rev = tonumber(redis.call("HGET", conv, "rev") or "0")
local token = ARGV[5]
if token ~= "" and redis.call("HGET", conv, "claimToken") ~= token then
  local held = redis.call("HGET", conv, "claimRequest") or redis.call("HGET", conv, "pendingId") or ""
  return {"LOST_CLAIM", held}
end
local base, total, first = tonumber(ARGV[3]), tonumber(ARGV[4]), 10
local keep, read, deleted = 0, 0, 0
if ARGV[2] ~= "" then
  if rev ~= tonumber(ARGV[2]) or redis.call("LLEN", msgs) ~= base then return {"STALE"} end
  keep = base
else
  local stored = redis.call("LRANGE", msgs, 0, -1)
  read = #stored
  while keep < #stored and keep < total and stored[keep + 1] == ARGV[first + keep] do keep = keep + 1 end
  if #stored > keep then
    deleted = #stored - keep
    if keep == 0 then redis.call("DEL", msgs) else redis.call("LTRIM", msgs, 0, keep - 1) end
  end
end
local i, last = first + keep - base, first + total - base - 1
while i <= last do
  local j = math.min(i + 999, last)
  redis.call("RPUSH", msgs, unpack(ARGV, i, j))
  i = j + 1
end
local now = now_ms()
redis.call("HSET", conv, "rev", fmt(rev + 1), "count", fmt(total), "updatedAt", fmt(now))
redis.call("HSETNX", conv, "createdAt", fmt(now))
if token ~= "" then
  local claimed = redis.call("HGET", conv, "claimRequest")
  if claimed then redis.call("HSET", conv, "consumed", claimed) else redis.call("HDEL", conv, "consumed") end
  redis.call("HDEL", conv, "claimToken", "claimRequest", "claimAnswer", "claimExpires")
  redis.call("ZREM", KEYS[4], ARGV[1])
end
if ARGV[6] == "clear" then
  redis.call("HDEL", conv, "pending", "pendingId", "pendingKind", "since")
  redis.call("ZREM", KEYS[3], ARGV[1])
elseif ARGV[6] == "set" then
  local since = redis.call("HGET", conv, "since")
  if redis.call("HGET", conv, "pendingId") ~= ARGV[8] or not since then since = fmt(now) end
  redis.call("HSET", conv, "pending", ARGV[7], "pendingId", ARGV[8], "pendingKind", ARGV[9], "since", since)
  redis.call("ZADD", KEYS[3], since, ARGV[1])
end
return {"OK", rev + 1, keep, read, deleted}
`

/**
 * @internal Reads a transcript atomically. KEYS: conv hash, msgs list.
 * Returns nil for an unknown conversation, else {revision, count, bodies}.
 */
export const GET_SCRIPT = `
local head = redis.call("HMGET", KEYS[1], "rev", "count")
if not head[1] then return false end
return {head[1], head[2], redis.call("LRANGE", KEYS[2], 0, -1)}
`

/**
 * @internal Claims an answer. KEYS: conv hash, claims zset. ARGV: id, answer id, answer JSON,
 * new token, lease ms. Returns {refusal} or {"claim"|"takeover", pending JSON, answer JSON}.
 */
export const CLAIM_SCRIPT = `${PRELUDE}
if redis.call("EXISTS", KEYS[1]) == 0 then return {"no-conversation"} end
local f = redis.call("HMGET", KEYS[1], "pendingId", "pending", "consumed", "claimToken", "claimRequest",
  "claimAnswer", "claimExpires")
local pendingId, pending, consumed, claimToken, claimRequest = f[1], f[2], f[3], f[4], f[5]
if pendingId ~= ARGV[2] then
  if consumed == ARGV[2] then return {"already-applied"} end
  return {"unknown-request"}
end
local now = now_ms()
local expires = now + tonumber(ARGV[5])
if claimToken and claimRequest == pendingId then
  if tonumber(f[7] or "0") > now then return {"busy"} end
  redis.call("HSET", KEYS[1], "claimToken", ARGV[4], "claimExpires", fmt(expires))
  redis.call("ZADD", KEYS[2], fmt(expires), ARGV[1])
  return {"takeover", pending, f[6]}
end
redis.call("HSET", KEYS[1], "claimToken", ARGV[4], "claimRequest", pendingId, "claimAnswer", ARGV[3],
  "claimExpires", fmt(expires))
redis.call("ZADD", KEYS[2], fmt(expires), ARGV[1])
return {"claim", pending, ARGV[3]}
`

/** @internal Expires a claim now if `token` holds it. KEYS: conv hash, claims zset. ARGV: id, token. */
export const RELEASE_SCRIPT = `${PRELUDE}
if redis.call("HGET", KEYS[1], "claimToken") ~= ARGV[2] then return 0 end
local now = now_ms()
if tonumber(redis.call("HGET", KEYS[1], "claimExpires") or "0") > now then
  redis.call("HSET", KEYS[1], "claimExpires", fmt(now))
  redis.call("ZADD", KEYS[2], fmt(now), ARGV[1])
end
return 1
`

/**
 * @internal Lists pending requests oldest first. KEYS: pending zset. ARGV: conv key prefix,
 * limit (-1 = all), kind, "1" to filter by kind. Returns a flat list of id, JSON, since.
 */
export const LIST_PENDING_SCRIPT = `
local limit, filter = tonumber(ARGV[2]), ARGV[4] == "1"
local out = {}
if limit == 0 then return out end
local ids
if not filter and limit > 0 then
  ids = redis.call("ZRANGE", KEYS[1], 0, limit - 1)
else
  ids = redis.call("ZRANGE", KEYS[1], 0, -1)
end
for _, id in ipairs(ids) do
  local f = redis.call("HMGET", ARGV[1] .. id, "pending", "pendingKind", "since")
  if f[1] and (not filter or f[2] == ARGV[3]) then
    out[#out + 1] = id
    out[#out + 1] = f[1]
    out[#out + 1] = f[3]
    if limit > 0 and #out >= limit * 3 then break end
  end
end
return out
`

/**
 * @internal Lists claims whose lease ran out, soonest expired first. KEYS: claims zset.
 * ARGV: conv key prefix, limit (-1 = all). Returns a flat list of id, pending JSON, answer JSON.
 */
export const LIST_EXPIRED_SCRIPT = `${PRELUDE}
local limit = tonumber(ARGV[2])
local out = {}
if limit == 0 then return out end
local now = now_ms()
for _, id in ipairs(redis.call("ZRANGEBYSCORE", KEYS[1], "-inf", fmt(now))) do
  local f = redis.call("HMGET", ARGV[1] .. id, "claimToken", "claimRequest", "pendingId", "pending",
    "claimAnswer", "claimExpires")
  if not f[1] then
    redis.call("ZREM", KEYS[1], id)
  elseif f[2] == f[3] and tonumber(f[6] or "0") <= now then
    out[#out + 1] = id
    out[#out + 1] = f[4]
    out[#out + 1] = f[5]
    if limit > 0 and #out >= limit * 3 then break end
  end
end
return out
`

/**
 * @internal Wraps one migration chunk so it runs only against the version it upgrades from.
 * KEYS: schema key. ARGV: from version, full key prefix. Returns the version afterwards.
 */
export function migrationScript(chunk: string): string {
  return `
local current = tonumber(redis.call("GET", KEYS[1]) or "0")
if current ~= tonumber(ARGV[1]) then return current end
local function migrate()
${chunk}
end
migrate()
redis.call("SET", KEYS[1], tostring(current + 1))
return current + 1
`
}
