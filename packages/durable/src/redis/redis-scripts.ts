import { RELEASED_TOKEN_PREFIX } from "../store-engine/claim-rules.js"

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
 * ARGV: id, expected revision, base (leading messages not sent; "-1" = all sent, compare them
 * with the stored bodies), total, claim token ("" = none), pending mode (keep|set|clear),
 * pending JSON, pending id, pending kind, full key prefix, the `sinceOnSet` decision for a set
 * (keep|now, made in JS from the row at the expected revision), checkpoint ("1": fenced by the
 * claim without consuming it), the rows stored at the expected revision (with base >= 0: those
 * from base on are replaced, as when a resumed run repairs its placeholder), then the bodies.
 * Returns {"OK", revision, kept, read, deleted, pending id}, {"STALE"} or {"LOST_CLAIM", request
 * id}. Keeps the request index: a fenced save marks the claimed request applied, and the
 * holder sets follow the pending request.
 */
export const SAVE_SCRIPT = `${PRELUDE}
local conv, msgs, prefix = KEYS[1], KEYS[2], ARGV[10]
local rev = tonumber(redis.call("HGET", conv, "rev") or "0")
local token = ARGV[5]
local claimed = redis.call("HGET", conv, "claimRequest")
if token ~= "" then
  local held = claimed and redis.call("HGET", prefix .. "req:" .. claimed, "claimToken")
  if redis.call("HGET", conv, "claimToken") ~= token or held ~= token then
    return {"LOST_CLAIM", claimed or redis.call("HGET", conv, "pendingId") or ""}
  end
end
local base, total, first = tonumber(ARGV[3]), tonumber(ARGV[4]), 14
local keep, read, deleted = 0, 0, 0
if rev ~= tonumber(ARGV[2]) then return {"STALE"} end
if base >= 0 then
  local stored = tonumber(ARGV[13])
  if redis.call("LLEN", msgs) ~= stored then return {"STALE"} end
  keep = base
  if stored > base then
    deleted = stored - base
    if base == 0 then redis.call("DEL", msgs) else redis.call("LTRIM", msgs, 0, base - 1) end
  end
else
  base = 0
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
if token ~= "" and ARGV[12] ~= "1" then
  redis.call("HSET", conv, "consumed", claimed)
  redis.call("HDEL", conv, "claimToken", "claimRequest")
  local req = prefix .. "req:" .. claimed
  redis.call("HSET", req, "state", "applied")
  redis.call("HDEL", req, "claimToken", "claimExpires")
  redis.call("ZREM", KEYS[4], claimed)
end
local previous = redis.call("HGET", conv, "pendingId")
if ARGV[6] == "clear" then
  redis.call("HDEL", conv, "pending", "pendingId", "pendingKind", "since")
  redis.call("ZREM", KEYS[3], ARGV[1])
  if previous then redis.call("SREM", prefix .. "holders:" .. previous, ARGV[1]) end
elseif ARGV[6] == "set" then
  local since = ARGV[11] == "keep" and redis.call("HGET", conv, "since") or fmt(now)
  redis.call("HSET", conv, "pending", ARGV[7], "pendingId", ARGV[8], "pendingKind", ARGV[9], "since", since)
  redis.call("ZADD", KEYS[3], since, ARGV[1])
  if previous and previous ~= ARGV[8] then redis.call("SREM", prefix .. "holders:" .. previous, ARGV[1]) end
  redis.call("SADD", prefix .. "holders:" .. ARGV[8], ARGV[1])
end
return {"OK", rev + 1, keep, read, deleted, redis.call("HGET", conv, "pendingId") or ""}
`

/**
 * @internal Reads a transcript atomically. KEYS: conv hash, msgs list.
 * Returns nil for an unknown conversation, else {revision, count, bodies, pending id or ""}.
 */
export const GET_SCRIPT = `
local head = redis.call("HMGET", KEYS[1], "rev", "count", "pendingId")
if not head[1] then return false end
return {head[1], head[2], redis.call("LRANGE", KEYS[2], 0, -1), head[3] or ""}
`

