import { randomUUID } from "node:crypto"
import { Redis } from "ioredis"
import pg from "pg"
import { afterAll } from "vitest"
import { PostgresStore } from "../src/postgres/index.js"
import { RedisStore } from "../src/redis/index.js"
import { describeGrantsAndDelivery } from "./grants-delivery-suite.js"

const pgUrl = process.env.TOOLNEXUS_TEST_PG_URL
const redisUrl = process.env.TOOLNEXUS_TEST_REDIS_URL
// Our own schema and key prefix, dropped afterwards; each store of a test gets a fresh one.
const tag = randomUUID().replaceAll("-", "").slice(0, 16)
const schemas: string[] = []
const prefixes: string[] = []

afterAll(async () => {
  if (pgUrl && schemas.length > 0) {
    const pool = new pg.Pool({ connectionString: pgUrl, max: 1 })
    try {
      for (const schema of schemas) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    } finally {
      await pool.end()
    }
  }
  if (redisUrl && prefixes.length > 0) {
    const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 })
    try {
      for (const prefix of prefixes) {
        const keys = await redis.keys(`${prefix}*`)
        if (keys.length > 0) await redis.del(...keys)
      }
    } finally {
      redis.disconnect()
    }
  }
})

describeGrantsAndDelivery("PostgreSQL", {
  skip: pgUrl ? undefined : "TOOLNEXUS_TEST_PG_URL is not set",
  store: async () => {
    const schema = `tnx_grants_${tag}_${schemas.length}`
    schemas.push(schema)
    return new PostgresStore({ connectionString: pgUrl, schema })
  },
  closeStore: (store) => store.close(),
})

describeGrantsAndDelivery("Redis", {
  skip: redisUrl ? undefined : "TOOLNEXUS_TEST_REDIS_URL is not set",
  store: async () => {
    const keyPrefix = `tnx-grants-${tag}-${prefixes.length}:`
    prefixes.push(keyPrefix)
    return new RedisStore({ url: redisUrl, keyPrefix })
  },
  closeStore: (store) => store.close(),
})
