import { randomUUID } from "node:crypto"
import { type Message, Role, type Task, TaskState } from "@a2a-js/sdk"
import { PostgresStore } from "@toolnexus/durable/postgres"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { serveA2A } from "../src/inbound/serve-a2a.js"
import { sdkClient, travelAgent } from "./inbound-kit.js"
import { serveFetch } from "./serve-node.js"

// serveA2A on PostgreSQL: a task halted by one server is answered through another server
// (its own pool, client and toolkit) sharing the database; two servers answering at once
// apply the answer once. A schema of our own per run, dropped afterwards.

const url = process.env.TOOLNEXUS_TEST_PG_URL
const schema = `tnx_a2a_${randomUUID().replaceAll("-", "").slice(0, 20)}`
const cleanups: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const c of cleanups.reverse()) await c()
  if (!url) return
  const admin = new pg.Pool({ connectionString: url, max: 1 })
  try {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  } finally {
    await admin.end()
  }
})

async function server() {
  const store = new PostgresStore({ connectionString: url, schema })
  const agent = await travelAgent(store)
  const handler = serveA2A({ card: { name: "travel" }, client: agent.client, toolkit: agent.toolkit, store })
  const http = await serveFetch(handler.fetch)
  cleanups.push(async () => {
    await handler.close()
    await http.close()
    await store.close()
  })
  return { ...agent, url: http.url }
}

const message = (text: string, taskId = ""): Message => ({
  messageId: `u-${randomUUID()}`,
  contextId: "",
  taskId,
  role: Role.ROLE_USER,
  parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
})
const send = (m: Message) => ({
  tenant: "",
  message: m,
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: false },
  metadata: undefined,
})

describe.skipIf(!url)("serveA2A on PostgreSQL", () => {
  it("halted on one server, answered on another sharing the database; a racing second answer applies nothing", async () => {
    const first = await server()
    const halted = (await (await sdkClient(first.url)).sendMessage(send(message("book KL1")))) as Task
    expect(halted.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
    const second = await server()
    const third = await server()
    const outcomes = await Promise.allSettled([
      (await sdkClient(second.url)).sendMessage(send(message("yes", halted.id))),
      (await sdkClient(third.url)).sendMessage(send(message("yes too", halted.id))),
    ])
    expect(outcomes.some((o) => o.status === "fulfilled")).toBe(true)
    expect([...second.effects, ...third.effects, ...first.effects]).toHaveLength(1)
    const final = await (await sdkClient(first.url)).getTask({
      tenant: "",
      id: halted.id,
      historyLength: undefined,
    })
    expect(final.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
  })
})
