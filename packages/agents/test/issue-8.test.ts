import { readFileSync } from "node:fs"
import { type Message, MemoryStore, type Request, defineTool, pending } from "@toolnexus/core"
import {
  type FakeLLMServer,
  type FakeReplySource,
  type FakeRequestView,
  createFakeLLMServer,
} from "@toolnexus/core/testing"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { createRuntime, restoreRuntime } from "../src/runtime.js"
import { type RuntimeSnapshot, SNAPSHOT_VERSION } from "../src/snapshot.js"
import type { AgentDef, RuntimeOptions } from "../src/types.js"

// Issue 8: a handle's own turns vs its subtree's; maxTurns limits own turns; pools stay
// shared; golden snapshots of every version; timer ticks coalesce on "timer" and "tick".

let server: FakeLLMServer
beforeAll(async () => {
  server = await createFakeLLMServer()
})
beforeEach(() => server.reset())
afterAll(() => server.close())

const bySoul = (soul: string) => (req: FakeRequestView) => req.system === soul
const options = (
  registry: Record<string, AgentDef>,
  extra: Partial<RuntimeOptions> = {},
): RuntimeOptions => ({
  registry,
  llm: { baseUrl: `${server.url}/v1`, style: "openai", model: "m" },
  ...extra,
})
/** A rule for an agent's first turn of a run (no tool results yet). */
const onFirstTurn = (soul: string, reply: FakeReplySource) =>
  server.addRule({ match: (req) => req.system === soul && req.toolResults.length === 0, reply })
/** Spawns a lead under the root, wakes it and waits for its result. */
async function runLead(registry: Record<string, AgentDef>) {
  const rt = createRuntime(options(registry))
  const lead = rt.spawn(rt.root, "lead")
  rt.wake(lead, "go")
  return { rt, lead, result: await rt.wait(lead) }
}
const noop = defineTool({
  name: "noop",
  description: "noop",
  inputSchema: { type: "object" },
  run: () => "ok",
})

