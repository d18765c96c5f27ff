import { randomUUID } from "node:crypto"
import pg from "pg"
import { afterAll } from "vitest"
import { PostgresStore } from "../src/postgres/index.js"
import { RedisStore } from "../src/redis/index.js"
import { type ResumeBackend, describeResumeSuite } from "./resume-suite.js"
import { describeTreeIdentitySuite } from "./tree-identity-suite.js"

const pgUrl = process.env.TOOLNEXUS_TEST_PG_URL
const redisUrl = process.env.TOOLNEXUS_TEST_REDIS_URL
for (const [name, url] of [
  ["TOOLNEXUS_TEST_PG_URL", pgUrl],
  ["TOOLNEXUS_TEST_REDIS_URL", redisUrl],
] as const) {
  if (!url) console.warn(`[toolnexus durable] skipping the resume suites for ${name}: it is not set`)
}
const schema = `tnx_resume_${randomUUID().replaceAll("-", "").slice(0, 16)}`
const keyPrefix = `tnx-resume-${randomUUID()}:`

afterAll(async () => {
  if (pgUrl) {
    const pool = new pg.Pool({ connectionString: pgUrl })
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await pool.end()
  }
})

const postgres: ResumeBackend = {
  skip: pgUrl ? undefined : "TOOLNEXUS_TEST_PG_URL is not set",
  open: async (extra) => new PostgresStore({ connectionString: pgUrl, schema, opTimeoutMs: 200, ...extra }),
}
const redis: ResumeBackend = {
  skip: redisUrl ? undefined : "TOOLNEXUS_TEST_REDIS_URL is not set",
  open: async (extra) => new RedisStore({ url: redisUrl, keyPrefix, opTimeoutMs: 200, ...extra }),
}
for (const [name, backend] of [
  ["PostgreSQL", postgres],
  ["Redis", redis],
] as const) {
  describeResumeSuite(name, backend)
  describeTreeIdentitySuite(name, backend)
}
