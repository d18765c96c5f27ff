import { randomUUID } from "node:crypto"
// The built kit: its workers are separate processes running the built package.
import { type CrashReport, runCrashKit } from "@toolnexus/durable/testing"
import { afterAll, describe, expect, it } from "vitest"

const pgUrl = process.env.TOOLNEXUS_TEST_PG_URL
const redisUrl = process.env.TOOLNEXUS_TEST_REDIS_URL

/** `url` with its port replaced, for the kit's proxy in front of the server. */
function viaPort(url: string, port: number): string {
  const parsed = new URL(url)
  parsed.port = String(port)
  return parsed.toString()
}

function withParam(url: string, name: string, value: string): string {
  return `${url}${url.includes("?") ? "&" : "?"}${name}=${encodeURIComponent(value)}`
}

function check(report: CrashReport): void {
  console.info(JSON.stringify(report.outcomes.map(({ problems: _, ...o }) => o)))
  expect(report.failures).toEqual([])
}

describe.skipIf(!pgUrl)("the crash-point kit on PostgreSQL", () => {
  // A schema of its own: parallel runs never share migrations or rows.
  const schema = `tnx_kit_${randomUUID().replaceAll("-", "").slice(0, 16)}`
  afterAll(async () => {
    const pg = await import("pg")
    const pool = new pg.default.Pool({ connectionString: pgUrl })
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await pool.end()
  })
  it("keeps the §9 promise at every crash point", { timeout: 300_000 }, async () => {
    const url = withParam(pgUrl as string, "schema", schema)
    const target = new URL(pgUrl as string)
    check(
      await runCrashKit({
        store: { url },
        proxy: {
          target: { host: target.hostname, port: Number(target.port || 5432) },
          store: (port) => ({ url: withParam(viaPort(pgUrl as string, port), "schema", schema) }),
        },
      }),
    )
  })
})

describe.skipIf(!redisUrl)("the crash-point kit on Redis", () => {
  const keyPrefix = `tnx-kit-${randomUUID()}:`
  afterAll(async () => {
    const { Redis } = await import("ioredis")
    const redis = new Redis(redisUrl as string)
    const keys = await redis.keys(`${keyPrefix}*`)
    if (keys.length > 0) await redis.del(...keys)
    redis.disconnect()
  })
  it("keeps the §9 promise at every crash point", { timeout: 300_000 }, async () => {
    const target = new URL(redisUrl as string)
    check(
      await runCrashKit({
        store: { url: withParam(redisUrl as string, "keyPrefix", keyPrefix) },
        proxy: {
          target: { host: target.hostname, port: Number(target.port || 6379) },
          store: (port) => ({ url: withParam(viaPort(redisUrl as string, port), "keyPrefix", keyPrefix) }),
        },
      }),
    )
  })
})
