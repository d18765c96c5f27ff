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

describeProcessSuite("PostgreSQL", {
  skip: pgUrl ? undefined : "TOOLNEXUS_TEST_PG_URL is not set",
  storeUrl: () => pgUrl as string,
})
describeProcessSuite("Redis", {
  skip: redisUrl ? undefined : "TOOLNEXUS_TEST_REDIS_URL is not set",
  storeUrl: () => redisUrl as string,
})
