import { randomUUID } from "node:crypto"
import { describeHostContract } from "@toolnexus/agents/engine-testing"
import pg from "pg"
import { Redis } from "ioredis"
import { afterAll } from "vitest"
import { type DurableStore, type StoreHostAgent, createStoreHost } from "../src/index.js"
import { PostgresStore } from "../src/postgres/index.js"
import { RedisStore } from "../src/redis/index.js"

const host = (store: DurableStore, agents: unknown[], extra: object) =>
  createStoreHost({ store, agents: agents as StoreHostAgent[], sweepEveryMs: false, ...extra })

const pgUrl = process.env.TOOLNEXUS_TEST_PG_URL
const redisUrl = process.env.TOOLNEXUS_TEST_REDIS_URL
// A schema and a key prefix of our own: parallel runs never meet, and dropping them cleans up.
const schema = `tnx_host_${randomUUID().replaceAll("-", "").slice(0, 20)}`
const keyPrefix = `tnx-host-${randomUUID()}:`

afterAll(async () => {
  if (pgUrl) {
    const pool = new pg.Pool({ connectionString: pgUrl, max: 1 })
    try {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    } finally {
      await pool.end()
    }
  }
  if (redisUrl) {
    const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 })
    try {
      const keys = await redis.keys(`${keyPrefix}*`)
      if (keys.length > 0) await redis.del(...keys)
    } finally {
      redis.disconnect()
    }
  }
})

describeHostContract<DurableStore>("createStoreHost on PostgreSQL", {
  skip: pgUrl ? undefined : "TOOLNEXUS_TEST_PG_URL is not set",
  store: async () => new PostgresStore({ connectionString: pgUrl, schema }),
  host,
  closeStore: (store) => store.close(),
})

describeHostContract<DurableStore>("createStoreHost on Redis", {
  skip: redisUrl ? undefined : "TOOLNEXUS_TEST_REDIS_URL is not set",
  store: async () => new RedisStore({ url: redisUrl, keyPrefix }),
  host,
  closeStore: (store) => store.close(),
})