describe("issue 8: handle accounting", () => {
  it("a coordinator with maxTurns 3 that needs 2 turns of its own ends done; children's turns do not count", async () => {
    const registry: Record<string, AgentDef> = {
      lead: { name: "lead", does: "coordinates", soul: "lead", team: ["worker"], budget: { maxTurns: 3 } },
      worker: { name: "worker", does: "works", soul: "worker", tools: [noop] },
    }
    onFirstTurn("lead", {
      toolCalls: [
        { id: "k1", name: "task", arguments: { agent: "worker", prompt: "a" } },
        { id: "k2", name: "task", arguments: { agent: "worker", prompt: "b" } },
      ],
      usage: { promptTokens: 10, completionTokens: 0 },
    })
    server.addRule({
      match: bySoul("lead"),
      reply: (req) => ({
        text: req.toolResults.map((r) => r.content).join("+"),
        usage: { promptTokens: 10, completionTokens: 0 },
      }),
    })
    onFirstTurn("worker", {
      toolCalls: [{ name: "noop", arguments: {} }],
      usage: { promptTokens: 5, completionTokens: 0 },
    })
    server.addRule({
      match: bySoul("worker"),
      reply: { text: "w", usage: { promptTokens: 5, completionTokens: 0 } },
    })
    const { rt, lead, result } = await runLead(registry)
    expect(result).toMatchObject({ status: "done", text: "w+w", turns: 2, totalTurns: 6, totalTokens: 40 })
    expect(result.limit).toBeUndefined()
    expect(rt.inspect(lead)).toMatchObject({ turns: 2, totalTurns: 6, tokens: 40 })
    for (const view of rt.list().filter((v) => v.def === "worker")) {
      expect(view).toMatchObject({ state: "closed", turns: 2, totalTurns: 2, tokens: 10 })
    }
    // The root rolls up everything and has no turns of its own.
    expect(rt.snapshot().handles[0]?.spend).toEqual({ turns: 0, totalTurns: 6, tokens: 40, toolCalls: 4 })
  })

  it("maxTurns still stops a handle's own loop, and a parent's maxTurns does not cap a child's (issue 19)", async () => {
    const registry: Record<string, AgentDef> = {
      lead: {
        name: "lead",
        does: "leads",
        soul: "lead",
        team: ["looper"],
        tools: [noop],
        budget: { maxTurns: 2 },
      },
      looper: { name: "looper", does: "loops", soul: "looper", tools: [noop], budget: { maxTurns: 3 } },
    }
    onFirstTurn("lead", { toolCalls: [{ name: "task", arguments: { agent: "looper", prompt: "loop" } }] })
    server.addRule({
      match: bySoul("lead"),
      reply: { toolCalls: [{ name: "noop", arguments: {} }], text: "again" },
    })
    server.addRule({
      match: bySoul("looper"),
      reply: { text: "more", toolCalls: [{ name: "noop", arguments: {} }] },
    })
    const { rt, result } = await runLead(registry)
    // The looper keeps its own maxTurns 3 (before issue 19 it was cut to the lead's 2).
    const looper = rt.snapshot().handles.find((h) => h.def === "looper")
    expect(looper?.budget.maxTurns).toBe(3)
    expect(looper?.spend).toMatchObject({ turns: 3, totalTurns: 3 })
    expect(looper?.lastResult).toMatchObject({ status: "incomplete", limit: "maxTurns" })
    expect(result).toMatchObject({ status: "incomplete", limit: "maxTurns", turns: 2, totalTurns: 5 })
    expect(server.requests.filter((r) => r.system === "lead")).toHaveLength(2)
  })

  it("maxTotalTurns caps a subtree's turns: carved down the chain, a child's turns spend the parent's", async () => {
    const registry: Record<string, AgentDef> = {
      lead: {
        name: "lead",
        does: "leads",
        soul: "lead",
        team: ["looper"],
        budget: { maxTotalTurns: 4 },
      },
      looper: { name: "looper", does: "loops", soul: "looper", tools: [noop], budget: { maxTotalTurns: 10 } },
    }
    onFirstTurn("lead", { toolCalls: [{ name: "task", arguments: { agent: "looper", prompt: "loop" } }] })
    server.addRule({ match: bySoul("lead"), reply: { text: "lead done" } })
    server.addRule({
      match: bySoul("looper"),
      reply: { text: "more", toolCalls: [{ name: "noop", arguments: {} }] },
    })
    const { rt, lead, result } = await runLead(registry)
    const looper = rt.snapshot().handles.find((h) => h.def === "looper")
    // Carved at spawn: min(own 10, the lead's 4 less its 1 turn so far).
    expect(looper?.budget.maxTotalTurns).toBe(3)
    expect(looper?.lastResult).toMatchObject({ status: "incomplete", limit: "maxTotalTurns", turns: 3 })
    // The lead's pool is used up by its own turn and the looper's three: no second LLM request.
    expect(result).toMatchObject({ status: "incomplete", limit: "maxTotalTurns", turns: 1, totalTurns: 4 })
    expect(server.requests.filter((r) => r.system === "lead")).toHaveLength(1)
    // A spawn under the exhausted lead is refused, naming the key.
    expect(() => rt.spawn(lead, "looper")).toThrow(
      "cannot spawn looper under root/lead.1: budget exhausted (maxTotalTurns is used up)",
    )
  })

  it("every spawn refusal names its budget key", () => {
    const rt = createRuntime(
      options({ lead: { name: "lead", does: "l", soul: "l" }, w: { name: "w", does: "w", soul: "w" } }),
    )
    const lead = rt.spawn(rt.root, "lead", { maxChildren: 1, maxDepth: 1 })
    const w = rt.spawn(lead, "w")
    expect(() => rt.spawn(lead, "w")).toThrow(
      "root/lead.1 may spawn at most 1 child (budget maxChildren); it cannot spawn w",
    )
    expect(() => rt.spawn(w, "w")).toThrow(
      "root/lead.1/w.1 is at the maximum depth of its budget (maxDepth); it cannot spawn w",
    )
    expect(rt.inspect(lead).children).toEqual(["root/lead.1/w.1"])
  })

  it("token pools stay shared down the chain: a child's spend stops its parent's next turn", async () => {
    const registry: Record<string, AgentDef> = {
      lead: {
        name: "lead",
        does: "leads",
        soul: "lead",
        team: ["worker"],
        budget: { maxTokens: 50, maxTurns: 10 },
      },
      worker: { name: "worker", does: "works", soul: "worker" },
    }
    onFirstTurn("lead", {
      toolCalls: [{ name: "task", arguments: { agent: "worker", prompt: "spend" } }],
      usage: { promptTokens: 10, completionTokens: 0 },
    })
    server.addRule({
      match: bySoul("worker"),
      reply: { text: "spent", usage: { promptTokens: 45, completionTokens: 0 } },
    })
    const { rt, result } = await runLead(registry)
    expect(result).toMatchObject({
      status: "incomplete",
      limit: "maxTokens",
      turns: 1,
      totalTurns: 2,
      totalTokens: 55,
    })
    const worker = rt.snapshot().handles.find((h) => h.def === "worker")
    expect(worker?.budget.maxTokens).toBe(40) // carved: 50 minus the lead's 10
  })

  it("turns keep growing across a resume: own turns per handle, totals per subtree", async () => {
    const transfer = defineTool({
      name: "transfer",
      description: "move money",
      inputSchema: { type: "object" },
      run: (_args, ctx) => (ctx.answer?.ok ? "moved" : pending({ kind: "approval", prompt: "Move?" })),
    })
    const registry: Record<string, AgentDef> = {
      lead: { name: "lead", does: "leads", soul: "lead", team: ["payer"], budget: { maxTurns: 2 } },
      payer: { name: "payer", does: "pays", soul: "payer", tools: [transfer] },
    }
    onFirstTurn("lead", { toolCalls: [{ name: "task", arguments: { agent: "payer", prompt: "pay" } }] })
    server.addRule({
      match: bySoul("lead"),
      reply: (req) => ({ text: `lead: ${req.toolResults[0]?.content}` }),
    })
    onFirstTurn("payer", { toolCalls: [{ name: "transfer", arguments: {} }] })
    server.addRule({
      match: bySoul("payer"),
      reply: (req) => ({ text: `payer: ${req.toolResults[0]?.content}` }),
    })
    const rt = createRuntime(options(registry))
    const lead = rt.spawn(rt.root, "lead")
    rt.wake(lead, "go")
    const parked = await rt.wait(lead)
    expect(parked).toMatchObject({ status: "pending", turns: 1, totalTurns: 2 })
    await rt.resume({ id: (parked.pending as Request).id, ok: true })
    // Before issue 8 the lead's maxTurns 2 was used up by the payer's turns: incomplete.
    expect(await rt.wait(lead)).toMatchObject({
      status: "done",
      text: "lead: payer: moved",
      turns: 2,
      totalTurns: 4,
    })
  })
})

