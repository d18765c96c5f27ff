import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describeHostContract, until } from "@toolnexus/agents/engine-testing"
import { type RunResult, createClient, createToolkit, defineTool, hostAgent, pending } from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type DurableStore, type StoreHostAgent, createMemoryStore, createStoreHost } from "../src/index.js"
import { MemoryData, MemoryStore } from "../src/memory/memory-store.js"
import { SqliteStore } from "../src/sqlite/index.js"

const host = (store: DurableStore, agents: unknown[], extra: object) =>
  createStoreHost({ store, agents: agents as StoreHostAgent[], sweepEveryMs: false, ...extra })

// Two stores on one MemoryData behave like two processes over one database.
const data = new MemoryData()
describeHostContract<DurableStore>("createStoreHost on the memory store", {
  store: async () => new MemoryStore({}, data),
  host,
})

const dir = mkdtempSync(join(tmpdir(), "tnx-store-host-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
describeHostContract<DurableStore>("createStoreHost on SQLite", {
  store: async () => new SqliteStore({ path: join(dir, "host.db") }),
  host,
  closeStore: (store) => store.close(),
})

describe("createStoreHost's sweeps and reports", () => {
  let server: FakeLLMServer
  beforeAll(async () => {
    server = await createFakeLLMServer()
  })
  afterAll(() => server.close())
  const late = defineTool({
    name: "late",
    description: "asks with a deadline long past",
    inputSchema: { type: "object", properties: {} },
    run: (_args, ctx) =>
      ctx.answer
        ? `answered: ${ctx.answer.ok ? "yes" : ctx.answer.reason}`
        : pending({ kind: "approval", prompt: "Late?", expiresAt: "2000-01-01T00:00:00Z" }),
  })

  it("the sweep declines an expired request through the holder's agent; logger and notify hear of the run", async () => {
    const store = createMemoryStore()
    const client = createClient({
      baseUrl: `${server.url}/v1`,
      style: "openai",
      model: "m",
      apiKey: "k",
      store,
    })
    const toolkit = await createToolkit({ extraTools: [late] })
    server.enqueue({ toolCalls: [{ id: "l1", name: "late", arguments: {} }] }, { text: "moved on" })
    const logged: { level: string; message: string; data?: Record<string, unknown> }[] = []
    const notified: string[] = []
    const swept = createStoreHost({
      store,
      agents: [hostAgent({ name: "late", client, toolkit })],
      sweepEveryMs: 20,
      notify: async (entry) => {
        notified.push(entry.request.id)
      },
      logger: {
        info: (message, data) => logged.push({ level: "info", message, data }),
        error: (message, data) => logged.push({ level: "error", message, data }),
      },
    })
    try {
      await swept.start("late", "late-1", "go")
      const parked = (await swept.result("late-1", { timeoutMs: 10_000 })) as RunResult
      const requestId = parked.pending?.id as string
      expect(notified).toEqual([requestId])
      await until(async () => (await swept.getDecision(requestId)) !== undefined, "the sweep's decline")
      expect(await swept.getDecision(requestId)).toEqual({ ok: false, reason: "expired" })
      await until(
        async () => ((await swept.result("late-1", { timeoutMs: 10_000 })) as RunResult).text === "moved on",
        "the resumed run",
      )
      // A refusal is reported at info, with its code.
      await expect(swept.deliverAnswer({ id: requestId, ok: true })).rejects.toMatchObject({
        code: "TNX_ANSWER_CONFLICT",
      })
      expect(logged).toContainEqual({
        level: "info",
        message: expect.stringContaining(`answer to ${requestId} refused`),
        data: { requestId, code: "TNX_ANSWER_CONFLICT" },
      })
      expect(logged.filter((l) => l.level === "error")).toEqual([])
    } finally {
      await swept.close()
    }
  })

  it("a run that fails is a failed run: result rejects EngineRunError and the logger has its code", async () => {
    const store = createMemoryStore()
    const client = createClient({
      baseUrl: `${server.url}/v1`,
      style: "openai",
      model: "m",
      apiKey: "k",
      store,
    })
    server.enqueue({ status: 400, text: "bad request" })
    const errors: Record<string, unknown>[] = []
    const failing = createStoreHost({
      store,
      agents: [hostAgent({ name: "a", client })],
      sweepEveryMs: false,
      logger: { info: () => undefined, error: (_m, data) => errors.push(data ?? {}) },
    })
    try {
      await failing.start("a", "fails-1", "go")
      await expect(failing.result("fails-1", { timeoutMs: 10_000 })).rejects.toMatchObject({
        code: "TNX_ENGINE_RUN",
      })
      expect(errors).toEqual([
        expect.objectContaining({ runId: "fails-1", agent: "a", code: "TNX_LLM_HTTP" }),
      ])
    } finally {
      await failing.close()
    }
  })
})
