import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Task, TaskState } from "@a2a-js/sdk"
import {
  HostUnsupportedError,
  type Logger,
  type RunHost,
  createInProcessClient,
  createToolkit,
  defineTool,
  hostAgent,
  pending,
} from "@toolnexus/core"
import { type DurableStore, createMemoryStore, createStoreHost } from "@toolnexus/durable"
import { PostgresStore } from "@toolnexus/durable/postgres"
import { RedisStore } from "@toolnexus/durable/redis"
import { SqliteStore } from "@toolnexus/durable/sqlite"
import { Redis } from "ioredis"
import pg from "pg"
import { afterAll, afterEach, describe, expect, it } from "vitest"
import { serveA2A } from "../src/inbound/serve-a2a.js"
import { answerMessage, message, sdkClient, send } from "./inbound-kit.js"
import { serveFetch } from "./serve-node.js"

// serveA2A({ host, agent, store }) over createStoreHost on memory, SQLite, PostgreSQL and Redis,
// driven by the official @a2a-js/sdk client: input-required answered, one tool run per approved
// request, a duplicate answer refused, CancelTask cancels the host run, and the door's logger.
// PostgreSQL and Redis run when TOOLNEXUS_TEST_PG_URL / TOOLNEXUS_TEST_REDIS_URL are set, in a
// schema / key prefix of this run, dropped afterwards.

const pgUrl = process.env.TOOLNEXUS_TEST_PG_URL
const redisUrl = process.env.TOOLNEXUS_TEST_REDIS_URL
const run = randomUUID().replaceAll("-", "").slice(0, 20)
const schema = `tnx_a2a_host_${run}`
const keyPrefix = `tnx-a2a-host-${run}:`
const dir = mkdtempSync(join(tmpdir(), "tnx-a2a-host-"))

interface Kind {
  name: string
  enabled: boolean
  open(): DurableStore
}
const kinds: Kind[] = [
  { name: "memory", enabled: true, open: () => createMemoryStore() },
  { name: "SQLite", enabled: true, open: () => new SqliteStore({ path: join(dir, `${randomUUID()}.db`) }) },
  {
    name: "PostgreSQL",
    enabled: !!pgUrl,
    open: () => new PostgresStore({ connectionString: pgUrl, schema }),
  },
  { name: "Redis", enabled: !!redisUrl, open: () => new RedisStore({ url: redisUrl, keyPrefix }) },
]

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true })
  if (pgUrl) {
    const admin = new pg.Pool({ connectionString: pgUrl, max: 1 })
    try {
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    } finally {
      await admin.end()
    }
  }
  if (redisUrl) {
    const redis = new Redis(redisUrl)
    const keys = await redis.keys(`${keyPrefix}*`)
    if (keys.length > 0) await redis.del(...keys)
    await redis.quit()
  }
})

/** A logger that keeps its lines. */
function recordingLogger() {
  const lines: { level: string; message: string; data?: Record<string, unknown> }[] = []
  const logger: Logger = {
    info: (message, data) => lines.push({ level: "info", message, ...(data ? { data } : {}) }),
    error: (message, data) => lines.push({ level: "error", message, ...(data ? { data } : {}) }),
  }
  return { logger, lines }
}

/**
 * The agent: "book X" parks on an approval, "late X" on one that expired long ago, "slow"
 * waits for `release()`, "fail" throws; every booking is counted in `effects`.
 */
