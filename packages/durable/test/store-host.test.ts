import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describeHostContract, until } from "@toolnexus/agents/engine-testing"
import { type RunResult, createToolkit, defineTool, hostAgent, pending } from "@toolnexus/core"
import { afterAll, describe, expect, it } from "vitest"
import { type DurableStore, type StoreHostAgent, createMemoryStore, createStoreHost } from "../src/index.js"
import { MemoryData, MemoryStore } from "../src/memory/memory-store.js"
import { SqliteStore } from "../src/sqlite/index.js"
import { countingReads, hostFixture, modelClient, useFakeModel } from "./host-fixture.js"

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
  const model = useFakeModel()
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
    model().enqueue({ toolCalls: [{ id: "l1", name: "late", arguments: {} }] }, { text: "moved on" })
    const logged: { level: string; message: string; data?: Record<string, unknown> }[] = []
    const notified: string[] = []
    const { host: swept } = await hostFixture(model(), {
      name: "late",
      tools: [late],
      host: {
        sweepEveryMs: 20,
        notify: async (entry) => {
          notified.push(entry.request.id)
        },
        logger: {
          info: (message, data) => logged.push({ level: "info", message, data }),
          error: (message, data) => logged.push({ level: "error", message, data }),
        },
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
    model().enqueue({ status: 400, text: "bad request" })
    const errors: Record<string, unknown>[] = []
    const { host: failing } = await hostFixture(model(), {
      host: { logger: { info: () => undefined, error: (_m, data) => errors.push(data ?? {}) } },
    })
    try {
      await failing.start("a", "fails-1", "go")
      // The failure's own code rides along as the cause, for doors that show only a code.
      await expect(failing.result("fails-1", { timeoutMs: 10_000 })).rejects.toMatchObject({
        code: "TNX_ENGINE_RUN",
        cause: { code: "TNX_LLM_HTTP" },
      })
      expect(errors).toEqual([
        expect.objectContaining({ runId: "fails-1", agent: "a", code: "TNX_LLM_HTTP" }),
      ])
    } finally {
      await failing.close()
    }
  })

  it("a start that fails has its failed record stored by the time result rejects in its process", async () => {
    model().enqueue({ status: 400, text: "bad request" })
    // The record's writes wait for `open` (a slow store): a result that rejected before the
    // failure was recorded would leave a reader in another process with a record still running.
    let open = () => {}
    const gate = new Promise<void>((resolve) => {
      open = resolve
    })
    const raw = createMemoryStore()
    const slow = new Proxy(raw, {
      get(target, key) {
        const value = Reflect.get(target, key)
        if (typeof value !== "function") return value
        if (key !== "putSnapshot") return value.bind(target)
        return async (...args: unknown[]) => {
          await gate
          return value.apply(target, args)
        }
      },
    })
    const { host: failing } = await hostFixture(model(), { store: slow })
    try {
      await failing.start("a", "fails-2", "go")
      const rejected = failing.result("fails-2").catch((error: unknown) => error)
      setTimeout(open, 100)
      expect(await rejected).toMatchObject({ code: "TNX_ENGINE_RUN" })
      expect(await raw.getSnapshot("host-run/fails-2")).toMatchObject({
        state: "failed",
        error: { code: "TNX_LLM_HTTP" },
      })
    } finally {
      open()
      await failing.close()
    }
  })

  it("result of a run executing here is its settled result: neither the record nor the transcript is read back", async () => {
    const store = createMemoryStore()
    const client = modelClient(model(), store)
    const { store: counted, reads } = countingReads(store)
    // The client's store is `store`; the host reads through the counting proxy of it.
    const counting = createStoreHost({
      store: counted,
      agents: [hostAgent({ name: "a", client: { ...client, conversationStore: () => counted } })],
      sweepEveryMs: false,
    })
    try {
      model().enqueue({ text: "hello" })
      await counting.start("a", "settled-1", "go")
      const result = (await counting.result("settled-1")) as RunResult
      expect(result).toMatchObject({ status: "done", text: "hello" })
      expect(result.messages.at(-1)).toMatchObject({ role: "assistant" })
      expect(reads).toEqual([])
      // Once the execution is gone, the record and the transcript are what answers.
      const again = (await counting.result("settled-1")) as RunResult
      expect(again).toMatchObject({ status: "done", text: "hello", messages: result.messages })
      expect(reads).toEqual(["getSnapshot host-run/settled-1", "get settled-1"])
    } finally {
      await counting.close()
    }
  })

  const approve = defineTool({
    name: "approve",
    description: "asks first",
    inputSchema: { type: "object", properties: {} },
    run: (_args, ctx) => (ctx.answer ? "approved" : pending({ kind: "approval", prompt: "Go?" })),
  })

  it("adopt: a conversation parked before any host recorded it is answered and cancelled through the host", async () => {
    const store = createMemoryStore()
    const client = modelClient(model(), store)
    const toolkit = await createToolkit({ extraTools: [approve] })
    const park = async (id: string) => {
      model().enqueue({ toolCalls: [{ id: `c-${id}`, name: "approve", arguments: {} }] })
      return (await client.ask("go", { id, toolkit })).pending?.id as string
    }
    const answered = await park("legacy/1")
    const cancelled = await park("legacy/2")
    const agents = [hostAgent({ name: "a", client, toolkit })]
    // A host whose adopt names no agent for the run only records the decision, running nothing.
    const operator = host(store, agents, { adopt: () => undefined })
    expect((await operator.deliverAnswer({ id: answered, ok: true })).decision).toEqual({ ok: true })
    await expect(operator.deliverAnswer({ id: answered, ok: false })).rejects.toThrow(/approved|decision/)
    await operator.close()
    const adopting = host(store, agents, {
      adopt: (runId: string) => (runId.startsWith("legacy/") ? "a" : undefined),
    })
    try {
      model().enqueue({ text: "done after approval" })
      await adopting.deliverAnswer({ id: answered, ok: true })
      expect(((await adopting.result("legacy/1")) as RunResult).text).toBe("done after approval")
      await adopting.cancel("legacy/2", "not wanted")
      expect(await adopting.getDecision(cancelled)).toEqual({ ok: false, reason: "not wanted" })
      await expect(adopting.result("legacy/2")).rejects.toThrow(/cancelled/)
      // Only what adopt names and the store holds: anything else is unknown.
      await expect(adopting.cancel("other/1")).rejects.toThrow(/not known/)
      await expect(adopting.cancel("legacy/none")).rejects.toThrow(/not known/)
    } finally {
      await adopting.close()
    }
  })

  it("result on a closed host whose own run it stopped rejects instead of waiting forever", async () => {
    const store = createMemoryStore()
    const hold = defineTool({
      name: "hold",
      description: "holds until aborted",
      inputSchema: { type: "object", properties: {} },
      run: (_args, ctx) =>
        new Promise<string>((resolve) => ctx.signal?.addEventListener("abort", () => resolve("stopped"))),
    })
    const toolkit = await createToolkit({ extraTools: [hold] })
    let held: () => void = () => {}
    const holding = new Promise<void>((resolve) => {
      held = resolve
    })
    const closing = host(store, [hostAgent({ name: "a", client: modelClient(model(), store), toolkit })], {})
    model().enqueue({ toolCalls: [{ id: "h1", name: "hold", arguments: {} }] })
    await closing.start("a", "held-1", "go", {
      onEvent: (ev) => {
        if (ev.type === "tool_call") held()
      },
    })
    await holding
    const result = closing.result("held-1")
    await closing.close()
    await expect(result).rejects.toMatchObject({ name: "AbortError" })
  })
})
