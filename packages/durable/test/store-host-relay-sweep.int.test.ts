import { randomUUID } from "node:crypto"
import { type RunResult, isRelayRequest, relayAnswer } from "@toolnexus/core"
import { Redis } from "ioredis"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import type { DurableStore } from "../src/index.js"
import { PostgresStore } from "../src/postgres/index.js"
import { RedisStore } from "../src/redis/index.js"
import { hostFixture, useFakeModel } from "./host-fixture.js"

// store-host-relay-sweep.test.ts on PostgreSQL and Redis: the relay a run keeps on its record
// survives the backend, so another process's sweep resumes it with the caller's tools and output.
// The process that dies is one whose delivery was stopped while the model answered: its claim is
// released with the answer kept, due for the sweep at once (no clock to move).

const pgUrl = process.env.TOOLNEXUS_TEST_PG_URL
const redisUrl = process.env.TOOLNEXUS_TEST_REDIS_URL
const schema = `tnx_relay_${randomUUID().replaceAll("-", "").slice(0, 20)}`
const keyPrefix = `tnx-relay-${randomUUID()}:`

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

const model = useFakeModel({ reset: true })
const show = { name: "show", description: "shows a value", parameters: { type: "object", properties: {} } }
const output = { type: "object", properties: { shown: { type: "string" } }, required: ["shown"] }

const backends: [string, string | undefined, () => DurableStore][] = [
  ["PostgreSQL", pgUrl, () => new PostgresStore({ connectionString: pgUrl, schema })],
  ["Redis", redisUrl, () => new RedisStore({ url: redisUrl, keyPrefix })],
]

describe.each(backends)("a relay run swept on %s", (_name, url, open) => {
  it.skipIf(!url)("is resumed by another process with the caller's tools and output", async () => {
    const store = open()
    const runId = `rs-${randomUUID()}`
    try {
      const first = await hostFixture(model(), { store })
      model().enqueue(
        { toolCalls: [{ id: "c1", name: "show", arguments: {} }] },
        { text: "never seen", delayMs: 5_000 },
      )
      await first.host.start("a", runId, "show me", { relay: { tools: [show], output } })
      const halted = (await first.host.result(runId)) as RunResult
      const controller = new AbortController()
      const answer = relayAnswer(halted.pending!.id, [{ id: "c1", output: "X" }])
      const delivering = first.host.deliverAnswer(answer, { signal: controller.signal })
      await expect.poll(() => model().requests.length).toBe(2)
      controller.abort()
      await expect(delivering).rejects.toThrow()
      await first.host.close()

      model().reset()
      model().enqueue({ toolCalls: [{ id: "c2", name: "show", arguments: {} }] }, { text: '{"shown":"Y"}' })
      const second = await hostFixture(model(), { store })
      expect((await second.host.sweep()).completed).toEqual([runId])
      expect(model().requests[0]?.toolNames).toEqual(["show"])
      expect(model().requests[0]?.body.response_format?.type).toBe("json_schema")
      const again = (await second.host.result(runId)) as RunResult
      expect(isRelayRequest(again.pending!)).toBe(true)
      await second.host.deliverAnswer(relayAnswer(again.pending!.id, [{ id: "c2", output: "Y" }]))
      expect(await second.host.result(runId)).toMatchObject({ status: "done", output: { shown: "Y" } })
      await second.host.close()
    } finally {
      await store.close()
    }
  })
})