async function desk(store: DurableStore) {
  const effects: string[] = []
  let release: () => void = () => {}
  const gate = new Promise<void>((resolve) => {
    release = resolve
  })
  const book = defineTool({
    name: "book",
    description: "books after approval",
    inputSchema: {
      type: "object",
      properties: { flight: { type: "string" }, late: { type: "boolean" } },
      required: ["flight"],
    },
    run: ({ flight, late }, ctx) => {
      if (!ctx.answer)
        return pending({
          kind: "approval",
          prompt: `Book ${flight}?`,
          ...(late ? { expiresAt: "2020-01-01T00:00:00Z" } : {}),
        })
      effects.push(String(flight))
      return `booked ${flight}`
    },
  })
  const client = createInProcessClient({
    model: "scripted",
    store,
    systemPrompt: "SECRET SYSTEM PROMPT",
    async generate({ messages }) {
      const last = messages.at(-1) as { role: string; content?: unknown }
      if (last.role === "tool") return { content: `done: ${String(last.content)}` }
      const text = String(last.content ?? "")
      if (text.startsWith("book "))
        return { toolCalls: [{ name: "book", arguments: { flight: text.slice(5) } }] }
      if (text.startsWith("late "))
        return { toolCalls: [{ name: "book", arguments: { flight: text.slice(5), late: true } }] }
      if (text === "fail") throw new Error("model exploded with SECRET detail")
      if (text === "slow") await gate
      return { content: `you said: ${text}` }
    },
  })
  const toolkit = await createToolkit({ extraTools: [book] })
  return { client, toolkit, effects, release }
}

async function serve(kind: Kind) {
  const store = kind.open()
  const agent = await desk(store)
  const host: RunHost = createStoreHost({
    store,
    agents: [hostAgent({ name: "desk", client: agent.client, toolkit: agent.toolkit })],
    sweepEveryMs: false,
  })
  const { logger, lines } = recordingLogger()
  const handler = serveA2A({ card: { name: "desk" }, host, agent: "desk", store, logger })
  const http = await serveFetch(handler.fetch)
  cleanups.push(async () => {
    await handler.close()
    await http.close()
    await host.close()
    await store.close()
  })
  return { ...agent, store, host, lines, client: await sdkClient(http.url) }
}

const requestOf = (task: Task) => {
  const part = task.status?.message?.parts.find((p) => p.content?.$case === "data")
  return (part?.content?.value as { request: { id: string } } | undefined)?.request as { id: string }
}

