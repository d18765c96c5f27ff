import { readFileSync, writeFileSync } from "node:fs"
import { type Task, TaskState } from "@a2a-js/sdk"
import type { Message as ChatMessage, Request } from "@toolnexus/core"
import { createMemoryStore } from "@toolnexus/durable"
import { afterEach, describe, expect, it } from "vitest"
import { serveA2A } from "../src/inbound/serve-a2a.js"
import { readTaskRecord, TASK_RECORD_VERSION, type TaskRecord, taskKey } from "../src/inbound/task-record.js"
import { answerMessage, message, sdkClient, send, travelAgent } from "./inbound-kit.js"
import { serveFetch } from "./serve-node.js"

// The task record is a stored format (DESIGN §17): every version this code reads has a golden
// file under fixtures/task-record/, saved once by the release that wrote it and read here
// forever. A change to what the writer stores fails the last test until it gets a new version
// (and a new file); an old file is never edited.

/**
 * A golden file: the halted task's record with its conversation (and, from version 2, the host's
 * record of its run), and the record once answered.
 */
interface Golden {
  halted: {
    record: TaskRecord
    conversation: { id: string; messages: ChatMessage[]; pending: Request }
    hostRun?: { key: string; value: unknown }
  }
  completed: { record: TaskRecord }
}

const fixture = (version: number) => new URL(`./fixtures/task-record/v${version}.json`, import.meta.url)
const golden = (version: number) => JSON.parse(readFileSync(fixture(version), "utf8")) as Golden

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

async function serve(store = createMemoryStore()) {
  const agent = await travelAgent(store)
  const handler = serveA2A({
    card: { name: "travel", description: "Books flights.", skills: [] },
    client: agent.client,
    toolkit: agent.toolkit,
    store,
  })
  const http = await serveFetch(handler.fetch)
  cleanups.push(async () => {
    await handler.close()
    await http.close()
  })
  return { ...agent, store, client: await sdkClient(http.url) }
}

/**
 * The record with what differs between runs (generated ids: UUIDs and request ids; times)
 * replaced by placeholders numbered in order of first appearance, so two runs compare equal.
 */
function normalized(value: unknown): unknown {
  const names = new Map<string, string>()
  const volatile = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|pnd-[\w-]+/g
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") {
      if (/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(v)) return "<time>"
      return v.replace(volatile, (id) => {
        if (!names.has(id)) names.set(id, `<id-${names.size + 1}>`)
        return names.get(id) as string
      })
    }
    if (Array.isArray(v)) return v.map(walk)
    if (typeof v === "object" && v !== null)
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]))
    return v
  }
  return walk(value)
}

/** Runs the fixed exchange ("book BA117", approved) and returns what the writer stored at each step. */
async function writeExchange(): Promise<Golden> {
  const { client, store } = await serve()
  const halted = (await client.sendMessage(
    send(message("book BA117", "", { messageId: "u-golden-1", contextId: "ctx-golden" })),
  )) as Task
  expect(halted.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
  const haltedRecord = (await store.getSnapshot(taskKey(halted.id))) as TaskRecord
  const conversationId = haltedRecord.runId as string
  const conversation = {
    id: conversationId,
    messages: (await store.get(conversationId)) as ChatMessage[],
    pending: (await store.getPending(conversationId)) as Request,
  }
  const hostRunKey = `host-run/${conversationId}`
  const hostRun = { key: hostRunKey, value: await store.getSnapshot(hostRunKey) }
  await client.sendMessage(send({ ...answerMessage({ ok: true }, halted.id), messageId: "u-golden-2" }))
  const completed = (await store.getSnapshot(taskKey(halted.id))) as TaskRecord
  return { halted: { record: haltedRecord, conversation, hostRun }, completed: { record: completed } }
}

describe("the A2A task record format", () => {
  // Version 1 was parked by round 3's serveA2A, before hosts: the shorthand's host adopts its run.
  it.each([1, 2])(
    "v%i: a halted task is read back, shown, and answered through the real server",
    async (version) => {
      const { halted, completed } = golden(version)
      expect(halted.record.v).toBe(version)
      expect(readTaskRecord(completed.record, completed.record.id)).toEqual(completed.record)

      const { client, store, effects } = await serve()
      const { id, messages, pending } = halted.conversation
      await store.save(id, messages, { pending })
      if (halted.hostRun) await store.putSnapshot(halted.hostRun.key, halted.hostRun.value)
      await store.putSnapshot(taskKey(halted.record.id), halted.record)
      const shown = await client.getTask({ tenant: "", id: halted.record.id, historyLength: undefined })
      expect(shown).toMatchObject({
        id: halted.record.id,
        contextId: "ctx-golden",
        status: { state: TaskState.TASK_STATE_INPUT_REQUIRED },
      })
      expect(shown.history.map((m) => m.messageId)).toEqual(halted.record.history.map((m) => m.messageId))
      expect(shown.history[0]?.messageId).toBe("u-golden-1")

      const done = (await client.sendMessage(send(answerMessage({ ok: true }, halted.record.id)))) as Task
      expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(effects).toEqual(["BA117:{}"])
    },
  )

  it("a record of a version this code does not read is refused with SchemaVersionError naming the key", () => {
    const { completed } = golden(1)
    for (const v of [3, undefined, "1"]) {
      expect(() => readTaskRecord({ ...completed.record, v }, "t-1")).toThrow(
        expect.objectContaining({
          code: "TNX_SCHEMA_VERSION",
          found: v,
          supported: [1, 2],
          message: expect.stringContaining('the A2A task record "a2a/task/t-1"'),
        }),
      )
    }
    expect(readTaskRecord(undefined, "t-1")).toBeUndefined()
  })

  it(`the writer stores version ${TASK_RECORD_VERSION} exactly as its golden file holds it`, async () => {
    const written = await writeExchange()
    // Writing a new version's file, once: TOOLNEXUS_WRITE_GOLDEN=1 (never for an existing one).
    if (process.env.TOOLNEXUS_WRITE_GOLDEN === "1")
      writeFileSync(fixture(TASK_RECORD_VERSION), `${JSON.stringify(written, null, 2)}\n`, { flag: "wx" })
    // The host's run record is durable's format (its own fixtures pin it): stored here to be
    // read back, compared only as present.
    const withoutHostRun = (g: Golden) => ({ ...g, halted: { ...g.halted, hostRun: !!g.halted.hostRun } })
    expect(normalized(withoutHostRun(written))).toEqual(
      normalized(withoutHostRun(golden(TASK_RECORD_VERSION))),
    )
  })
})
