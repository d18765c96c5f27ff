import { randomUUID } from "node:crypto"
import { readFileSync, writeFileSync } from "node:fs"
import { createFakeLLMServer, type FakeLLMServer } from "@toolnexus/core/testing"
import { Redis } from "ioredis"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { RedisStore } from "../src/redis/index.js"
import { REDIS_MIGRATIONS } from "../src/redis/migrations.js"
import { type GoldenRows, normalizedRows, readRowsScenario, writeRowsScenario } from "./rows-format-kit.js"

// What the Redis store keeps is a stored format (DESIGN §17), versioned by the layout version
// in `<prefix>schema` (checked on open, migrated forward: src/redis/migrations.ts). Every
// layout version this code reads has a golden file of its keys under fixtures/redis-keys/,
// saved once by the release that wrote it and read here forever; a change to what the store
// writes fails the last test until it gets a new layout version (and a new file).

const url = process.env.TOOLNEXUS_TEST_REDIS_URL
const skip = url === undefined
if (skip) console.warn("redis-rows-format: TOOLNEXUS_TEST_REDIS_URL is not set; skipped")
/** The layout versions with a golden file of keys. */
const KEY_VERSIONS = [3]
const fixture = (version: number) => new URL(`./fixtures/redis-keys/v${version}.json`, import.meta.url)
const golden = (version: number) => JSON.parse(readFileSync(fixture(version), "utf8")) as GoldenRows

/** One stored key (its name after the prefix), its type and its value. */
interface StoredKey {
  key: string
  type: "string" | "hash" | "list" | "set" | "zset"
  value: unknown
}

// Prefixes of our own per run: parallel runs never meet, and deleting them cleans up.
const run = `tnx-rows-${randomUUID().slice(0, 8)}`
let prefixes = 0
const newPrefix = () => `${run}-${prefixes++}:`
let admin: Redis
let server: FakeLLMServer
beforeAll(async () => {
  if (skip) return
  admin = new Redis(url as string, { maxRetriesPerRequest: 1 })
  server = await createFakeLLMServer()
})
afterAll(async () => {
  if (skip) return
  try {
    const keys = await admin.keys(`${run}-*`)
    if (keys.length > 0) await admin.del(...keys)
  } finally {
    admin.disconnect()
    await server.close()
  }
})

async function dump(prefix: string): Promise<GoldenRows> {
  const keys: StoredKey[] = []
  for (const name of (await admin.keys(`${prefix}*`)).sort()) {
    const type = (await admin.type(name)) as StoredKey["type"]
    const key = name.slice(prefix.length)
    if (type === "string") keys.push({ key, type, value: await admin.get(name) })
    else if (type === "hash") {
      const fields = await admin.hgetall(name)
      keys.push({
        key,
        type,
        value: Object.fromEntries(Object.entries(fields).sort(([a], [b]) => (a < b ? -1 : 1))),
      })
    } else if (type === "list") keys.push({ key, type, value: await admin.lrange(name, 0, -1) })
    else if (type === "set") keys.push({ key, type, value: (await admin.smembers(name)).sort() })
    else if (type === "zset") keys.push({ key, type, value: await admin.zrange(name, 0, -1, "WITHSCORES") })
    else throw new Error(`unexpected key type ${type} of ${name}`)
  }
  const schema = keys.find((k) => k.key === "schema")?.value
  return { schemaVersion: Number(schema), tables: { keys: keys as unknown as Record<string, unknown>[] } }
}

/** A fresh prefix holding exactly the golden file's keys. */
async function prefixOf(g: GoldenRows): Promise<string> {
  const prefix = newPrefix()
  for (const { key, type, value } of (g.tables.keys ?? []) as unknown as StoredKey[]) {
    const name = `${prefix}${key}`
    if (type === "string") await admin.set(name, value as string)
    else if (type === "hash") await admin.hset(name, value as Record<string, string>)
    else if (type === "list") await admin.rpush(name, ...(value as string[]))
    else if (type === "set") await admin.sadd(name, ...(value as string[]))
    else {
      const pairs = value as string[]
      for (let i = 0; i < pairs.length; i += 2)
        await admin.zadd(name, pairs[i + 1] as string, pairs[i] as string)
    }
  }
  return prefix
}

/** The keys with sorted sets' scores (times: a request's pending since, a claim's expiry) as placeholders. */
function scoresOut(g: GoldenRows): GoldenRows {
  // A zset's scores are times; without them its members are compared in name order (two
  // members parked in the same millisecond, or a millisecond apart, are the same rows).
  const members = (value: string[]) => value.filter((_, i) => i % 2 === 0).sort()
  const keys = ((g.tables.keys ?? []) as unknown as StoredKey[]).map((k) =>
    k.type === "zset" ? { ...k, value: members(k.value as string[]).flatMap((m) => [m, "<time>"]) } : k,
  )
  return { ...g, tables: { keys: keys as unknown as Record<string, unknown>[] } }
}

describe.skipIf(skip)("the Redis store's keys", () => {
  it.each(KEY_VERSIONS)("layout v%i: its keys are read, and the parked run resumes once", async (version) => {
    const g = golden(version)
    expect(g.schemaVersion).toBe(version)
    const store = new RedisStore({ url, keyPrefix: await prefixOf(g) })
    try {
      await readRowsScenario(server, store, "req-golden-2")
    } finally {
      await store.close()
    }
  })

  it(`the store writes layout v${REDIS_MIGRATIONS.length} exactly as its golden file holds it`, async () => {
    const keyPrefix = newPrefix()
    const store = new RedisStore({ url, keyPrefix })
    try {
      await writeRowsScenario(server, store)
    } finally {
      await store.close()
    }
    const written = await dump(keyPrefix)
    expect(written.schemaVersion).toBe(REDIS_MIGRATIONS.length)
    // Writing a new version's file, once: TOOLNEXUS_WRITE_GOLDEN=1 (never for an existing one).
    if (process.env.TOOLNEXUS_WRITE_GOLDEN === "1")
      writeFileSync(fixture(written.schemaVersion), `${JSON.stringify(written, null, 2)}\n`, { flag: "wx" })
    expect(KEY_VERSIONS).toContain(written.schemaVersion)
    expect(normalizedRows(scoresOut(written))).toEqual(
      normalizedRows(scoresOut(golden(written.schemaVersion))),
    )
  })
})