/**
 * @internal The read half of a claim, with a fast path: the claim is decided in TypeScript
 * (`judgeClaim`, claim-rules.ts), never here. KEYS: conv hash, claims zset, msgs list.
 * ARGV: id, answer id, answer JSON, new token, lease ms, runtime key ("" = none), full key
 * prefix, "1" when the answer approves (else "").
 * Fast path, a plain first claim: the request has no index row or an open one without a
 * claim token, no other runtime holds it, the conversation waits on it, and an approval's
 * pending JSON has no \`expiresAt\` to judge (no mention of it, nor any escape that could
 * spell it). Only there, where \`judgeClaim\` grants "claim" too (pinned by
 * claim-rules.test.ts and CLAIM_CASES), it claims and returns {"claim", pending JSON,
 * revision, count ("" = unset), bodies, conversation ("" = the claimed one), its pending id}:
 * the transcript as GET_SCRIPT reads it of the conversation the resume loads first (a saved
 * runtime's deepest holder, as the request records it; else the claimed one), so that load
 * needs no round trip of its own; just {"claim", pending JSON} when that one is not stored.
 * Anything else writes nothing and returns the facts for \`judgeClaim\`: {"facts", conversation
 * exists ("1" or ""), pending id, pending JSON, consumed id, request state, runtime key, claim
 * token, claim expiry ms, claimed answer JSON, claim holder's conversation id, attempts, the
 * holder's pending id, server time ms} ("" = none), applied by CLAIM_WRITE_SCRIPT.
 */
export const CLAIM_SCRIPT = `${PRELUDE}
local aid = ARGV[2]
local req = ARGV[7] .. "req:" .. aid
local r = redis.call("HMGET", req, "state", "runtimeKey", "claimToken", "claimExpires", "claimAnswer", "claimConv",
  "attempts")
local f = redis.call("HMGET", KEYS[1], "pendingId", "pending", "consumed")
local p = f[2] or ""
if (not r[1] or (r[1] == "open" and not r[3])) and (r[2] or "") == ARGV[6] and f[1] == aid
    and not (ARGV[8] == "1" and (string.find(p, "expiresAt", 1, true) or string.find(p, "\\\\u", 1, true))) then
  local expires = fmt(now_ms() + tonumber(ARGV[5]))
  redis.call("HSET", req, "state", "claimed", "claimToken", ARGV[4], "claimConv", ARGV[1], "claimAnswer", ARGV[3],
    "claimExpires", expires)
  redis.call("HINCRBY", req, "attempts", 1)
  redis.call("ZADD", KEYS[2], expires, aid)
  redis.call("HSET", KEYS[1], "claimToken", ARGV[4], "claimRequest", aid)
  local conv, msgs, of = KEYS[1], KEYS[3], ""
  local deepest = ARGV[6] ~= "" and redis.call("HGET", req, "holder")
  if deepest and deepest ~= ARGV[1] then
    conv, msgs, of = ARGV[7] .. "conv:" .. deepest, ARGV[7] .. "msgs:" .. deepest, deepest
  end
  local head = redis.call("HMGET", conv, "rev", "count", "pendingId")
  if not head[1] then return {"claim", p} end
  return {"claim", p, head[1], head[2] or "", redis.call("LRANGE", msgs, 0, -1), of, head[3] or ""}
end
local holder = ""
if r[6] then
  if r[6] == ARGV[1] then holder = f[1] or ""
  else holder = redis.call("HGET", ARGV[7] .. "conv:" .. r[6], "pendingId") or "" end
end
local exists = redis.call("EXISTS", KEYS[1]) == 1 and "1" or ""
return {"facts", exists, f[1] or "", p, f[3] or "", r[1] or "", r[2] or "", r[3] or "", r[4] or "", r[5] or "",
  r[6] or "", r[7] or "0", holder, fmt(now_ms())}
`

/**
 * @internal The write half of a claim that \`judgeClaim\` granted or found exhausted: a
 * compare-and-set, done only while the facts CLAIM_SCRIPT read still hold. KEYS: conv hash,
 * claims zset. ARGV: id, answer id, full key prefix, "grant" | "fail", then the facts as read:
 * pending id, consumed id, request state, claim token, claim expiry, claim holder, attempts, the
 * holder's pending id; then for "grant": token, answer JSON, claim expiry ms; for "fail": the
 * lastError JSON. Returns "OK", or "STALE" (nothing written) when a fact changed meanwhile.
 */
