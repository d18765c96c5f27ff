import { randomBytes } from "node:crypto"
import { createRequire } from "node:module"
import { createToolkit } from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { PostgresStore } from "@toolnexus/durable/postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createChatHandler } from "../src/ai-sdk/index.js"
import {
  chunksOf,
  clientOf,
  messageOf,
  postRaw,
  refundTools,
  responded,
  script,
  scriptModel,
  serve,
  userMessage,
} from "./helpers.js"

interface PgPool {
  query(sql: string): Promise<unknown>
  end(): Promise<void>
}

const connectionString = process.env.TOOLNEXUS_TEST_PG_URL
if (!connectionString)
  console.warn("[ui] TOOLNEXUS_TEST_PG_URL is not set: skipping the PostgreSQL exactly-once tests")

describe.skipIf(!connectionString)("exactly-once approvals on PostgreSQL (two handlers, two pools)", () => {
  const schema = `ui_test_${randomBytes(6).toString("hex")}`
  let admin: PgPool
  let fake: FakeLLMServer
  const stores: PostgresStore[] = []
  const closers: (() => Promise<void>)[] = []
  let reachable = false

  /** A handler on its own pool in the test's schema, as another process would run it. */
  async function instance(effects: string[]) {
    const store = new PostgresStore({ connectionString: connectionString!, schema })
    stores.push(store)
    const client = clientOf(fake, store)
    const { effects: own, tools } = refundTools()
    const toolkit = await createToolkit({ extraTools: tools })
    const server = await serve(createChatHandler({ client, toolkit, store }))
    closers.push(server.close)
    // Both instances log effects to one list, as one payment provider would see them.
    const push = own.push.bind(own)
    own.push = (...items: string[]) => {
      effects.push(...items)
      return push(...items)
    }
    return server.url
  }

  beforeAll(async () => {
    const pg = createRequire(import.meta.url)("pg") as { Pool: new (o: object) => PgPool }
    admin = new pg.Pool({ connectionString, connectionTimeoutMillis: 5_000 })
    await admin.query("SELECT 1").catch((error: Error) => {
      throw new Error(`TOOLNEXUS_TEST_PG_URL is set but PostgreSQL is unreachable: ${error.message}`)
    })
    reachable = true
    fake = await createFakeLLMServer()
    scriptModel(fake)
  })

  afterAll(async () => {
    for (const close of closers) await close().catch(() => {})
    await Promise.all(stores.map((s) => s.close().catch(() => {})))
    await fake?.close()
    if (reachable) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await admin?.end()
  })

  it("two concurrent approving posts to two instances: one stream, one 409 with the first decision, one effect", async () => {
    const effects: string[] = []
    const a = await instance(effects)
    const b = await instance(effects)
    const id = `pg-chat-${randomBytes(4).toString("hex")}`
    const user = userMessage("refund please")
    const card = await chunksOf(await postRaw(a, { id, messages: [user], trigger: "submit-message" }))
    const assistant = await messageOf(card)
    const approved = responded(assistant, true)
    script.finalDelayMs = 200
    const body = { id, messages: [user, approved], trigger: "submit-message", messageId: assistant.id }
    const [ra, rb] = await Promise.all([postRaw(a, body), postRaw(b, body)])
    expect([ra.status, rb.status].sort()).toEqual([200, 409])
    const winner = ra.status === 200 ? ra : rb
    const loser = ra.status === 200 ? rb : ra
    const error = ((await loser.json()) as { error: { code: string; decision?: unknown } }).error
    expect(error.code).toBe("TNX_ANSWER_CONFLICT")
    // Both instances share this process, so the loser learns the decision being applied.
    expect(error.decision).toEqual({ ok: true })
    const chunks = await chunksOf(winner)
    expect(chunks.at(-1)).toEqual({ type: "finish", finishReason: "stop" })
    // Once the winner finished, a replay to either instance reports the first decision.
    const replay = await postRaw(rb === loser ? b : a, body)
    expect(replay.status).toBe(409)
    expect(((await replay.json()) as { error: { decision: unknown } }).error.decision).toEqual({ ok: true })
    expect(effects).toHaveLength(1)
    script.finalDelayMs = 0
  })
})
