import { describe, expect, it } from "vitest"
import { createClient } from "../../src/client/create-client.js"
import {
  EXPIRED,
  checkRunId,
  decide,
  defineEngineAgent,
  engineEntryOf,
  engineExecutor,
  engineEventLog,
  namespaceOf,
  runEngineAgent,
  followEngineEvents,
  tailEngineEvents,
  turnWorkflowId,
} from "../../src/engine/index.js"
import {
  AnswerConflictError,
  AnswerExpiredError,
  AnswerInvalidError,
  ConfigError,
  UnknownRequestError,
} from "../../src/errors.js"
import type { StreamEvent } from "../../src/client/run-result.js"
import type { DurableExecutor, Request } from "../../src/types.js"
import { createToolkit } from "../../src/tools/toolkit.js"
import { defineTool } from "../../src/tools/define-tool.js"
import { pending } from "../../src/suspension/pending.js"
import { useFakeServer } from "../helpers.js"
import { MemoryExecutor } from "../memory-executor.js"

const ctx = useFakeServer()
const client = createClient({ baseUrl: "http://127.0.0.1:9/v1", style: "openai", model: "m", apiKey: "k" })
const request: Request = { id: "pnd-1", kind: "approval", prompt: "ok?" }

describe("defineEngineAgent", () => {
  it("refuses a bad name, both or neither of client and runtime, a runtime without root, a bad maxStepBytes", () => {
    expect(defineEngineAgent({ name: "refunds_1", client })).toMatchObject({ name: "refunds_1" })
    expect(() => defineEngineAgent({ name: "bad name", client })).toThrow(ConfigError)
    expect(() => defineEngineAgent({ name: "x".repeat(65), client })).toThrow(/agent name must match/)
    expect(() => defineEngineAgent({ name: "none" })).toThrow(/exactly one of `client` and `runtime`/)
    expect(() => defineEngineAgent({ name: "both", client, runtime: { root: "lead" } })).toThrow(ConfigError)
    expect(() => defineEngineAgent({ name: "rootless", runtime: {} as { root: string } })).toThrow(
      /runtime.root/,
    )
    expect(() => defineEngineAgent({ name: "size", client, maxStepBytes: 0 })).toThrow(/maxStepBytes/)
  })
})

describe("the one-decision rule", () => {
  const held = { runId: "run-1", request }

  it("decides an open request: ok and reason, nothing else", () => {
    expect(decide("pnd-1", held, { id: "pnd-1", ok: false, reason: "no", data: { x: 1 } })).toEqual({
      runId: "run-1",
      request,
      decision: { ok: false, reason: "no" },
    })
  })

  it("refuses a malformed answer first, an unknown request, a decided one (with the first decision), a late ok", () => {
    const decided = { ...held, decision: { ok: true } }
    expect(() => decide("pnd-1", decided, { id: "pnd-1", ok: "yes" })).toThrow(AnswerInvalidError)
    expect(() => decide("pnd-x", undefined, { id: "pnd-x", ok: true })).toThrow(UnknownRequestError)
    let conflict: unknown
    try {
      decide("pnd-1", decided, { id: "pnd-1", ok: true })
    } catch (error) {
      conflict = error
    }
    expect(AnswerConflictError.isInstance(conflict)).toBe(true)
    expect((conflict as AnswerConflictError).decision).toEqual({ ok: true })
    const late = { runId: "run-1", request: { ...request, expiresAt: "2000-01-01T00:00:00Z" } }
    expect(() => decide("pnd-1", late, { id: "pnd-1", ok: true })).toThrow(AnswerExpiredError)
    // A decline after the deadline is still the first decision.
    expect(decide("pnd-1", late, { id: "pnd-1", ok: false }).decision).toEqual({ ok: false })
    const unreadable = { runId: "run-1", request: { ...request, expiresAt: "soon" } }
    expect(() => decide("pnd-1", unreadable, { id: "pnd-1", ok: true })).toThrow(AnswerExpiredError)
  })

  it("the expired decision, entries, run ids and namespaces", () => {
    expect(EXPIRED).toEqual({ ok: false, reason: "expired" })
    expect(engineEntryOf("run-1", request, "2026-01-01T00:00:00.000Z")).toEqual({
      request,
      conversationId: "run-1",
      since: "2026-01-01T00:00:00.000Z",
      attempts: 0,
      state: "open",
    })
    const deep = { ...request, data: { path: ["root", "lead.1", "payer.1"] } }
    expect(engineEntryOf("run-1", deep, "t")).toMatchObject({
      conversationId: "run-1/root/lead.1/payer.1",
      runtimeKey: "run-1",
      path: ["root", "lead.1", "payer.1"],
    })
    expect(checkRunId("order-42:a.b")).toBe("order-42:a.b")
    expect(() => checkRunId("bad id!")).toThrow(/run id must match/)
    expect(() => checkRunId("x".repeat(201))).toThrow(ConfigError)
    expect(namespaceOf(undefined, /^[a-z]+$/)).toBe("toolnexus")
    expect(() => namespaceOf("Bad", /^[a-z]+$/)).toThrow(/namespace must match/)
  })
})