export const CLAIM_WRITE_SCRIPT = `
local aid, prefix = ARGV[2], ARGV[3]
local req = prefix .. "req:" .. aid
local f = redis.call("HMGET", KEYS[1], "pendingId", "consumed")
local r = redis.call("HMGET", req, "state", "claimToken", "claimExpires", "claimConv", "attempts")
if (f[1] or "") ~= ARGV[5] or (f[2] or "") ~= ARGV[6] or (r[1] or "") ~= ARGV[7] or (r[2] or "") ~= ARGV[8]
    or (r[3] or "") ~= ARGV[9] or (r[4] or "") ~= ARGV[10] or (r[5] or "0") ~= ARGV[11] then
  return "STALE"
end
if r[4] and r[4] ~= ARGV[1] and (redis.call("HGET", prefix .. "conv:" .. r[4], "pendingId") or "") ~= ARGV[12] then
  return "STALE"
end
if ARGV[4] == "fail" then
  redis.call("HSET", req, "state", "failed", "lastError", ARGV[13])
  redis.call("ZREM", KEYS[2], aid)
  redis.call("SADD", prefix .. "failed", aid)
  return "OK"
end
redis.call("HSET", req, "state", "claimed", "claimToken", ARGV[13], "claimConv", ARGV[1], "claimAnswer", ARGV[14],
  "claimExpires", ARGV[15])
redis.call("HINCRBY", req, "attempts", 1)
redis.call("ZADD", KEYS[2], ARGV[15], aid)
redis.call("HSET", KEYS[1], "claimToken", ARGV[13], "claimRequest", aid)
return "OK"
`

/**
 * @internal Expires a claim now if `token` holds it, and revokes the token (see
 * RELEASED_TOKEN_PREFIX). KEYS: conv hash, claims zset.
 * ARGV: id, token, full key prefix, lastError JSON ("" = a plain release), max attempts.
 * With an error it is recorded, and at max attempts the request becomes failed.
 */
export const RELEASE_SCRIPT = `${PRELUDE}
local rid = redis.call("HGET", KEYS[1], "claimRequest")
if not rid then return 0 end
local req = ARGV[3] .. "req:" .. rid
local r = redis.call("HMGET", req, "claimToken", "claimConv", "claimExpires", "state", "attempts")
if r[1] ~= ARGV[2] or r[2] ~= ARGV[1] or r[4] ~= "claimed" then return 0 end
local now = now_ms()
if tonumber(r[3] or "0") > now then
  redis.call("HSET", req, "claimExpires", fmt(now))
  redis.call("ZADD", KEYS[2], fmt(now), rid)
end
-- The token is revoked: the holder's renew and fenced save fail, the answer stays for the takeover.
redis.call("HSET", req, "claimToken", "${RELEASED_TOKEN_PREFIX}" .. ARGV[2])
if ARGV[4] ~= "" then
  redis.call("HSET", req, "lastError", ARGV[4])
  if tonumber(r[5] or "0") >= tonumber(ARGV[5]) then
    redis.call("HSET", req, "state", "failed")
    redis.call("ZREM", KEYS[2], rid)
    redis.call("SADD", ARGV[3] .. "failed", rid)
  end
end
return 1
`

/**
 * @internal Extends a claim's lease if \`token\` still holds it. KEYS: conv hash, claims zset.
 * ARGV: id, token, full key prefix, lease ms. Returns 1 when renewed, 0 when the claim is lost.
 */
export const RENEW_SCRIPT = `${PRELUDE}
local rid = redis.call("HGET", KEYS[1], "claimRequest")
if not rid then return 0 end
local req = ARGV[3] .. "req:" .. rid
local r = redis.call("HMGET", req, "claimToken", "claimConv", "state")
if r[1] ~= ARGV[2] or r[2] ~= ARGV[1] or r[3] ~= "claimed" then return 0 end
local expires = fmt(now_ms() + tonumber(ARGV[4]))
redis.call("HSET", req, "claimExpires", expires)
redis.call("ZADD", KEYS[2], expires, rid)
return 1
`

/**
 * @internal Moves a failed request back to claimed, its lease expired and no attempts
 * counted, so the next delivery takes it over with the stored decision. KEYS: req hash,
 * claims zset, failed set. ARGV: request id. Returns the stored answer JSON, or false.
 */
export const REOPEN_SCRIPT = `
if redis.call("HGET", KEYS[1], "state") ~= "failed" then return false end
redis.call("HSET", KEYS[1], "state", "claimed", "attempts", "0", "claimExpires", "0")
redis.call("ZADD", KEYS[2], "0", ARGV[1])
redis.call("SREM", KEYS[3], ARGV[1])
return redis.call("HGET", KEYS[1], "claimAnswer")
`

/** The fields a holder row carries, in order. */
const HOLDER_ROW_SOURCE = `
local function holder(out, prefix, id, rid)
  local c = redis.call("HMGET", prefix .. "conv:" .. id, "pending", "pendingId", "since")
  if not c[1] or c[2] ~= rid then return end
  local r = redis.call("HMGET", prefix .. "req:" .. rid, "state", "runtimeKey", "holder", "path", "attempts")
  out[#out + 1] = id
  out[#out + 1] = c[1]
  out[#out + 1] = rid
  out[#out + 1] = c[3]
  for k = 1, 5 do out[#out + 1] = r[k] or "" end
end
`

