import { type Answer, MemoryStore, defineTool, pending } from "@toolnexus/core"
import { type FakeLLMServer, type FakeRequestView, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest"
import { createRuntime, restoreRuntime } from "../src/runtime.js"
import type { AgentDef, RuntimeOptions } from "../src/types.js"

// Issue 19: the runtime reports its parked requests from its own index, `resume` returns
// the top result, and crash reconciliation of a restored tree is the runtime's own.

let server: FakeLLMServer
beforeAll(async () => {
  server = await createFakeLLMServer()
})
beforeEach(() => {
  server.reset()
  answers.length = 0
  server.addRule({
    match: fresh("lead"),
    reply: { toolCalls: [{ name: "task", arguments: { agent: "payer", prompt: "pay" } }] },
  })
  server.addRule({ match: fresh("payer"), reply: { toolCalls: [{ name: "transfer", arguments: {} }] } })
  server.addRule({
    match: (r) => r.system === "payer",
    reply: (r) => ({ text: `payer: ${r.toolResults[0]?.content}` }),
  })
  server.addRule({
    match: (r) => r.system === "lead",
    reply: (r) => ({ text: `lead: ${r.toolResults[0]?.content}` }),
  })
})
afterAll(() => server.close())

const answers: (Answer | undefined)[] = []
const transfer = defineTool({
  name: "transfer",
  description: "move money",
  inputSchema: { type: "object" },
  run: (_args, ctx) => {
    answers.push(ctx.answer)
    return ctx.answer?.ok ? "moved" : pending({ kind: "approval", prompt: "Move?" })
  },
})
const registry: Record<string, AgentDef> = {
  lead: { name: "lead", does: "delegates", soul: "lead", team: ["payer"] },
  payer: { name: "payer", does: "pays", soul: "payer", tools: [transfer] },
}
const fresh = (soul: string) => (r: FakeRequestView) => r.system === soul && r.toolResults.length === 0
const options = (extra: Partial<RuntimeOptions> = {}): RuntimeOptions => ({
  registry,
  llm: { baseUrl: `${server.url}/v1`, model: "m" },
  ...extra,
})

async function parkedTree(extra: Partial<RuntimeOptions> = {}) {
  const rt = createRuntime(options(extra))
  const lead = rt.spawn(rt.root, "lead")
  rt.wake(lead, "go")
  const parked = await rt.wait(lead)
  return { rt, lead, id: parked.pending?.id as string }
}

it("parked() lists one entry per open request: deepest and topmost holders, path, store ids", async () => {
  const { rt, id } = await parkedTree({ namespace: "t-1/" })
  expect(rt.parked()).toEqual([
    {
      request: expect.objectContaining({
        id,
        kind: "approval",
        data: expect.objectContaining({ tool: "transfer" }),
      }),
      handle: { id: "root/lead.1/payer.1" },
      path: ["root", "lead.1", "payer.1"],
      conversationId: "t-1/root/lead.1/payer.1",
      top: { id: "root/lead.1" },
      topConversationId: "t-1/root/lead.1",
    },
  ])
  const top = await rt.resume({ id, ok: true })
  expect(top).toMatchObject({ status: "done", text: "lead: payer: moved" })
  expect(rt.parked()).toEqual([])
})

it("resume returns the top result even when the cascade parks again", async () => {
  server.reset()
  const results = (r: FakeRequestView) =>
    r.body.messages.filter((m: { role: string }) => m.role === "tool").length
  server.addRule({
    match: fresh("lead"),
    reply: { toolCalls: [{ name: "task", arguments: { agent: "payer", prompt: "pay" } }] },
  })
  server.addRule({
    match: (r) => r.system === "payer" && results(r) < 2,
    reply: { toolCalls: [{ name: "transfer", arguments: {} }] },
  })
  server.addRule({ match: (r) => r.system === "payer", reply: { text: "paid twice" } })
  server.addRule({
    match: (r) => r.system === "lead",
    reply: (r) => ({ text: `lead: ${r.toolResults[0]?.content}` }),
  })
  const { rt, id } = await parkedTree()
  const again = await rt.resume({ id, ok: true })
  expect(again).toMatchObject({
    status: "pending",
    pending: { prompt: "Move?", data: { path: ["root", "lead.1", "payer.1"] } },
  })
  expect(again.pending?.id).not.toBe(id)
  expect(rt.parked().map((p) => p.request.id)).toEqual([again.pending?.id])
  expect(await rt.resume({ id: again.pending?.id as string, ok: true })).toMatchObject({
    status: "done",
    text: "lead: paid twice",
  })
})

it("reconcile(): a restored tree whose answer was applied before the crash is taken from the store", async () => {
  const store = new MemoryStore()
  const { rt, id } = await parkedTree({ store })
  const before = JSON.parse(JSON.stringify(rt.snapshot()))
  // The first process applies the answer (every conversation saved) and dies before saving the tree.
  await rt.resume({ id, ok: true })
  const restored = restoreRuntime(before, options({ store }))
  expect(restored.parked().map((p) => p.request.id)).toEqual([id])
  expect(await restored.reconcile()).toEqual([id])
  expect(restored.parked()).toEqual([])
  expect(await restored.wait({ id: "root/lead.1" })).toMatchObject({
    status: "done",
    text: "lead: payer: moved",
  })
  expect(restored.trace()).toContain(
    "root/lead.1/payer.1: resume → RECOVERED from the store (the answer was applied before)",
  )
  // Nothing ran again: the tool saw the answer once, no LLM request after the first process.
  expect(answers.filter((a) => a?.ok)).toHaveLength(1)
  expect(server.requests).toHaveLength(4)
  // A store that does not know the tree's conversations is no evidence: nothing is recovered.
  const unknown = restoreRuntime(before, options({ store: new MemoryStore() }))
  expect(await unknown.reconcile()).toEqual([])
  expect(unknown.parked().map((p) => p.request.id)).toEqual([id])
})

it("reconcile(): a tree that matches its store recovers nothing", async () => {
  const store = new MemoryStore()
  const { rt, id } = await parkedTree({ store })
  const restored = restoreRuntime(JSON.parse(JSON.stringify(rt.snapshot())), options({ store }))
  expect(await restored.reconcile()).toEqual([])
  expect(restored.stateOf({ id: "root/lead.1" })).toBe("suspended")
  expect(await restored.resume({ id, ok: true })).toMatchObject({
    status: "done",
    text: "lead: payer: moved",
  })
})

it("namespaces: unique by default, joined with a separator, kept across a snapshot", async () => {
  const store = new MemoryStore()
  const a = await parkedTree({ store })
  const b = await parkedTree({ store })
  // Two trees in one store without a namespace: each parked on its own request, nothing collides.
  expect(a.rt.namespace).toMatch(/^rt-[0-9a-f-]{36}$/)
  expect(b.rt.namespace).not.toBe(a.rt.namespace)
  expect(a.rt.conversationId({ id: "root/lead.1" })).toBe(`${a.rt.namespace}/root/lead.1`)
  expect((await store.getPending(`${b.rt.namespace}/root/lead.1`))?.id).toBe(b.id)
  expect(await a.rt.resume({ id: a.id, ok: true })).toMatchObject({ status: "done" })
  expect(await b.rt.resume({ id: b.id, ok: true })).toMatchObject({ status: "done" })

  const named = await parkedTree({ store, namespace: "ticket-42" })
  expect(named.rt.parked()[0]?.conversationId).toBe("ticket-42/root/lead.1/payer.1")
  const snapshot = JSON.parse(JSON.stringify(named.rt.snapshot()))
  expect(snapshot).toMatchObject({ schemaVersion: 3, namespace: "ticket-42", idPrefix: "ticket-42/" })
  const restored = restoreRuntime(snapshot, options({ store }))
  expect(restored.namespace).toBe("ticket-42")
  expect(await restored.resume({ id: named.id, ok: true })).toMatchObject({ status: "done" })
  // A namespace that already ends with a separator gets no second one; an empty one is refused.
  expect(createRuntime(options({ namespace: "order-1:" })).conversationId({ id: "root" })).toBe(
    "order-1:root",
  )
  expect(() => createRuntime(options({ namespace: "" }))).toThrow(/namespace must be a non-empty string/)
})