describe("the engine-fault guard", () => {
  class EngineFault extends Error {}
  const isFault = (error: unknown) => error instanceof EngineFault

  it("once an engine fault is seen, every later step and wait fails with it; a step's own error does not latch", async () => {
    let steps = 0
    const base = new MemoryExecutor({ id: "run-g", answer: (r) => ({ id: r.id, ok: true }) })
    const faulty = {
      id: base.id,
      step: async <T>(name: string, fn: () => Promise<T>) => {
        steps++
        if (name === "bad") throw new EngineFault("the engine lost the run")
        return base.step(name, fn)
      },
      wait: (r: Request) => base.wait(r),
    }
    const agent = defineEngineAgent({ name: "a", client, maxStepBytes: 512 })
    const executor = engineExecutor(agent, faulty, isFault)
    expect(executor.maxStepBytes).toBe(512)
    await expect(executor.step("own", async () => Promise.reject(new Error("tool broke")))).rejects.toThrow(
      "tool broke",
    )
    expect(executor.fault()).toBeUndefined()
    expect(await executor.step("fine", async () => 1)).toBe(1)
    await expect(executor.step("bad", async () => 2)).rejects.toThrow("the engine lost the run")
    const ran = steps
    await expect(executor.step("after", async () => 3)).rejects.toThrow("the engine lost the run")
    await expect(executor.wait(request)).rejects.toThrow("the engine lost the run")
    expect(steps).toBe(ran)
    expect(executor.fault()).toBeInstanceOf(EngineFault)
  })

  it("runEngineAgent fails the run with a fault seen before, though it was swallowed on the way", async () => {
    const { server } = ctx
    const live = createClient({ baseUrl: `${server.url}/v1`, style: "openai", model: "m", apiKey: "k" })
    const agent = defineEngineAgent({ name: "a", client: live })
    let seen = 0
    const base = new MemoryExecutor({ id: "run-f" })
    const executor = engineExecutor(agent, base, () => true)
    // A fault swallowed on the way (as a child handle's failure would be), then a clean run.
    await executor.step("probe", async () => Promise.reject(new Error("cancelled"))).catch(() => seen++)
    expect(seen).toBe(1)
    await expect(runEngineAgent(agent, "hi", executor, async () => () => ({}) as never)).rejects.toThrow(
      "cancelled",
    )
    expect(server.requests).toHaveLength(0)
    // Without a fault the run's result comes back, and observers' throws change nothing.
    server.enqueue({ text: "fine" })
    const events: string[] = []
    const calm = defineEngineAgent({
      name: "b",
      client: live,
      onEvent: (ev: StreamEvent) => {
        events.push(ev.type)
        throw new Error("observer broke")
      },
    })
    const extra: string[] = []
    const { result, messages } = await runEngineAgent(
      calm,
      "hi",
      engineExecutor(calm, new MemoryExecutor({ id: "run-ok" }), () => true),
      async () => () => ({}) as never,
      { onEvent: (ev) => extra.push(ev.type) },
    )
    expect(result).toMatchObject({ status: "done", text: "fine" })
    expect(events).toContain("done")
    expect(extra).toEqual(events)
    expect(JSON.stringify(messages)).toContain("fine")
  })

  it("a later turn continues the conversation it is given; a runtime tree takes none", async () => {
    const { server } = ctx
    const live = createClient({ baseUrl: `${server.url}/v1`, style: "openai", model: "m", apiKey: "k" })
    const agent = defineEngineAgent({ name: "chat", client: live })
    server.enqueue({ text: "first answer" }, { text: "second answer" })
    const first = await runEngineAgent(
      agent,
      "first question",
      engineExecutor(agent, new MemoryExecutor({ id: "conv" }), () => true),
      async () => () => ({}) as never,
    )
    const second = await runEngineAgent(
      agent,
      "second question",
      engineExecutor(agent, new MemoryExecutor({ id: turnWorkflowId("conv", 2) }), () => true),
      async () => () => ({}) as never,
      { history: first.messages },
    )
    expect(second.result).toMatchObject({ text: "second answer" })
    const said = JSON.stringify(server.requests.at(-1)?.body.messages)
    expect(said).toContain("first question")
    expect(said).toContain("first answer")
    expect(JSON.stringify(second.messages)).toContain("first question")
    expect(turnWorkflowId("conv", 1)).toBe("conv")
    expect(turnWorkflowId("conv", 3)).toBe("conv~3")
    const tree = defineEngineAgent({ name: "tree", runtime: { root: "lead" } })
    const treeExecutor = engineExecutor(tree, new MemoryExecutor({ id: "tree" }), () => true)
    await expect(
      runEngineAgent(tree, "more", treeExecutor, async () => () => ({}) as never, { history: [] }),
    ).rejects.toBeInstanceOf(ConfigError)
  })
})

