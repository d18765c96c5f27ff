import { type AgentDef, createRuntime } from "@toolnexus/agents"
import {
  type Answer,
  AnswerConflictError,
  AnswerInvalidError,
  ConfigError,
  type Request,
  UnknownRequestError,
  createClient,
  createToolkit,
  defineTool,
  pending,
} from "@toolnexus/core"
import { type FakeLLMServer, type FakeRequestView, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { RuntimeHeldError } from "../src/errors.js"
import { askWithAnswer } from "../src/resume/ask-with-answer.js"
import { deliverAnswer, sweepExpiredClaims } from "../src/resume/deliver-answer.js"
import { loadRuntime, saveRuntime } from "../src/resume/runtime-persistence.js"
import { SqliteStore } from "../src/sqlite/index.js"

let server: FakeLLMServer
beforeAll(async () => {
  server = await createFakeLLMServer()
})
beforeEach(() => server.reset())
afterAll(() => server.close())

const answers: (Answer | undefined)[] = []
const pay = defineTool({
  name: "pay",
  description: "pays after approval",
  inputSchema: { type: "object", properties: { amount: { type: "number" } } },
  run: ({ amount }, ctx) => {
    answers.push(ctx.answer)
    if (!ctx.answer) return pending({ kind: "approval", prompt: `Pay ${amount}?` })
    return ctx.answer.ok ? `paid ${amount}` : "not paid"
  },
})
const registry: Record<string, AgentDef> = {
  lead: { name: "lead", does: "delegates", soul: "lead", team: ["payer"] },
  payer: { name: "payer", does: "pays", soul: "payer", tools: [pay] },
}
const fresh = (soul: string) => (r: FakeRequestView) => r.system === soul && r.toolResults.length === 0
const later = (soul: string) => ({
  match: (r: FakeRequestView) => r.system === soul,
  reply: (r: FakeRequestView) => ({ text: `${soul}: ${r.toolResults[0]?.content}` }),
})

function scriptTree(): void {
  server.addRule({
    match: fresh("lead"),
    reply: { toolCalls: [{ name: "task", arguments: { agent: "payer", prompt: "pay" } }] },
  })
  server.addRule(later("lead"))
  server.addRule({ match: fresh("payer"), reply: { toolCalls: [{ name: "pay", arguments: { amount: 7 } }] } })
  server.addRule(later("payer"))
}

async function setup() {
  const store = new SqliteStore({ path: ":memory:", opTimeoutMs: 5 })
  const llm = { baseUrl: `${server.url}/v1`, model: "m", apiKey: "k" }
  const client = createClient({ ...llm, style: "openai", store, retries: 0 })
  const toolkit = await createToolkit({ extraTools: [pay] })
  answers.length = 0
  return { store, llm, client, toolkit }
}

/** Parks lead → payer on one approval and saves the runtime under `key`. */
async function parkTree(
  store: SqliteStore,
  llm: { baseUrl: string; model: string; apiKey: string },
  key: string,
) {
  scriptTree()
  // The runtime key as its namespace: its conversations are `<key>/root/...`.
  const rt = createRuntime({ registry, llm, store, namespace: key })
  const lead = rt.spawn(rt.root, "lead")
  rt.wake(lead, "go")
  const parked = await rt.wait(lead)
  await saveRuntime(store, key, rt)
  return parked.pending as Request
}

describe("deliverAnswer", () => {
  it("routes a conversation's request to askWithAnswer, then refuses it with the first decision", async () => {
    const { store, client, toolkit } = await setup()
    server.addRule({
      match: (r) => r.toolResults.length === 0,
      reply: { toolCalls: [{ name: "pay", arguments: { amount: 3 } }] },
    })
    server.addRule({ match: () => true, reply: (r) => ({ text: `final: ${r.toolResults[0]?.content}` }) })
    const halted = await client.ask("pay 3", { id: "order-3", toolkit })
    const req = halted.pending as Request
    expect(req.data).toMatchObject({ tool: "pay", args: { amount: 3 } })
    const delivered = await deliverAnswer(
      store,
      { id: req.id, ok: false, reason: "declined" },
      { client, toolkit },
    )
    expect(delivered).toMatchObject({
      kind: "conversation",
      id: "order-3",
      result: { status: "done", text: "final: declined: Pay 3? (declined)" },
    })
    await expect(deliverAnswer(store, { id: req.id, ok: true }, { client, toolkit })).rejects.toMatchObject({
      name: "AnswerConflictError",
      decision: { ok: false, reason: "declined" },
    })
    await expect(deliverAnswer(store, { id: "pnd-nobody", ok: true }, { client })).rejects.toBeInstanceOf(
      UnknownRequestError,
    )
    await store.close()
  })

  it("routes a saved runtime's request to the runtime and resumes the whole tree once", async () => {
    const { store, llm, client, toolkit } = await setup()
    const req = await parkTree(store, llm, "rt-1")
    expect(req.data).toMatchObject({ tool: "pay", args: { amount: 7 }, path: ["root", "lead.1", "payer.1"] })
    expect(await store.findRequest(req.id)).toMatchObject({
      conversationId: "rt-1/root/lead.1/payer.1",
      runtimeKey: "rt-1",
      path: ["root", "lead.1", "payer.1"],
    })
    // A plain replay of a handle's conversation is refused and claims nothing.
    for (const id of ["rt-1/root/lead.1", "rt-1/root/lead.1/payer.1"]) {
      await expect(
        askWithAnswer(client, { id, answer: { id: req.id, ok: true }, toolkit }),
      ).rejects.toBeInstanceOf(RuntimeHeldError)
    }
    expect(await store.findRequest(req.id)).toMatchObject({ state: "open", attempts: 0 })
    await expect(deliverAnswer(store, { id: req.id, ok: true }, { client, toolkit })).rejects.toThrow(
      /needs `runtime`/,
    )
    const requests = server.requests.length
    const delivered = await deliverAnswer(store, { id: req.id, ok: true }, { runtime: { registry, llm } })
    expect(delivered).toEqual({
      kind: "runtime",
      key: "rt-1",
      result: expect.objectContaining({ status: "done", text: "lead: payer: paid 7" }),
    })
    expect(server.requests.length - requests).toBe(2)
    expect(answers.filter((a) => a?.ok)).toHaveLength(1)
    expect(await store.findRequest(req.id)).toBeUndefined()
    const again = deliverAnswer(store, { id: req.id, ok: true }, { runtime: { registry, llm } })
    await expect(again).rejects.toBeInstanceOf(AnswerConflictError)
    await expect(again).rejects.toMatchObject({ decision: { ok: true } })
    expect(
      (await loadRuntime(store, "rt-1", { registry, llm })).list().every((v) => v.state !== "suspended"),
    ).toBe(true)
    await store.close()
  })

  it("needs a client on the store it delivers to, and validates the answer", async () => {
    const { store, client, toolkit } = await setup()
    server.addRule({ match: () => true, reply: { toolCalls: [{ name: "pay", arguments: { amount: 1 } }] } })
    const req = (await client.ask("pay", { id: "c", toolkit })).pending as Request
    await expect(deliverAnswer(store, { id: req.id, ok: true }, {})).rejects.toThrow(/needs `client`/)
    const elsewhere = createClient({ baseUrl: `${server.url}/v1`, style: "openai", model: "m", apiKey: "k" })
    await expect(
      deliverAnswer(store, { id: req.id, ok: true }, { client: elsewhere }),
    ).rejects.toBeInstanceOf(ConfigError)
    await expect(deliverAnswer(store, { id: "", ok: true } as Answer, { client })).rejects.toBeInstanceOf(
      AnswerInvalidError,
    )
    await expect(deliverAnswer(store, { id: req.id } as Answer, { client })).rejects.toBeInstanceOf(
      AnswerInvalidError,
    )
    await expect(deliverAnswer(store, null as unknown as Answer, { client })).rejects.toBeInstanceOf(
      AnswerInvalidError,
    )
    expect(await store.findRequest(req.id)).toMatchObject({ state: "open", attempts: 0 })
    await store.close()
  })

  it("a sweep resumes an expired runtime claim as the runtime, with the stored decision", async () => {
    const { store, llm, client, toolkit } = await setup()
    const req = await parkTree(store, llm, "rt-sweep")
    // A worker claimed (through the top holder, as resumeRuntime does) and died.
    await store.claimAnswer(
      "rt-sweep/root/lead.1",
      { id: req.id, ok: false, reason: "declined" },
      { leaseMs: 10, runtimeKey: "rt-sweep" },
    )
    await new Promise((r) => setTimeout(r, 20))
    const swept = await sweepExpiredClaims(store, { client, toolkit, runtime: { registry, llm } })
    expect(swept.failed).toEqual([])
    expect(swept.completed).toEqual([
      {
        kind: "runtime",
        key: "rt-sweep",
        result: expect.objectContaining({ status: "done", text: "lead: payer: declined: Pay 7? (declined)" }),
      },
    ])
    expect(answers.map((a) => a?.ok ?? null)).toEqual([null])
    expect(await store.getDecision(req.id)).toEqual({ ok: false, reason: "declined" })
    expect(await sweepExpiredClaims(store, { client, runtime: { registry, llm } })).toEqual({
      completed: [],
      failed: [],
    })
    await store.close()
  })
})

describe("deliverAnswer to a saved runtime after expiry", () => {
  it("refuses ok:true after expiresAt before claiming, and accepts a decline", async () => {
    const { store, llm } = await setup()
    const late = defineTool({
      name: "pay",
      description: "expires at once",
      inputSchema: { type: "object" },
      run: (_args, ctx) =>
        ctx.answer
          ? ctx.answer.ok
            ? "paid"
            : "not paid"
          : pending({ kind: "approval", prompt: "Pay?", expiresAt: "2020-01-01T00:00:00Z" }),
    })
    const expiring: Record<string, AgentDef> = {
      lead: registry.lead as AgentDef,
      payer: { name: "payer", does: "pays", soul: "payer", tools: [late] },
    }
    scriptTree()
    const rt = createRuntime({ registry: expiring, llm, store })
    const lead = rt.spawn(rt.root, "lead")
    rt.wake(lead, "go")
    const req = (await rt.wait(lead)).pending as Request
    await saveRuntime(store, "rt-late", rt)
    const runtime = { registry: expiring, llm }
    await expect(deliverAnswer(store, { id: req.id, ok: true }, { runtime })).rejects.toMatchObject({
      name: "AnswerExpiredError",
    })
    expect(await store.findRequest(req.id)).toMatchObject({ state: "open", attempts: 0 })
    const declined = await deliverAnswer(store, { id: req.id, ok: false, reason: "expired" }, { runtime })
    expect(declined).toMatchObject({ kind: "runtime", result: { status: "done" } })
    await store.close()
  })
})

describe("deliverAnswer to a tree parked on two requests", () => {
  it("lists both, and each answer resumes its own subtree; the second finishes the tree", async () => {
    const { store, llm } = await setup()
    server.addRule({
      match: fresh("lead"),
      reply: {
        toolCalls: [
          { name: "task", arguments: { agent: "payer", prompt: "pay a" } },
          { name: "task", arguments: { agent: "payer", prompt: "pay b" } },
        ],
      },
    })
    server.addRule({
      match: (r) => r.system === "lead",
      reply: (r) => ({ text: `lead: ${r.toolResults.map((t) => t.content).join(" + ")}` }),
    })
    server.addRule({
      match: fresh("payer"),
      reply: { toolCalls: [{ name: "pay", arguments: { amount: 1 } }] },
    })
    server.addRule(later("payer"))
    const rt = createRuntime({ registry, llm, store, namespace: "rt-two" })
    const lead = rt.spawn(rt.root, "lead")
    rt.wake(lead, "go")
    const first = (await rt.wait(lead)).pending as Request
    await saveRuntime(store, "rt-two", rt)
    const listed = (await store.listPending({ kind: "approval" })).filter((e) => e.runtimeKey === "rt-two")
    expect(listed.map((e) => e.conversationId).sort()).toEqual([
      "rt-two/root/lead.1/payer.1",
      "rt-two/root/lead.1/payer.2",
    ])
    const second = listed.find((e) => e.request.id !== first.id)?.request as Request
    const runtime = { registry, llm }

    const b = await deliverAnswer(store, { id: second.id, ok: true }, { runtime })
    expect(b).toMatchObject({ kind: "runtime", result: { status: "done", text: "payer: paid 1" } })
    expect(
      (await store.listPending({ kind: "approval" })).filter((e) => e.runtimeKey === "rt-two"),
    ).toHaveLength(1)
    const a = await deliverAnswer(store, { id: first.id, ok: true }, { runtime })
    expect(a).toMatchObject({
      kind: "runtime",
      result: { status: "done", text: "lead: payer: paid 1 + payer: paid 1" },
    })
    expect(answers.filter((x) => x?.ok)).toHaveLength(2)
    const done = await loadRuntime(store, "rt-two", runtime)
    expect(done.inspect(lead).children).toEqual(["root/lead.1/payer.1", "root/lead.1/payer.2"])
    await store.close()
  })
})
