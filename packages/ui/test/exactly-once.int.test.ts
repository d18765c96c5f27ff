import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { once } from "node:events"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"
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

  /** The chat handler in another process (test/fixtures/chat-server.mjs) on the same schema. */
  async function otherProcess(log: string): Promise<string> {
    const server = fileURLToPath(new URL("./fixtures/chat-server.mjs", import.meta.url))
    const child: ChildProcess = spawn(
      process.execPath,
      [server, connectionString!, schema, `${fake.url}/v1`],
      {
        env: { ...process.env, TNX_LOG: log },
        stdio: ["ignore", "pipe", "inherit"],
      },
    )
    closers.push(async () => {
      if (child.exitCode !== null) return
      child.kill("SIGTERM")
      await once(child, "exit")
    })
    const [line] = (await once(createInterface({ input: child.stdout! }), "line")) as [string]
    return (JSON.parse(line) as { url: string }).url
  }

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
    // The loser learns the decision being applied (from this process, or from the claim).
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

  it("an answer being applied by another process: 409 with the claimed (first) decision, not this post's", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tnx-ui-pg-"))
    const log = join(dir, "effects.log")
    writeFileSync(log, "")
    const effects: string[] = []
    const a = await instance(effects)
    const id = `pg-chat-${randomBytes(4).toString("hex")}`
    const user = userMessage("refund please")
    const assistant = await messageOf(
      await chunksOf(await postRaw(a, { id, messages: [user], trigger: "submit-message" })),
    )
    const b = await otherProcess(log)
    // The other process approves; its resumed run waits on the slow final model reply.
    script.finalDelayMs = 1_500
    const approving = postRaw(b, {
      id,
      messages: [user, responded(assistant, true)],
      trigger: "submit-message",
      messageId: assistant.id,
    })
    const llmBefore = fake.requests.length
    while (fake.inFlight === 0 || fake.requests.length === llmBefore)
      await new Promise((r) => setTimeout(r, 10))
    // Mid-apply, a second tab on this process declines: nothing of it is applied.
    const declined = await postRaw(a, {
      id,
      messages: [user, responded(assistant, false)],
      trigger: "submit-message",
      messageId: assistant.id,
    })
    expect(declined.status).toBe(409)
    const error = ((await declined.json()) as { error: Record<string, unknown> }).error
    expect(error).toMatchObject({
      code: "TNX_ANSWER_CONFLICT",
      requestId: assistant.parts
        .map((p) => (p as { approval?: { id: string } }).approval?.id)
        .find((x) => x !== undefined),
      decision: { ok: true },
    })
    expect(String(error.message)).toMatch(/being applied by another delivery/)
    const chunks = await chunksOf(await approving)
    expect(chunks.at(-1)).toEqual({ type: "finish", finishReason: "stop" })
    script.finalDelayMs = 0
    expect(readFileSync(log, "utf8").trim().split("\n")).toHaveLength(1)
    expect(effects).toEqual([])
    rmSync(dir, { recursive: true, force: true })
  })
})