describe("the executor's wait", () => {
  it("is told the run's conversation at the suspension, its halted turn's tool call included", async () => {
    const { server } = ctx
    const live = createClient({ baseUrl: `${server.url}/v1`, style: "openai", model: "m", apiKey: "k" })
    const ask = defineTool({
      name: "ask",
      description: "asks",
      inputSchema: { type: "object", properties: {} },
      run: (_args, toolCtx) => (toolCtx.answer?.ok ? "yes" : pending({ kind: "approval", prompt: "ok?" })),
    })
    server.enqueue({ toolCalls: [{ id: "c1", name: "ask", arguments: {} }] }, { text: "asked" })
    const seen: (readonly unknown[] | undefined)[] = []
    const base = new MemoryExecutor({ id: "wait-ctx", answer: (r) => ({ id: r.id, ok: true }) })
    const executor: DurableExecutor = {
      id: base.id,
      step: (name, fn) => base.step(name, fn),
      wait: (request, context) => {
        seen.push(context?.messages)
        return base.wait(request)
      },
    }
    const result = await live.run("please ask", {
      toolkit: await createToolkit({ extraTools: [ask] }),
      executor,
    })
    expect(result.text).toBe("asked")
    expect(seen).toHaveLength(1)
    const said = JSON.stringify(seen[0])
    expect(said).toContain("please ask")
    expect(said).toContain('"c1"')
    expect(said).not.toContain("asked")
  })
})