/**
 * @internal Lists the conversations waiting on requests, with their index rows. KEYS: pending
 * zset. ARGV: full key prefix, request id ("" = all), kind ("" with ARGV[4] "0" = any).
 * Returns a flat list of 9 fields per holder: id, pending JSON, request id, since, state,
 * runtime key, recorded holder, path JSON, attempts.
 */
export const HOLDERS_SCRIPT = `${HOLDER_ROW_SOURCE}
local prefix, rid, filter = ARGV[1], ARGV[2], ARGV[4] == "1"
local out = {}
if rid ~= "" then
  for _, id in ipairs(redis.call("SMEMBERS", prefix .. "holders:" .. rid)) do holder(out, prefix, id, rid) end
  return out
end
for _, id in ipairs(redis.call("ZRANGE", KEYS[1], 0, -1)) do
  local f = redis.call("HMGET", prefix .. "conv:" .. id, "pendingId", "pendingKind")
  if f[1] and (not filter or f[2] == ARGV[3]) then holder(out, prefix, id, f[1]) end
end
return out
`

/**
 * @internal Lists claims whose lease ran out, soonest expired first, while the conversation
 * they were taken through still waits on their request. KEYS: claims zset. ARGV: full key
 * prefix, limit (-1 = all). Returns a flat list of id, pending JSON, answer JSON.
 */
export const LIST_EXPIRED_SCRIPT = `${PRELUDE}
local prefix, limit = ARGV[1], tonumber(ARGV[2])
local out = {}
if limit == 0 then return out end
local now = now_ms()
for _, rid in ipairs(redis.call("ZRANGEBYSCORE", KEYS[1], "-inf", fmt(now))) do
  local r = redis.call("HMGET", prefix .. "req:" .. rid, "claimToken", "claimConv", "claimAnswer", "claimExpires",
    "state")
  if not r[1] or r[5] ~= "claimed" then
    redis.call("ZREM", KEYS[1], rid)
  elseif tonumber(r[4] or "0") <= now then
    local c = redis.call("HMGET", prefix .. "conv:" .. r[2], "pendingId", "pending")
    if c[1] == rid then
      out[#out + 1] = r[2]
      out[#out + 1] = c[2]
      out[#out + 1] = r[3]
      if limit > 0 and #out >= limit * 3 then break end
    end
  end
end
return out
`

/**
 * @internal Deletes a conversation with its messages; its open request goes too unless
 * another conversation still holds it (an applied request keeps its decision). KEYS: conv
 * hash, msgs list, pending zset, claims zset. ARGV: id, full key prefix.
 */
export const DELETE_SCRIPT = `
local prefix, id = ARGV[2], ARGV[1]
local f = redis.call("HMGET", KEYS[1], "pendingId", "claimRequest")
for k = 1, 2 do
  local rid = f[k]
  if rid then
    local holders = prefix .. "holders:" .. rid
    redis.call("SREM", holders, id)
    local req = prefix .. "req:" .. rid
    if redis.call("SCARD", holders) == 0 and redis.call("HGET", req, "state") ~= "applied" then
      redis.call("DEL", req)
      redis.call("ZREM", KEYS[4], rid)
    end
  end
end
redis.call("DEL", KEYS[1], KEYS[2])
redis.call("ZREM", KEYS[3], id)
return 1
`

/**
 * @internal Stores a runtime snapshot and the requests its tree holds, replacing the holds it
 * had. KEYS: snapshot key, the runtime's hold set. ARGV: full key prefix, runtime key, body,
 * "1" when holds follow, then (request id, conversation id, path JSON or "") triples.
 */
