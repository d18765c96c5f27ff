import { randomBytes } from "node:crypto"
import { createRequire } from "node:module"
import { createFakeLLMServer, type FakeLLMServer } from "@toolnexus/core/testing"
import { PostgresStore } from "@toolnexus/durable/postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ToolEffect } from "../src/tools.js"
import { agentReply, getJson, instance, json, postJson, postWebhook, startRun } from "./support.js"

/** The bit of pg this test uses (the app itself has no @types/pg). */
interface PgPool {
  query(sql: string): Promise<unknown>
  end(): Promise<void>
}
interface PgModule {
  Pool: new (opts: { connectionString: string; connectionTimeoutMillis?: number }) => PgPool
}

const connectionString = process.env.TOOLNEXUS_TEST_PG_URL
if (!connectionString) {
  console.warn("[approvals] TOOLNEXUS_TEST_PG_URL is not set: skipping the two-instances PostgreSQL test")
}

describe.skipIf(!connectionString)("two instances on one PostgreSQL database", () => {
  const schema = `approvals_test_${randomBytes(6).toString("hex")}`
  let admin: PgPool
  let fake: FakeLLMServer
  const stores: PostgresStore[] = []
  let reachable = false
  /** A store with its own connection pool, in the test's schema: as another process would open it. */
  const open = () => {
    const store = new PostgresStore({ connectionString: connectionString!, schema })
    stores.push(store)
    return store
  }

  beforeAll(async () => {
    const pg = createRequire(import.meta.url)("pg") as PgModule
    admin = new pg.Pool({ connectionString: connectionString!, connectionTimeoutMillis: 5_000 })
    // Set but unreachable is a failure, not a skip: CI meant to run this.
    await admin.query("SELECT 1").catch((error: Error) => {
      throw new Error(`TOOLNEXUS_TEST_PG_URL is set but PostgreSQL is unreachable: ${error.message}`)
    })
    reachable = true
    fake = await createFakeLLMServer({ fallback: agentReply })
  })

  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close().catch(() => {})))
    await fake?.close()
    if (reachable) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await admin?.end()
  })

  it("answering one request on both at once: one 200, one 409, the tool runs once", async () => {
    const effects: ToolEffect[] = []
    // Two app objects, two connection pools: as two processes would be, sharing the tool log.
    const a = await instance(fake, open(), { effects })
    const b = await instance(fake, open(), { effects })

    const run = await startRun(a.app, "refund order PG-1 $77")
    expect(run.status).toBe("pending")
    const seenByB = await getJson(b.app, "/requests")
    expect(seenByB.requests.map((r: any) => r.request.id)).toEqual([run.pending.id])

    // A slow final turn keeps the winner's claim open while the other answer arrives.
    fake.addRule({ match: "PG-1", reply: (req) => ({ ...agentReply(req), delayMs: 200 }), times: 1 })
    const [fromA, fromB] = await Promise.all([
      postJson(a.app, `/requests/${run.pending.id}/answer`, { ok: true }),
      postWebhook(b.app, { id: run.pending.id, ok: true }),
    ])
    expect([fromA.status, fromB.status].sort()).toEqual([200, 409])
    const winner = await json(fromA.status === 200 ? fromA : fromB)
    const loser = await json(fromA.status === 200 ? fromB : fromA)
    expect(winner).toMatchObject({ id: run.id, status: "done" })
    expect(winner.text).toMatch(/^Done: Refunded \$77\.00 on order PG-1/)
    expect(loser.error.code).toBe("answer_conflict")

    expect(effects).toHaveLength(1)
    expect(effects[0]?.answer).toEqual({ id: run.pending.id, ok: true })

    // Either instance knows the request was answered, whichever answered it.
    for (const { app } of [a, b]) {
      expect((await postJson(app, `/requests/${run.pending.id}/answer`, { ok: true })).status).toBe(409)
      expect((await getJson(app, "/requests")).requests).toEqual([])
    }
    expect(effects).toHaveLength(1)
    // Both instances show the one answer in the shared history, whichever recorded it.
    for (const { app } of [a, b]) {
      const { answers } = await getJson(app, "/answers")
      expect(answers.map((e: { requestId: string }) => e.requestId)).toEqual([run.pending.id])
    }
  })

  it("a team run parked on one instance is listed once on the other and resumed there", async () => {
    const effects: ToolEffect[] = []
    const a = await instance(fake, open(), { effects })
    const b = await instance(fake, open(), { effects })
    const run = await startRun(a.app, "refund order PG-2 $12", { team: true })
    const listed = (await getJson(b.app, "/requests")).requests.filter((r: any) => r.runId === run.id)
    expect(listed).toHaveLength(1)
    expect(listed[0].path).toEqual(["root", "support.1", "payments.1"])
    const done = await json(await postJson(b.app, `/requests/${run.pending.id}/answer`, { ok: true }))
    expect(done).toMatchObject({ id: run.id, kind: "runtime", status: "done" })
    expect(effects).toHaveLength(1)
    expect((await postJson(a.app, `/requests/${run.pending.id}/answer`, { ok: true })).status).toBe(409)
  })
})