describe("the engines' event log", () => {
  it("writes in order with one write in flight, batching what piles up; a failed write is reported and dropped", async () => {
    const writes: string[][] = []
    const errors: unknown[] = []
    let release: (() => void) | undefined
    const log = engineEventLog(
      async (batch) => {
        writes.push(batch.map((ev) => (ev as { delta: string }).delta))
        if (writes.length === 1) await new Promise<void>((resolve) => (release = resolve))
        if (writes.length === 2) throw new Error("store down")
      },
      (error) => errors.push(error),
    )
    const text = (delta: string): StreamEvent => ({ type: "text", delta })
    log.emit(text("a"))
    log.emit(text("b"))
    log.emit(text("c"))
    // The first write holds: the rest wait for it, as one batch.
    expect(writes).toEqual([["a"]])
    release?.()
    await log.flush()
    log.emit(text("d"))
    await log.flush()
    expect(writes).toEqual([["a"], ["b", "c"], ["d"]])
    expect(errors).toHaveLength(1)
  })

  it("a tail yields from the start or the end, and stops once the run is no longer in flight", async () => {
    const text = (delta: string): StreamEvent => ({ type: "text", delta })
    const events = [text("a"), text("b")]
    let running = true
    let endRead!: () => void
    const endCalled = new Promise<void>((resolve) => {
      endRead = resolve
    })
    const source = {
      read: async (after: number) => ({ events: events.slice(after), next: events.length }),
      end: async () => {
        endRead()
        return events.length
      },
      inFlight: async () => running,
    }
    // From the start, while the run runs: what it emitted so far first.
    const all = tailEngineEvents(source, { fromStart: true, pollMs: 1 })
    const early = [(await all.next()).value, (await all.next()).value]
    expect(early.map((ev) => (ev as { delta: string }).delta)).toEqual(["a", "b"])
    // `live` starts at the log's end now: it sees only what comes after.
    const live = tailEngineEvents(source, { pollMs: 1 })
    const firstLive = live.next()
    await endCalled
    events.push(text("c"))
    running = false
    const seen: string[] = []
    for await (const ev of tailEngineEvents(source, { fromStart: true, pollMs: 1 }))
      seen.push((ev as { delta: string }).delta)
    expect(seen).toEqual([])
    expect(((await firstLive).value as { delta: string }).delta).toBe("c")
    expect((await live.next()).done).toBe(true)
    const rest: string[] = []
    for await (const ev of all) rest.push((ev as { delta: string }).delta)
    expect(rest).toEqual(["c"])
    // Not in flight: nothing.
    const idle: unknown[] = []
    for await (const ev of tailEngineEvents(source, { fromStart: true })) idle.push(ev)
    expect(idle).toEqual([])
  })

  it("from a known position, a run that parked or ended before the first look still has its events read", async () => {
    const text = (delta: string): StreamEvent => ({ type: "text", delta })
    const pending: StreamEvent = {
      type: "pending",
      request: { id: "req-1", kind: "approval", prompt: "ok?" },
    } as StreamEvent
    // The turn's log: an earlier stretch (before position 1), then this one, which already parked.
    const events = [text("earlier"), text("a"), pending]
    const looks: string[] = []
    const source = {
      read: async (after: number) => {
        looks.push(`read ${after}`)
        return { events: events.slice(after), next: events.length }
      },
      end: async () => events.length,
      start: async () => events.length,
      inFlight: async () => {
        looks.push("inFlight")
        return false
      },
    }
    const seen: unknown[] = []
    for await (const ev of tailEngineEvents(source, { from: 1, pollMs: 1 })) seen.push(ev)
    expect(seen).toEqual([text("a"), pending])
    // One look and one read: a run not in flight is not waited on.
    expect(looks).toEqual(["inFlight", "read 1"])
    // Without a position the same run yields nothing (`fromStart` finds the stretch after its park).
    const none: unknown[] = []
    for await (const ev of tailEngineEvents(source, { fromStart: true, pollMs: 1 })) none.push(ev)
    expect(none).toEqual([])
  })

  it("follow feeds an observer that throws, stops once closed, and reports a failed read", async () => {
    const text = (delta: string): StreamEvent => ({ type: "text", delta })
    async function* events(fail: boolean) {
      yield text("a")
      yield text("b")
      yield text("c")
      if (fail) throw new Error("log unreachable")
    }
    const seen: string[] = []
    let closed = false
    const errors: unknown[] = []
    const done = new Promise<void>((resolve) => {
      followEngineEvents(
        events(false),
        (ev) => {
          const delta = (ev as { delta: string }).delta
          seen.push(delta)
          if (delta === "a") throw new Error("observer bug")
          if (delta === "b") {
            closed = true
            resolve()
          }
        },
        { isClosed: () => closed, onError: (error) => errors.push(error) },
      )
    })
    await done
    await new Promise((resolve) => setImmediate(resolve))
    // The observer's throw did not stop the feed; closing did, before "c".
    expect(seen).toEqual(["a", "b"])
    expect(errors).toEqual([])
    const failed = new Promise<unknown>((resolve) => {
      followEngineEvents(events(true), () => {}, { isClosed: () => false, onError: resolve })
    })
    expect(((await failed) as Error).message).toBe("log unreachable")
  })
})