describe("issue 8: golden snapshots of every schema version", () => {
  const transfer = defineTool({
    name: "transfer",
    description: "move money",
    inputSchema: { type: "object", properties: { amount: { type: "number" } } },
    run: ({ amount }, ctx) =>
      ctx.answer?.ok
        ? `moved ${amount}`
        : pending({ id: "req-golden-1", kind: "approval", prompt: `Move ${amount}?` }),
  })
  const registry: Record<string, AgentDef> = {
    lead: { name: "lead", does: "leads", soul: "lead", team: ["payer", "scout"] },
    payer: { name: "payer", does: "pays", soul: "payer", tools: [transfer] },
    scout: { name: "scout", does: "looks", soul: "scout" },
  }

  async function restoreGolden(version: number) {
    const golden = JSON.parse(
      readFileSync(new URL(`./fixtures/snapshot/v${version}.json`, import.meta.url), "utf8"),
    ) as {
      snapshot: RuntimeSnapshot
      conversations: Record<string, Message[]>
    }
    expect(golden.snapshot.schemaVersion).toBe(version)
    const store = new MemoryStore()
    for (const [id, messages] of Object.entries(golden.conversations)) {
      const holder = golden.snapshot.handles.find((h) => h.id === id)
      await store.save(id, messages, { pending: holder?.pending ?? null })
    }
    return restoreRuntime(golden.snapshot, options(registry, { store }))
  }

  it.each([1, 2, 3])(
    "v%i restores with own turns and subtree totals, then resumes the parked tree",
    async (version) => {
      const rt = await restoreGolden(version)
      expect(
        rt.list().map(({ id, state, turns, totalTurns, tokens, inbox }) => ({
          id,
          state,
          turns,
          totalTurns,
          tokens,
          inbox,
        })),
      ).toEqual([
        { id: "root/lead.1", state: "suspended", turns: 2, totalTurns: 4, tokens: 60, inbox: 0 },
        { id: "root/lead.1/payer.1", state: "suspended", turns: 1, totalTurns: 1, tokens: 15, inbox: 0 },
        { id: "root/lead.1/scout.1", state: "closed", turns: 1, totalTurns: 1, tokens: 15, inbox: 0 },
        { id: "root/scout.1", state: "idle", turns: 0, totalTurns: 0, tokens: 0, inbox: 1 },
      ])
      const lead = rt.handle("root/lead.1")!
      expect(await rt.wait(lead)).toMatchObject({
        status: "pending",
        turns: 2,
        totalTurns: 4,
        totalTokens: 60,
      })

      server.addRule({
        match: bySoul("payer"),
        reply: (req) => ({ text: `payer: ${req.toolResults[0]?.content}` }),
      })
      server.addRule({
        match: bySoul("lead"),
        reply: (req) => ({ text: `lead: ${req.toolResults.at(-1)?.content}` }),
      })
      await rt.resume({ id: "req-golden-1", ok: true })
      expect(await rt.wait(lead)).toMatchObject({
        status: "done",
        text: "lead: payer: moved 40",
        turns: 3,
        totalTurns: 6,
        totalTokens: 90,
      })
      expect(server.requests).toHaveLength(2) // the payer and the lead, each once
      // Whatever version was read, the runtime writes the current one, keeping the
      // conversation ids the old one used (versions 1 and 2: the bare namespace, here none).
      expect(rt.snapshot()).toMatchObject({ schemaVersion: 3, namespace: "", idPrefix: "" })
      expect(rt.conversationId(lead)).toBe("root/lead.1")
    },
  )

  it(`the writer saves version ${SNAPSHOT_VERSION} exactly as its golden file holds it`, async () => {
    // Restoring the current version's file and saving again changes nothing: a change to
    // what snapshotOf writes fails here until it gets a new version (and a new file).
    const golden = JSON.parse(
      readFileSync(new URL(`./fixtures/snapshot/v${SNAPSHOT_VERSION}.json`, import.meta.url), "utf8"),
    )
    const rt = await restoreGolden(SNAPSHOT_VERSION)
    expect(rt.snapshot()).toEqual(golden.snapshot)
  })

  it("a version this code does not know is refused with a typed error", async () => {
    const golden = JSON.parse(readFileSync(new URL("./fixtures/snapshot/v2.json", import.meta.url), "utf8"))
    expect(() => restoreRuntime({ ...golden.snapshot, schemaVersion: 4 }, options(registry))).toThrow(
      expect.objectContaining({ name: "SchemaVersionError", code: "TNX_SCHEMA_VERSION" }),
    )
  })
})

