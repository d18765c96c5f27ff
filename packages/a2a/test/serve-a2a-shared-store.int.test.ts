import { randomUUID } from "node:crypto"
import { Role, type Task, TaskState } from "@a2a-js/sdk"
import type { DurableStore } from "@toolnexus/durable"
import { PostgresStore } from "@toolnexus/durable/postgres"
import { RedisStore } from "@toolnexus/durable/redis"
import { Redis } from "ioredis"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { serveA2A } from "../src/inbound/serve-a2a.js"
import { answerMessage, message, sdkClient, send, travelAgent } from "./inbound-kit.js"
import { serveFetch } from "./serve-node.js"

// serveA2A on a shared store (PostgreSQL, Redis): a halted task outlives the server that
// halted it and is answered through another server (its own connection, client and toolkit)
// sharing the store; two servers answering at once apply the answer once. A PostgreSQL
// schema / Redis key prefix of our own per run, dropped afterwards.

const pgUrl = process.env.TOOLNEXUS_TEST_PG_URL
const redisUrl = process.env.TOOLNEXUS_TEST_REDIS_URL
const run = randomUUID().replaceAll("-", "").slice(0, 20)
const schema = `tnx_a2a_${run}`
const keyPrefix = `tnx-a2a-${run}:`

interface Kind {
  name: string
  url: string | undefined
  open(): DurableStore
  drop(): Promise<void>
}
const kinds: Kind[] = [
  {
    name: "PostgreSQL",
    url: pgUrl,
    open: () => new PostgresStore({ connectionString: pgUrl, schema }),
    async drop() {
      const admin = new pg.Pool({ connectionString: pgUrl, max: 1 })
      try {
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      } finally {
        await admin.end()
      }
    },
  },
  {
    name: "Redis",
    url: redisUrl,
    open: () => new RedisStore({ url: redisUrl, keyPrefix }),
    async drop() {
      const redis = new Redis(redisUrl as string)
      const keys = await redis.keys(`${keyPrefix}*`)
      if (keys.length > 0) await redis.del(...keys)
      await redis.quit()
    },
  },
]

const cleanups: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const c of cleanups.reverse()) await c()
  for (const kind of kinds) if (kind.url) await kind.drop()
})

async function server(kind: Kind) {
  const store = kind.open()
  const agent = await travelAgent(store)
  const handler = serveA2A({ card: { name: "travel" }, client: agent.client, toolkit: agent.toolkit, store })
  const http = await serveFetch(handler.fetch)
  let closed = false
  const close = async () => {
    if (closed) return
    closed = true
    await handler.close()
    await http.close()
    await store.close()
  }
  cleanups.push(close)
  return { ...agent, store, url: http.url, close }
}

const get = async (url: string, id: string) =>
  (await sdkClient(url)).getTask({ tenant: "", id, historyLength: undefined })

describe.each(kinds)("serveA2A on $name", (kind) => {
  it.skipIf(!kind.url)(
    "a halted task outlives its server: another server reads it, parked request and all, and answers it once",
    async () => {
      const first = await server(kind)
      const halted = (await (await sdkClient(first.url)).sendMessage(send(message("book QF2")))) as Task
      expect(halted.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
      await first.close()

      const second = await server(kind)
      const read = await get(second.url, halted.id)
      expect(read.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
      expect(read.history.map((m) => m.role)).toEqual([Role.ROLE_USER, Role.ROLE_AGENT])
      const pending = (await second.store.listPending()).filter(
        (p) => p.conversationId === `a2a.${halted.id}`,
      )
      expect(pending.map((p) => p.request.prompt)).toEqual(["Book QF2?"])
      const done = (await (
        await sdkClient(second.url)
      ).sendMessage(send(answerMessage({ ok: true, data: { text: "yes" } }, halted.id, "yes")))) as Task
      expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(second.effects).toEqual([`QF2:${JSON.stringify({ text: "yes" })}`])
      expect(first.effects).toEqual([])
    },
  )

  it.skipIf(!kind.url)(
    "halted on one server, answered on two others at once: one effect, the task completed",
    async () => {
      const first = await server(kind)
      const halted = (await (await sdkClient(first.url)).sendMessage(send(message("book KL1")))) as Task
      expect(halted.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
      const second = await server(kind)
      const third = await server(kind)
      const outcomes = await Promise.allSettled([
        (await sdkClient(second.url)).sendMessage(send(answerMessage({ ok: true }, halted.id, "yes"))),
        (await sdkClient(third.url)).sendMessage(send(answerMessage({ ok: true }, halted.id, "yes too"))),
      ])
      expect(outcomes.some((o) => o.status === "fulfilled")).toBe(true)
      expect([...second.effects, ...third.effects, ...first.effects]).toHaveLength(1)
      expect((await get(first.url, halted.id)).status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    },
  )
})
