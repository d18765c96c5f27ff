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

// Each run keeps to a schema / key prefix of its own on the shared servers.
const namespace = `tnx_proc_${randomUUID().replaceAll("-", "").slice(0, 20)}`

describeProcessSuite("PostgreSQL", {
  skip: pgUrl ? undefined : "TOOLNEXUS_TEST_PG_URL is not set",
  storeUrl: () => pgUrl as string,
  namespace,
  cleanup: async (schema) => {
    const pg = await import("pg")
    const client = new pg.default.Client({ connectionString: pgUrl })
    await client.connect()
    try {
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    } finally {
      await client.end()
    }
  },
})
describeProcessSuite("Redis", {
  skip: redisUrl ? undefined : "TOOLNEXUS_TEST_REDIS_URL is not set",
  storeUrl: () => redisUrl as string,
  namespace,
  cleanup: async (prefix) => {
    const { Redis } = await import("ioredis")
    const client = new Redis(redisUrl as string)
    try {
      const keys = await client.keys(`${prefix}:*`)
      if (keys.length > 0) await client.del(...keys)
    } finally {
      client.disconnect()
    }
  },
})
