import { describe, expect, it } from "vitest"
import { createClient } from "../../src/client/create-client.js"
import {
  EXPIRED,
  checkRunId,
  decide,
  defineEngineAgent,
  engineEntryOf,
  engineExecutor,
  namespaceOf,
  runEngineAgent,
} from "../../src/engine/index.js"
import {
  AnswerConflictError,
  AnswerExpiredError,
  AnswerInvalidError,
  ConfigError,
  UnknownRequestError,
} from "../../src/errors.js"
import type { StreamEvent } from "../../src/client/run-result.js"
import type { Request } from "../../src/types.js"
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
    const result = await runEngineAgent(
      calm,
      "hi",
      engineExecutor(calm, new MemoryExecutor({ id: "run-ok" }), () => true),
      async () => () => ({}) as never,
    )
    expect(result).toMatchObject({ status: "done", text: "fine" })
    expect(events).toContain("done")
  })
})