export const SNAPSHOT_SCRIPT = `
redis.call("SET", KEYS[1], ARGV[3])
if ARGV[4] ~= "1" then return 1 end
local prefix = ARGV[1]
for _, rid in ipairs(redis.call("SMEMBERS", KEYS[2])) do
  local req = prefix .. "req:" .. rid
  local state = redis.call("HGET", req, "state")
  if (state == "open" or state == "claimed") and redis.call("HGET", req, "runtimeKey") == ARGV[2] then
    redis.call("HDEL", req, "runtimeKey", "holder", "path")
  end
end
redis.call("DEL", KEYS[2])
for i = 5, #ARGV, 3 do
  local req = prefix .. "req:" .. ARGV[i]
  local state = redis.call("HGET", req, "state")
  if not state or state == "open" or state == "claimed" then
    if not state then redis.call("HSET", req, "state", "open", "attempts", "0") end
    redis.call("HSET", req, "runtimeKey", ARGV[2], "holder", ARGV[i + 1])
    if ARGV[i + 2] ~= "" then redis.call("HSET", req, "path", ARGV[i + 2]) else redis.call("HDEL", req, "path") end
    redis.call("SADD", KEYS[2], ARGV[i])
  end
end
return 1
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

/**
 * @internal Lists the holders of failed requests. KEYS: failed set. ARGV: full key prefix.
 * Returns the holders script's 9 fields per holder, then the request's lastError JSON.
 */
export const FAILED_SCRIPT = `${HOLDER_ROW_SOURCE}
local prefix = ARGV[1]
local out = {}
for _, rid in ipairs(redis.call("SMEMBERS", KEYS[1])) do
  local err = redis.call("HGET", prefix .. "req:" .. rid, "lastError") or ""
  for _, id in ipairs(redis.call("SMEMBERS", prefix .. "holders:" .. rid)) do
    local before = #out
    holder(out, prefix, id, rid)
    if #out > before then out[#out + 1] = err end
  end
end
return out
`

/** A script's body as a Lua function of its KEYS (`K`) and ARGV (`A`), to call from another script. */
function asFunction(name: string, source: string): string {
  const body = source
    .replaceAll("KEYS[", "K[")
    .replaceAll("ARGV[", "A[")
    .replaceAll("#ARGV", "#A")
    .replaceAll("unpack(ARGV,", "unpack(A,")
  if (/\b(KEYS|ARGV)\b/.test(body))
    throw new Error(`script ${name} reads KEYS or ARGV in a way asFunction does not rewrite`)
  return `local function ${name}(K, A)\n${body}\nend\n`
}

/**
 * @internal Writes a resumed cascade's saves and its runtime snapshot in one script, all or
 * nothing: every save's claim and revision are checked before anything is written. KEYS: per
 * save the four keys of SAVE_SCRIPT, then the two of SNAPSHOT_SCRIPT. ARGV: the number of
 * saves, "1" when a snapshot follows, then per save its argument count and SAVE_SCRIPT's
 * arguments, then SNAPSHOT_SCRIPT's arguments. Returns {"OK", reply per save…} with each
 * save's {"OK", …} reply flattened as six fields, {"STALE", save index (1-based)} or
 * {"LOST_CLAIM", save index, request id}; nothing is written unless "OK".
 */
export const COMMIT_SCRIPT = `${PRELUDE}
${asFunction("save", SAVE_SCRIPT.slice(PRELUDE.length))}
${asFunction("snapshot", SNAPSHOT_SCRIPT)}
local function check(K, A)
  local conv, token = K[1], A[5]
  if token ~= "" then
    local claimed = redis.call("HGET", conv, "claimRequest")
    local held = claimed and redis.call("HGET", A[10] .. "req:" .. claimed, "claimToken")
    if redis.call("HGET", conv, "claimToken") ~= token or held ~= token then
      return {"LOST_CLAIM", claimed or redis.call("HGET", conv, "pendingId") or ""}
    end
  end
  if tonumber(redis.call("HGET", conv, "rev") or "0") ~= tonumber(A[2]) then return {"STALE"} end
  if tonumber(A[3]) >= 0 and redis.call("LLEN", K[2]) ~= tonumber(A[13]) then return {"STALE"} end
  return nil
end
local n, calls, at = tonumber(ARGV[1]), {}, 3
for i = 1, n do
  local argc = tonumber(ARGV[at])
  local keys = {KEYS[4 * i - 3], KEYS[4 * i - 2], KEYS[4 * i - 1], KEYS[4 * i]}
  local args = {}
  for j = 1, argc do args[j] = ARGV[at + j] end
  local failed = check(keys, args)
  if failed then
    if failed[1] == "STALE" then return {"STALE", i} end
    return {"LOST_CLAIM", i, failed[2]}
  end
  calls[i] = {keys, args}
  at = at + 1 + argc
end
local out = {"OK"}
for i = 1, n do
  local reply = save(calls[i][1], calls[i][2])
  for j = 1, 6 do out[#out + 1] = reply[j] end
end
if ARGV[2] == "1" then
  local args = {}
  for j = at, #ARGV do args[#args + 1] = ARGV[j] end
  snapshot({KEYS[4 * n + 1], KEYS[4 * n + 2]}, args)
end
return out
`
