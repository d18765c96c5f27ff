import { type Answer, MemoryStore, defineTool, pending } from "@toolnexus/core"
import { type FakeLLMServer, type FakeRequestView, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { ClosedError, InboxFullError, RuntimeError } from "../src/errors.js"
import { createRuntime, restoreRuntime } from "../src/runtime.js"
import type { AgentDef, RuntimeOptions } from "../src/types.js"
import { until } from "./until.js"

let server: FakeLLMServer
beforeAll(async () => {
  server = await createFakeLLMServer()
})
beforeEach(() => server.reset())
afterAll(() => server.close())

const STYLES = ["openai", "anthropic"] as const

function options(
  style: (typeof STYLES)[number],
  registry: Record<string, AgentDef>,
  extra: Partial<RuntimeOptions> = {},
): RuntimeOptions {
  const baseUrl = style === "openai" ? `${server.url}/v1` : server.url
  return { registry, llm: { baseUrl, style, model: "m", apiKey: "k" }, ...extra }
}

/** Routes fake replies by the calling agent's system prompt (its soul). */
const bySoul = (soul: string) => (req: FakeRequestView) => req.system === soul
const requestsOf = (soul: string) => server.requests.filter((r) => r.system === soul)

function approvalTool(runs: { answers: (Answer | undefined)[] }) {
  return defineTool({
    name: "transfer",
    description: "move money",
    inputSchema: { type: "object", properties: { amount: { type: "number" } } },
    run: ({ amount }, ctx) => {
      runs.answers.push(ctx.answer)
      return ctx.answer?.ok ? `moved ${amount}` : pending({ kind: "approval", prompt: `Move ${amount}?` })
    },
  })
}

describe.each(STYLES)("runtime (%s)", (style) => {
  it("spawns with deterministic parent-scoped ids and runs a handle to idle", async () => {
    const registry = { helper: { name: "helper", does: "helps", soul: "helper" } }
    const rt = createRuntime(options(style, registry))
    const a = rt.spawn(rt.root, "helper")
    const b = rt.spawn(rt.root, "helper")
    expect([a.id, b.id]).toEqual(["root/helper.1", "root/helper.2"])
    server.addRule({ match: bySoul("helper"), reply: (req) => ({ text: `hi ${req.lastUserText}` }) })
    rt.wake(a, "there")
    expect(rt.stateOf(a)).toBe("running")
    const result = await rt.wait(a)
    expect(result).toMatchObject({ status: "done", text: "hi there", isError: false, turns: 1 })
    expect(rt.transitions(a)).toEqual(["idle→running", "running→idle"])
    expect(rt.list().map((v) => v.id)).toEqual(["root/helper.1", "root/helper.2"])
    expect(() => rt.spawn(rt.root, "nobody")).toThrow(expect.objectContaining({ reason: "unknown_agent" }))
  })

  it("a durably suspended handle: inspect shows pendingKind, wait is immediate, resume continues from the halted call", async () => {
    const runs = { answers: [] as (Answer | undefined)[] }
    const registry = { payer: { name: "payer", does: "pays", soul: "payer", tools: [approvalTool(runs)] } }
    const rt = createRuntime(options(style, registry))
    server.enqueue({ toolCalls: [{ id: "t1", name: "transfer", arguments: { amount: 10 } }] })
    const h = rt.spawn(rt.root, "payer")
    rt.wake(h, "move 10")
    const parked = await rt.wait(h)
    expect(parked.status).toBe("pending")
    expect(rt.inspect(h)).toMatchObject({ state: "suspended", pendingKind: "approval" })
    const request = rt.inspect(h).pending as NonNullable<typeof parked.pending>
    expect(request.data?.path).toEqual(["root", "payer.1"])
    // Fast path: waiting again on a parked handle returns at once with the same result.
    expect(await rt.wait(h)).toEqual(parked)

    server.enqueue((req) => ({ text: `done: ${req.toolResults[0]?.content}` }))
    await rt.resume({ id: request.id, ok: true })
    expect(rt.stateOf(h)).toBe("idle")
    expect(await rt.wait(h)).toMatchObject({ status: "done", text: "done: moved 10", turns: 2 })
    expect(runs.answers).toEqual([undefined, { id: request.id, ok: true }])
    expect(server.requests).toHaveLength(2) // the question was not asked again
    expect(rt.transitions(h)).toEqual([
      "idle→running",
      "running→suspended",
      "suspended→idle",
      "idle→running",
      "running→idle",
    ])
    await expect(rt.resume({ id: request.id, ok: true })).rejects.toThrow(/unknown request/)
  })

  it("a parked handle's request carries data.path wherever the host sees it; the store keeps its own", async () => {
    const runs = { answers: [] as (Answer | undefined)[] }
    const registry = { payer: { name: "payer", does: "pays", soul: "payer", tools: [approvalTool(runs)] } }
    const store = new MemoryStore()
    const rt = createRuntime(options(style, registry, { store }))
    server.enqueue({ toolCalls: [{ id: "t1", name: "transfer", arguments: { amount: 4 } }] })
    const h = rt.spawn(rt.root, "payer")
    rt.wake(h, "move 4")
    const parked = await rt.wait(h)
    const path = ["root", "payer.1"]
    expect(parked.pending?.data).toMatchObject({ callId: "t1", path })
    expect(rt.inspect(h).pending).toEqual(parked.pending)
    expect(await rt.wait(h)).toEqual(parked)
    const stored = await store.getPending(rt.conversationId(h))
    expect(stored?.id).toBe(parked.pending?.id)
    expect(stored?.data).toEqual({ ...parked.pending?.data, path: undefined })
    expect(stored?.data).not.toHaveProperty("path")
    const snapshot = JSON.parse(JSON.stringify(rt.snapshot()))
    const saved = snapshot.handles.find((x: { id: string }) => x.id === h.id)
    expect(saved.pending).toEqual(parked.pending)
    expect(saved.lastResult).toEqual(parked)
    // Restored and snapshotted again: the same JSON.
    const again = restoreRuntime(snapshot, options(style, registry, { store }))
    expect(JSON.parse(JSON.stringify(again.snapshot()))).toEqual(snapshot)
    expect(again.inspect(h).pending).toEqual(parked.pending)
  })

  it("a declined answer still finishes the run", async () => {
    const runs = { answers: [] as (Answer | undefined)[] }
    const registry = { payer: { name: "payer", does: "pays", soul: "payer", tools: [approvalTool(runs)] } }
    const rt = createRuntime(options(style, registry))
    server.enqueue({ toolCalls: [{ name: "transfer", arguments: { amount: 3 } }] }, (req) => ({
      text: `ok, not moving: ${req.toolResults[0]?.content}`,
    }))
    const h = rt.spawn(rt.root, "payer")
    rt.wake(h, "move 3")
    const parked = await rt.wait(h)
    await rt.resume({ id: parked.pending?.id as string, ok: false, reason: "declined" })
    expect(await rt.wait(h)).toMatchObject({
      status: "done",
      text: "ok, not moving: declined: Move 3? (declined)",
    })
    expect(runs.answers).toHaveLength(1)
  })

  it("fans out parallel task calls concurrently; the parent gains one tool message per call; usage rolls up", async () => {
    const registry: Record<string, AgentDef> = {
      lead: { name: "lead", does: "leads", soul: "lead", team: ["scout", "critic"] },
      scout: { name: "scout", does: "explores the code", soul: "scout" },
      critic: { name: "critic", does: "reviews", soul: "critic" },
    }
    const rt = createRuntime(options(style, registry, { store: new MemoryStore() }))
    const inFlightAtReply: number[] = []
    server.addRule({
      match: (req) => req.system === "lead" && req.toolResults.length === 0,
      reply: {
        toolCalls: [
          { id: "k1", name: "task", arguments: { agent: "scout", prompt: "look" } },
          { id: "k2", name: "task", arguments: { agent: "critic", prompt: "judge" } },
        ],
        usage: { promptTokens: 100, completionTokens: 10 },
      },
    })
    server.addRule({
      match: bySoul("lead"),
      reply: (req) => ({
        text: req.toolResults.map((r) => r.content).join(" + "),
        usage: { promptTokens: 50, completionTokens: 5 },
      }),
    })
    for (const soul of ["scout", "critic"]) {
      server.addRule({
        match: bySoul(soul),
        reply: () => {
          inFlightAtReply.push(server.inFlight)
          return { text: `${soul} says hi`, usage: { promptTokens: 7, completionTokens: 3 }, delayMs: 150 }
        },
      })
    }
    const tools = server.requests
    const lead = rt.spawn(rt.root, "lead")
    rt.wake(lead, "go")
    const result = await rt.wait(lead)
    expect(result.text).toBe("scout says hi + critic says hi")
    // The second child's request arrived while the first was still being answered.
    expect(inFlightAtReply).toEqual([1, 2])
    expect(rt.inspect(lead).children).toEqual(["root/lead.1/scout.1", "root/lead.1/critic.1"])
    expect(rt.inspect(lead).tokens).toBe(110 + 55 + 10 + 10)
    // Issue 8: turns are the lead's own; totalTurns and tokens roll up the subtree.
    expect(rt.inspect(lead)).toMatchObject({ turns: 2, totalTurns: 4 })
    expect(result).toMatchObject({ turns: 2, totalTurns: 4, totalTokens: 185 })
    const leadRequests = tools.filter((r) => r.system === "lead")
    expect(leadRequests[1]?.toolResults.map((r) => r.id)).toEqual(["k1", "k2"])
    // The children ran on fresh transcripts: their first request holds only their prompt.
    expect(
      requestsOf("scout")[0]?.body.messages.filter((m: { role: string }) => m.role !== "system"),
    ).toHaveLength(1)
    const stored = (await rt.store.get(rt.conversationId(lead))) ?? []
    expect(stored).toHaveLength(style === "openai" ? 5 : 4) // user, assistant, 2 tool msgs | 1 user block, assistant
    // Task description lists the team only, sorted, with `does`.
    const taskTool = leadRequests[0]?.body.tools[0]
    const description = style === "openai" ? taskTool.function.description : taskTool.description
    expect(description).toContain("- critic: reviews\n- scout: explores the code")
    expect(rt.stateOf({ id: "root/lead.1/scout.1" })).toBe("closed")
    expect(server.requests.map((r) => r.system)).toEqual(["lead", "scout", "critic", "lead"])
  })

  it("escalation: a child's suspension is answered inline by the nearest waitFor up the chain", async () => {
    const runs = { answers: [] as (Answer | undefined)[] }
    const asked: string[] = []
    const registry: Record<string, AgentDef> = {
      boss: {
        name: "boss",
        does: "decides",
        soul: "boss",
        team: ["payer"],
        waitFor: (req) => {
          asked.push(`${req.kind}:${req.prompt}:${(req.data?.path as string[] | undefined)?.join("/")}`)
          return { id: req.id, ok: true }
        },
      },
      payer: { name: "payer", does: "pays", soul: "payer", tools: [approvalTool(runs)] },
    }
    const rt = createRuntime(options(style, registry))
    server.addRule({
      match: (r) => r.system === "boss" && r.toolResults.length === 0,
      reply: { toolCalls: [{ name: "task", arguments: { agent: "payer", prompt: "pay 4" } }] },
    })
    server.addRule({ match: bySoul("boss"), reply: (r) => ({ text: `boss: ${r.toolResults[0]?.content}` }) })
    server.addRule({
      match: (r) => r.system === "payer" && r.toolResults.length === 0,
      reply: { toolCalls: [{ name: "transfer", arguments: { amount: 4 } }] },
    })
    server.addRule({
      match: bySoul("payer"),
      reply: (r) => ({ text: `payer: ${r.toolResults[0]?.content}` }),
    })
    const boss = rt.spawn(rt.root, "boss")
    rt.wake(boss, "start")
    const result = await rt.wait(boss)
    expect(result).toMatchObject({ status: "done", text: "boss: payer: moved 4" })
    expect(asked).toEqual(["approval:Move 4?:root/boss.1/payer.1"])
    expect(rt.transitions({ id: "root/boss.1/payer.1" })).toEqual([
      "idle→running",
      "running→suspended",
      "suspended→running",
      "running→idle",
      "idle→closed",
    ])
    expect(rt.transitions(boss)).toEqual(["idle→running", "running→idle"])
  })

  it("two-level durable suspension: resume reattaches by task key, no duplicate child, only new LLM requests", async () => {
    const runs = { answers: [] as (Answer | undefined)[] }
    const registry: Record<string, AgentDef> = {
      approverParent: { name: "approverParent", does: "delegates", soul: "parent", team: ["asker"] },
      asker: { name: "asker", does: "asks for approval", soul: "asker", tools: [approvalTool(runs)] },
    }
    const rt = createRuntime(options(style, registry))
    server.addRule({
      match: (r) => r.system === "parent" && r.toolResults.length === 0,
      reply: {
        toolCalls: [{ id: "task-1", name: "task", arguments: { agent: "asker", prompt: "get approval" } }],
      },
    })
    server.addRule({
      match: bySoul("parent"),
      reply: (r) => ({ text: `parent: ${r.toolResults[0]?.content}` }),
    })
    server.addRule({
      match: (r) => r.system === "asker" && r.toolResults.length === 0,
      reply: { toolCalls: [{ name: "transfer", arguments: { amount: 8 } }] },
    })
    server.addRule({
      match: bySoul("asker"),
      reply: (r) => ({ text: `asker: ${r.toolResults[0]?.content}` }),
    })

    const top = rt.spawn(rt.root, "approverParent")
    rt.wake(top, "begin")
    const parked = await rt.wait(top)
    expect(parked.status).toBe("pending")
    expect(parked.pending?.data?.path).toEqual(["root", "approverParent.1", "asker.1"])
    expect(rt.list().map((v) => [v.id, v.state])).toEqual([
      ["root/approverParent.1", "suspended"],
      ["root/approverParent.1/asker.1", "suspended"],
    ])
    expect(server.requests).toHaveLength(2)

    await rt.resume({ id: parked.pending?.id as string, ok: true })
    expect(await rt.wait(top)).toMatchObject({ status: "done", text: "parent: asker: moved 8" })
    expect(server.requests).toHaveLength(4) // exactly the two new ones
    expect(rt.inspect(top).children).toEqual(["root/approverParent.1/asker.1"])
    expect(rt.trace()).toContain(
      "root/approverParent.1: task replay → REATTACH to root/approverParent.1/asker.1",
    )
    expect(runs.answers.map((a) => a?.ok)).toEqual([undefined, true])
    expect(rt.transitions(top)).toEqual([
      "idle→running",
      "running→suspended",
      "suspended→idle",
      "idle→running",
      "running→idle",
    ])
  })

  it("snapshot → JSON → restoreRuntime on the same store → resume finishes the tree", async () => {
    const runs = { answers: [] as (Answer | undefined)[] }
    const registry: Record<string, AgentDef> = {
      approverParent: { name: "approverParent", does: "delegates", soul: "parent", team: ["asker"] },
      asker: { name: "asker", does: "asks", soul: "asker", tools: [approvalTool(runs)] },
    }
    const store = new MemoryStore()
    const first = createRuntime(options(style, registry, { store }))
    server.addRule({
      match: (r) => r.system === "parent" && r.toolResults.length === 0,
      reply: { toolCalls: [{ name: "task", arguments: { agent: "asker", prompt: "ask" } }] },
    })
    server.addRule({
      match: bySoul("parent"),
      reply: (r) => ({ text: `parent: ${r.toolResults[0]?.content}` }),
    })
    server.addRule({
      match: (r) => r.system === "asker" && r.toolResults.length === 0,
      reply: { toolCalls: [{ name: "transfer", arguments: { amount: 1 } }] },
    })
    server.addRule({
      match: bySoul("asker"),
      reply: (r) => ({ text: `asker: ${r.toolResults[0]?.content}` }),
    })
    const top = first.spawn(first.root, "approverParent")
    first.wake(top, "begin")
    const parked = await first.wait(top)
    const snapshot = JSON.parse(JSON.stringify(first.snapshot()))

    const second = restoreRuntime(snapshot, options(style, registry, { store }))
    const restoredTop = second.handle(top.id)
    expect(restoredTop).toBeDefined()
    expect(second.inspect(restoredTop!)).toMatchObject({ state: "suspended", pendingKind: "approval" })
    await second.resume({ id: parked.pending?.id as string, ok: true })
    expect(await second.wait(restoredTop!)).toMatchObject({ status: "done", text: "parent: asker: moved 1" })
    expect(second.inspect(restoredTop!).children).toHaveLength(1)
    expect(server.requests).toHaveLength(4)
    expect(() => restoreRuntime({ ...snapshot, schemaVersion: 99 }, options(style, registry))).toThrow(
      /schema version 99/,
    )
  })
})

describe("budgets", () => {
  const registry: Record<string, AgentDef> = {
    lead: { name: "lead", does: "leads", soul: "lead", team: ["worker"], budget: { maxTokens: 100 } },
    worker: { name: "worker", does: "works", soul: "worker", budget: { maxTokens: 1000, maxTurns: 5 } },
    looper: {
      name: "looper",
      does: "loops",
      soul: "looper",
      tools: [
        defineTool({ name: "noop", description: "noop", inputSchema: { type: "object" }, run: () => "ok" }),
      ],
    },
  }

  it("a child's budget is carved from the parent's remainder", () => {
    const rt = createRuntime(options("openai", registry))
    const lead = rt.spawn(rt.root, "lead")
    const worker = rt.spawn(lead, "worker")
    const snap = rt.snapshot().handles.find((h) => h.id === worker.id)
    expect(snap?.budget).toMatchObject({ maxTokens: 100, maxTurns: 5 })
  })

  it("maxTurns stops the run as incomplete with the limit named, keeping partial work", async () => {
    const rt = createRuntime(options("openai", registry))
    server.addRule({
      match: bySoul("looper"),
      reply: { text: "still going", toolCalls: [{ name: "noop", arguments: {} }] },
    })
    const h = rt.spawn(rt.root, "looper", { maxTurns: 3 })
    rt.wake(h, "loop")
    const result = await rt.wait(h)
    expect(result).toMatchObject({ status: "incomplete", limit: "maxTurns", turns: 3, text: "still going" })
    expect(server.requests).toHaveLength(3)
  })

  it("sibling spend counts against the shared parent budget; spawning past it is refused", async () => {
    const rt = createRuntime(options("openai", registry))
    server.addRule({
      match: bySoul("worker"),
      reply: { text: "done", usage: { promptTokens: 60, completionTokens: 0 } },
    })
    const lead = rt.spawn(rt.root, "lead")
    const w1 = rt.spawn(lead, "worker")
    const w2 = rt.spawn(lead, "worker")
    rt.wake(w1, "a")
    await rt.wait(w1)
    rt.wake(w2, "b")
    expect(await rt.wait(w2)).toMatchObject({ status: "done" })
    // 120 tokens spent under a 100-token lead: the next turn anywhere below is refused.
    const w3 = () => rt.spawn(lead, "worker")
    expect(w3).toThrow(expect.objectContaining({ reason: "budget_exhausted" }))
    rt.wake(lead, "summarise")
    expect(await rt.wait(lead)).toMatchObject({ status: "incomplete", limit: "maxTokens" })
  })

  it("maxChildren and maxDepth refuse spawns with typed errors", () => {
    const rt = createRuntime(options("openai", registry))
    const lead = rt.spawn(rt.root, "lead", { maxChildren: 1, maxDepth: 1 })
    const w = rt.spawn(lead, "worker")
    expect(() => rt.spawn(lead, "worker")).toThrow(expect.objectContaining({ reason: "max_children" }))
    expect(() => rt.spawn(w, "worker")).toThrow(expect.objectContaining({ reason: "max_depth" }))
    expect(() => rt.spawn(w, "worker")).toThrow(RuntimeError)
  })
})

describe("gates and lifecycle", () => {
  const registry: Record<string, AgentDef> = {
    lead: { name: "lead", does: "leads", soul: "lead", budget: { maxConcurrent: 1 } },
    worker: { name: "worker", does: "works", soul: "worker" },
  }

  it("the inbox rejects past its cap; drain renders provenance and coalesces ticks", async () => {
    const rt = createRuntime(options("openai", registry, { inboxCap: 4 }))
    const lead = rt.spawn(rt.root, "lead")
    const worker = rt.spawn(lead, "worker")
    rt.post(worker, { text: "from the lead", from: lead.id, channel: "task" })
    rt.post(worker, { text: "beat", channel: "tick" })
    rt.post(worker, { text: "beat", channel: "tick" })
    rt.post(worker, { text: "spam", from: "stranger" })
    expect(() => rt.post(worker, { text: "one too many" })).toThrow(InboxFullError)
    expect(rt.inspect(worker).inbox).toBe(4)
    server.addRule({ match: bySoul("worker"), reply: { text: "read" } })
    rt.wake(worker, "now")
    await rt.wait(worker)
    expect(server.requests[0]?.lastUserText).toBe(
      "[from: root/lead.1, channel: task] from the lead\n[from: host, channel: tick] beat (×2)\n[from: stranger, untrusted] spam\n\nnow",
    )
    expect(rt.inspect(worker).inbox).toBe(0)
  })

  it("maxConcurrent queues extra wakes FIFO and a finishing sibling hands over its slot", async () => {
    const rt = createRuntime(options("openai", registry))
    server.addRule({
      match: bySoul("worker"),
      reply: (r) => ({ text: `did ${r.lastUserText}`, delayMs: 20 }),
    })
    const lead = rt.spawn(rt.root, "lead")
    const ws = [1, 2, 3].map(() => rt.spawn(lead, "worker"))
    for (const [i, w] of ws.entries()) rt.wake(w, `job${i + 1}`)
    expect(ws.map((w) => rt.stateOf(w))).toEqual(["running", "idle", "idle"])
    const results = await Promise.all(ws.map((w) => rt.wait(w)))
    expect(results.map((r) => r.text)).toEqual(["did job1", "did job2", "did job3"])
    expect(server.requests.map((r) => r.lastUserText)).toEqual(["job1", "job2", "job3"])
    expect(rt.trace().filter((l) => l.includes("queued"))).toHaveLength(2)
  })

  it("maxConcurrentTurns bounds concurrent LLM calls, never whole runs", async () => {
    const rt = createRuntime(
      options("openai", { worker: registry.worker as AgentDef }, { maxConcurrentTurns: 1 }),
    )
    let inFlight = 0
    let peak = 0
    server.addRule({
      match: bySoul("worker"),
      reply: () => {
        inFlight++
        peak = Math.max(peak, inFlight)
        setTimeout(() => inFlight--, 15)
        return { text: "ok", delayMs: 15 }
      },
    })
    const ws = [1, 2, 3].map(() => rt.spawn(rt.root, "worker"))
    for (const w of ws) rt.wake(w, "go")
    expect(ws.map((w) => rt.stateOf(w))).toEqual(["running", "running", "running"])
    await Promise.all(ws.map((w) => rt.wait(w)))
    expect(peak).toBe(1)
  })

  it("interrupt aborts the in-flight request, restores the inbox, and waiters get `interrupted`", async () => {
    const rt = createRuntime(options("openai", registry))
    server.addRule({ match: bySoul("worker"), reply: { hang: true } })
    const w = rt.spawn(rt.root, "worker")
    rt.post(w, { text: "note 1" })
    rt.post(w, { text: "note 2" })
    rt.wake(w, "work")
    const waiting = rt.wait(w)
    await until(() => server.inFlight === 1)
    rt.interrupt(w)
    expect(await waiting).toMatchObject({ status: "interrupted", isError: true })
    expect(rt.stateOf(w)).toBe("idle")
    expect(rt.inspect(w).inbox).toBe(2)
    await until(() => server.inFlight === 0) // the aborted request was torn down
  })

  it("close is graceful and leaf-first, onClose runs before the final state; closed handles stay inspectable", async () => {
    const order: string[] = []
    const reg: Record<string, AgentDef> = {
      lead: { name: "lead", does: "leads", onClose: (h, reason) => void order.push(`${h.id}:${reason}`) },
      worker: { name: "worker", does: "works", onClose: (h, reason) => void order.push(`${h.id}:${reason}`) },
    }
    const rt = createRuntime(options("openai", reg))
    const lead = rt.spawn(rt.root, "lead")
    const w1 = rt.spawn(lead, "worker")
    rt.spawn(w1, "worker")
    await rt.close(rt.root)
    expect(order).toEqual([
      "root/lead.1/worker.1/worker.1:closed",
      "root/lead.1/worker.1:closed",
      "root/lead.1:closed",
    ])
    expect(rt.inspect(lead).state).toBe("closed")
    expect(await rt.wait(lead)).toMatchObject({ status: "closed" })
    expect(() => rt.post(lead, { text: "x" })).toThrow(ClosedError)
    expect(() => rt.spawn(rt.root, "worker")).toThrow(expect.objectContaining({ reason: "closed" }))
  })

  it("wait with timeoutMs gives `timeout` while the handle keeps running (virtual clock)", async () => {
    const { createVirtualClock } = await import("../src/clock.js")
    const clock = createVirtualClock()
    const rt = createRuntime(options("openai", registry, { clock }))
    server.addRule({ match: bySoul("worker"), reply: { text: "late", delayMs: 40 } })
    const w = rt.spawn(rt.root, "worker")
    rt.wake(w, "go")
    const early = rt.wait(w, { timeoutMs: 1000 })
    clock.advance(1000)
    expect(await early).toMatchObject({ status: "timeout", isError: true })
    expect(rt.stateOf(w)).toBe("running")
    expect(await rt.wait(w)).toMatchObject({ status: "done", text: "late" })
  })
})
