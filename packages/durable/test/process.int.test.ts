import { randomUUID } from "node:crypto"
import { describeProcessSuite } from "./process-suite.js"

const pgUrl = process.env.TOOLNEXUS_TEST_PG_URL
const redisUrl = process.env.TOOLNEXUS_TEST_REDIS_URL
for (const [name, url] of [
  ["TOOLNEXUS_TEST_PG_URL", pgUrl],
  ["TOOLNEXUS_TEST_REDIS_URL", redisUrl],
] as const) {
  if (!url)
    console.warn(`[toolnexus durable] skipping the process-boundary suites for ${name}: it is not set`)
}

// Each run gets its own schema and key prefix: parallel runs (other branches, CI shards)
// must never share migrations or rows.
const schema = `tnx_proc_${randomUUID().replaceAll("-", "").slice(0, 16)}`
const keyPrefix = `tnx-proc-${randomUUID()}:`

describeProcessSuite("PostgreSQL", {
  skip: pgUrl ? undefined : "TOOLNEXUS_TEST_PG_URL is not set",
  storeUrl: () => `${pgUrl as string}?schema=${schema}`,
  cleanup: async () => {
    const pg = await import("pg")
    const pool = new pg.default.Pool({ connectionString: pgUrl })
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await pool.end()
  },
})
describeProcessSuite("Redis", {
  skip: redisUrl ? undefined : "TOOLNEXUS_TEST_REDIS_URL is not set",
  storeUrl: () => `${redisUrl as string}?keyPrefix=${encodeURIComponent(keyPrefix)}`,
  cleanup: async () => {
    const { Redis } = await import("ioredis")
    const redis = new Redis(redisUrl as string)
    const keys = await redis.keys(`${keyPrefix}*`)
    if (keys.length > 0) await redis.del(...keys)
    redis.disconnect()
  },
})