describe("issue 8: timer ticks coalesce on channel timer (alias tick)", () => {
  it("repeated ticks from one sender become one line with a count; other items keep their place", async () => {
    const registry: Record<string, AgentDef> = { worker: { name: "worker", does: "works", soul: "worker" } }
    server.addRule({ match: bySoul("worker"), reply: { text: "ok" } })
    const rt = createRuntime(options(registry))
    const worker = rt.spawn(rt.root, "worker")
    rt.post(worker, { text: "beat", channel: "timer" })
    rt.post(worker, { text: "mail", from: "root" })
    rt.post(worker, { text: "beat", channel: "timer" })
    rt.post(worker, { text: "beat", channel: "tick" })
    rt.post(worker, { text: "beat", channel: "timer", from: "stranger" })
    rt.post(worker, { text: "beat", channel: "timer", from: "stranger" })
    rt.post(worker, { text: "other", channel: "timer" })
    rt.post(worker, { text: "beat", channel: "news" })
    rt.post(worker, { text: "beat", channel: "news" })
    rt.wake(worker)
    await rt.wait(worker)
    expect(server.requests[0]?.lastUserText).toBe(
      [
        "[from: host, channel: timer] beat (×3)",
        "[from: root] mail",
        "[from: stranger, channel: timer, untrusted] beat (×2)",
        "[from: host, channel: timer] other",
        "[from: host, channel: news] beat",
        "[from: host, channel: news] beat",
      ].join("\n"),
    )
  })
})

describe("issue 8: a malformed snapshot is refused with a typed error naming the field", () => {
  const registry: Record<string, AgentDef> = { worker: { name: "worker", does: "works" } }
  const golden = () =>
    JSON.parse(readFileSync(new URL("./fixtures/snapshot/v2.json", import.meta.url), "utf8"))
      .snapshot as RuntimeSnapshot

  it.each([
    ["a v2 spend without totalTurns", 2, (h: any) => delete h.spend.totalTurns, "spend.totalTurns"],
    ["a negative token count", 2, (h: any) => (h.spend.tokens = -1), "spend.tokens"],
    ["a v1 spend without turns", 1, (h: any) => delete h.spend.turns, "spend.turns"],
    ["an unknown state", 2, (h: any) => (h.state = "parked"), 'unknown state "parked"'],
    ["an inbox that is no array", 2, (h: any) => (h.inbox = "x"), "`inbox` and `transitions` arrays"],
    ["no spawnedAt", 1, (h: any) => delete h.spawnedAt, "a number `spawnedAt`"],
  ])("%s", (_name, version, spoil, field) => {
    const snapshot = golden()
    snapshot.schemaVersion = version as number
    ;(spoil as (h: unknown) => void)(snapshot.handles[1])
    expect(() => restoreRuntime(snapshot, options(registry))).toThrow(
      expect.objectContaining({ code: "TNX_CONFIG", message: expect.stringContaining(field as string) }),
    )
  })
})