describe.each(kinds)("serveA2A over createStoreHost on $name", (kind) => {
  it.skipIf(!kind.enabled)(
    "input-required answered once: one tool run; a duplicate answer is refused, through the door and the host",
    async () => {
      const { client, host, effects, lines } = await serve(kind)
      const halted = (await client.sendMessage(send(message("book BA117")))) as Task
      expect(halted.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
      const request = requestOf(halted)
      expect((await host.findRequest(request.id))?.conversationId).toBe(`a2a.${halted.id}`)

      const done = (await client.sendMessage(send(answerMessage({ ok: true }, halted.id)))) as Task
      expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(done.artifacts[0]?.parts[0]?.content).toEqual({ $case: "text", value: "done: booked BA117" })
      expect(effects).toEqual(["BA117"])
      expect(await host.getDecision(request.id)).toMatchObject({ ok: true })

      // Another answer on the task: -32004 naming its state; straight to the host: the first decision.
      await expect(client.sendMessage(send(answerMessage({ ok: true }, halted.id)))).rejects.toThrow(
        /completed/,
      )
      await expect(host.deliverAnswer({ id: request.id, ok: true })).rejects.toMatchObject({
        code: "TNX_ANSWER_CONFLICT",
      })
      expect(effects).toEqual(["BA117"])
      expect(lines.some((l) => l.level === "info" && /-32004|refused/.test(l.message))).toBe(true)
    },
  )

  it.skipIf(!kind.enabled)("two answers at once: one applied, the other refused; one tool run", async () => {
    const { client, effects } = await serve(kind)
    const halted = (await client.sendMessage(send(message("book UA5")))) as Task
    const outcomes = await Promise.allSettled([
      client.sendMessage(send(answerMessage({ ok: true }, halted.id, "a"))),
      client.sendMessage(send(answerMessage({ ok: true }, halted.id, "b"))),
    ])
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1)
    expect(effects).toEqual(["UA5"])
  })

  it.skipIf(!kind.enabled)(
    "CancelTask cancels the host run: a halted task's request withdrawn, a running one stopped",
    async () => {
      const { client, host, effects, release } = await serve(kind)
      const halted = (await client.sendMessage(send(message("book LH1")))) as Task
      const request = requestOf(halted)
      const canceled = await client.cancelTask({ tenant: "", id: halted.id, metadata: undefined })
      expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
      expect(await host.findRequest(request.id)).toBeUndefined()
      expect(await host.getDecision(request.id)).toMatchObject({ ok: false })
      await expect(host.result(`a2a.${halted.id}`)).rejects.toThrow(/cancelled/)
      await expect(host.deliverAnswer({ id: request.id, ok: true })).rejects.toMatchObject({
        code: "TNX_ANSWER_CONFLICT",
      })

      const running = (await client.sendMessage(send(message("slow"), true))) as Task
      const stopped = await client.cancelTask({ tenant: "", id: running.id, metadata: undefined })
      expect(stopped.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
      release()
      await expect(host.result(`a2a.${running.id}`)).rejects.toThrow(/cancelled/)
      const after = await client.getTask({ tenant: "", id: running.id, historyLength: undefined })
      expect(after.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
      expect(after.artifacts).toEqual([])
      expect(effects).toEqual([])
    },
  )

  it.skipIf(!kind.enabled)(
    "the logger: a failed run at error with its code only; refusals at info without a stack",
    async () => {
      const { client, lines, effects } = await serve(kind)
      const failed = (await client.sendMessage(send(message("fail")))) as Task
      expect(failed.status?.state).toBe(TaskState.TASK_STATE_FAILED)
      const error = lines.find((l) => l.level === "error")
      expect(error?.message).toMatch(new RegExp(`task ${failed.id} failed \\(`))
      expect(error?.data).toMatchObject({ taskId: failed.id, code: expect.any(String) })

      // Text for an approval: -32602, at info.
      const halted = (await client.sendMessage(send(message("book KL1")))) as Task
      await expect(client.sendMessage(send(message("yes", halted.id)))).rejects.toThrow(/answer/)
      // An approval after expiresAt: refused before anything runs, at info.
      const late = (await client.sendMessage(send(message("late QF2")))) as Task
      await expect(client.sendMessage(send(answerMessage({ ok: true }, late.id)))).rejects.toThrow(
        /expired at 2020-01-01T00:00:00Z/,
      )
      expect(effects).toEqual([])
      const infos = lines.filter((l) => l.level === "info")
      expect(infos.map((l) => l.data?.code)).toEqual(expect.arrayContaining([-32602, -32004]))
      expect(infos.some((l) => /expired/.test(l.message))).toBe(true)
      const said = JSON.stringify(lines)
      for (const leak of ["SECRET", "exploded", "    at "]) expect(said).not.toContain(leak)
      expect(lines.filter((l) => l.level === "error")).toHaveLength(1)
    },
  )

  it.skipIf(!kind.enabled)(
    "answered from another door (host.deliverAnswer): the task catches up with the host's run",
    async () => {
      const { client, host, effects } = await serve(kind)
      const halted = (await client.sendMessage(send(message("book AF7")))) as Task
      await host.deliverAnswer({ id: requestOf(halted).id, ok: true })
      expect(effects).toEqual(["AF7"])
      const read = await client.getTask({ tenant: "", id: halted.id, historyLength: undefined })
      expect(read.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(read.artifacts[0]?.parts[0]?.content).toEqual({ $case: "text", value: "done: booked AF7" })
      // A message on it now names where it is; nothing runs again.
      await expect(client.sendMessage(send(answerMessage({ ok: true }, halted.id)))).rejects.toThrow(
        /completed/,
      )
      expect(effects).toEqual(["AF7"])
    },
  )
})

/**
 * A host as an engine connection behaves (DESIGN §15, §17): `result` resolves at the run's end
 * only (a parked run waits in the engine; the wait ends when its signal aborts, noted in
 * `waits`); with `events: false`, `onEvent` is refused too (a host whose runs stream elsewhere).
 */
function engineLike(
  inner: RunHost,
  opts: { events?: boolean } = {},
): RunHost & { waits: { released: boolean }[] } {
  const refused = (operation: string) =>
    new HostUnsupportedError("engine-like", operation, "its runs stream in the workers")
  const waits: { released: boolean }[] = []
  return {
    ...inner,
    waits,
    async start(agent, runId, input, startOpts) {
      if (startOpts?.onEvent && opts.events === false) throw refused("start({ onEvent })")
      return inner.start(agent, runId, input, startOpts)
    },
    async deliverAnswer(answer, deliverOpts) {
      if (deliverOpts?.onEvent && opts.events === false) throw refused("deliverAnswer({ onEvent })")
      return inner.deliverAnswer(answer, deliverOpts)
    },
    async result(runId, resultOpts) {
      const wait = { released: false }
      waits.push(wait)
      const result = await inner.result(runId, resultOpts)
      if (result.status !== "pending") return result
      return new Promise<never>((_resolve, reject) => {
        const release = () => {
          wait.released = true
          reject(new Error("released"))
        }
        if (resultOpts?.signal?.aborted) release()
        else resultOpts?.signal?.addEventListener("abort", release)
      })
    },
  }
}

describe.each([
  { name: "without events", events: false },
  { name: "with events", events: true },
])("serveA2A over a host whose runs park elsewhere (as on an engine), $name", ({ events }) => {
  it("the task goes input-required when the run's request is listed; the answer completes it once; no result wait outlives its drive", async () => {
    const store = createMemoryStore()
    const agent = await desk(store)
    const inner = createStoreHost({
      store,
      agents: [hostAgent({ name: "desk", client: agent.client, toolkit: agent.toolkit })],
      sweepEveryMs: false,
    })
    const host = engineLike(inner, { events })
    const handler = serveA2A({ card: { name: "desk" }, host, agent: "desk", store })
    const http = await serveFetch(handler.fetch)
    cleanups.push(async () => {
      await handler.close()
      await http.close()
      await inner.close()
    })
    const client = await sdkClient(http.url)
    const halted = (await client.sendMessage(send(message("book NH9")))) as Task
    expect(halted.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
    expect(requestOf(halted)).toMatchObject({ id: expect.any(String) })
    // The parked run's result wait was given up once the task said input-required.
    expect(host.waits.map((w) => w.released)).toEqual([true])
    const done = (await client.sendMessage(send(answerMessage({ ok: true }, halted.id)))) as Task
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    expect(done.artifacts[0]?.parts[0]?.content).toEqual({ $case: "text", value: "done: booked NH9" })
    expect(agent.effects).toEqual(["NH9"])
  })
})

describe("serveA2A's configuration", () => {
  it("host + agent, or the shorthand; tasks need a store with snapshots", async () => {
    const store = createMemoryStore()
    const agent = await desk(store)
    const host = createStoreHost({
      store,
      agents: [hostAgent({ name: "desk", client: agent.client, toolkit: agent.toolkit })],
      sweepEveryMs: false,
    })
    try {
      expect(() => serveA2A({ card: { name: "x" }, host } as never)).toThrow(/`host` needs `agent`/)
      expect(() => serveA2A({ card: { name: "x" }, host, agent: "desk", client: agent.client })).toThrow(
        /not both/,
      )
      // A client on core's plain in-memory conversation store has nowhere to keep tasks.
      const plain = createInProcessClient({ model: "m", generate: async () => ({ content: "hi" }) })
      expect(() => serveA2A({ card: { name: "x" }, client: plain })).toThrow(/durable store/)
    } finally {
      await host.close()
    }
  })
})

it("a cancel right after a non-blocking send stays canceled: the task's first write cannot land after it", async () => {
  const store = createMemoryStore()
  const agent = await desk(store)
  const host = createStoreHost({
    store,
    agents: [hostAgent({ name: "desk", client: agent.client, toolkit: agent.toolkit })],
    sweepEveryMs: false,
  })
  // The task records' store holds a new task's `working` write until the cancel has read the
  // task (the slow first write of a busy database); every other write goes through at once.
  let openGate: () => void = () => {}
  const gate = new Promise<void>((resolve) => {
    openGate = resolve
  })
  let cancelRead: () => void = () => {}
  const read = new Promise<void>((resolve) => {
    cancelRead = resolve
  })
  let canceling = false
  const tasks = {
    async getSnapshot(key: string) {
      if (canceling) cancelRead()
      return store.getSnapshot(key)
    },
    async putSnapshot(key: string, value: unknown) {
      if ((value as { state?: unknown }).state === TaskState.TASK_STATE_WORKING) await gate
      return store.putSnapshot(key, value)
    },
  }
  // The door reads and writes only task records (snapshots) in `store`.
  const handler = serveA2A({
    card: { name: "desk" },
    host,
    agent: "desk",
    store: tasks as unknown as DurableStore,
  })
  const http = await serveFetch(handler.fetch)
  cleanups.push(async () => {
    agent.release()
    await handler.close()
    await http.close()
    await host.close()
    await store.close()
  })
  const client = await sdkClient(http.url)
  const running = (await client.sendMessage(send(message("slow"), true))) as Task
  canceling = true
  const canceled = client.cancelTask({ tenant: "", id: running.id, metadata: undefined })
  await read
  // The cancel runs on from its read until it waits (or, unfixed, writes `canceled`).
  await new Promise((resolve) => setImmediate(resolve))
  openGate()
  expect((await canceled).status?.state).toBe(TaskState.TASK_STATE_CANCELED)
  agent.release()
  await expect(host.result(`a2a.${running.id}`)).rejects.toThrow(/cancelled/)
  const after = await client.getTask({ tenant: "", id: running.id, historyLength: undefined })
  expect(after.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
})

it("CancelTask's reply comes once the host run is stopped: a model answering right after it never ends the run `done`", async () => {
  // The host's reads of its run record wait while this is set (a busy database): the run's stop
  // must not wait behind them (issue 34: the run ended `done` after the task said canceled).
  let holdReads = false
  let openReads: () => void = () => {}
  const reads = new Promise<void>((resolve) => {
    openReads = resolve
  })
  /** The states written to the host's run record, in order. */
  const written: string[] = []
  const inner = createMemoryStore()
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === "getSnapshot")
        return async (key: string) => {
          if (holdReads && key.startsWith("host-run/")) await reads
          return target.getSnapshot(key)
        }
      if (prop === "putSnapshot")
        return (key: string, value: unknown) => {
          if (key.startsWith("host-run/")) written.push(String((value as { state?: unknown }).state))
          return target.putSnapshot(key, value)
        }
      const value = Reflect.get(target, prop, receiver)
      return typeof value === "function" ? value.bind(target) : value
    },
  }) as DurableStore
  const agent = await desk(store)
  const host = createStoreHost({
    store,
    agents: [hostAgent({ name: "desk", client: agent.client, toolkit: agent.toolkit })],
    sweepEveryMs: false,
  })
  const handler = serveA2A({ card: { name: "desk" }, host, agent: "desk", store })
  const http = await serveFetch(handler.fetch)
  cleanups.push(async () => {
    agent.release()
    openReads()
    await handler.close()
    await http.close()
    await host.close()
    await inner.close()
  })
  const client = await sdkClient(http.url)
  const running = (await client.sendMessage(send(message("slow"), true))) as Task
  const runId = `a2a.${running.id}`
  holdReads = true
  const stopped = await client.cancelTask({ tenant: "", id: running.id, metadata: undefined })
  expect(stopped.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
  // The model answers now; the run's execution then ends, with the host's reads still held.
  const execution = host.events(runId)[Symbol.asyncIterator]()
  agent.release()
  while (!(await execution.next()).done) {}
  expect(written).not.toContain("done")
  holdReads = false
  openReads()
  await expect(host.result(runId)).rejects.toThrow(/cancelled/)
  expect(written).toEqual(["cancelled"])
  const after = await client.getTask({ tenant: "", id: running.id, historyLength: undefined })
  expect(after.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
})
