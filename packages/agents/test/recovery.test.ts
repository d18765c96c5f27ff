import { type Answer, MemoryStore, defineTool, pending } from "@toolnexus/core"
import { type FakeLLMServer, type FakeRequestView, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { createRuntime, restoreRuntime } from "../src/runtime.js"
import type { AgentDef, RuntimeOptions } from "../src/types.js"

let server: FakeLLMServer
beforeAll(async () => {
  server = await createFakeLLMServer()
})
beforeEach(() => server.reset())
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
const options = (extra: Partial<RuntimeOptions> = {}): RuntimeOptions => ({
  registry,
  llm: { baseUrl: `${server.url}/v1`, model: "m", apiKey: "k" },
  ...extra,
})
const fresh = (soul: string) => (r: FakeRequestView) => r.system === soul && r.toolResults.length === 0
const script = () => {
  server.addRule({
    match: fresh("lead"),
    reply: { toolCalls: [{ name: "task", arguments: { agent: "payer", prompt: "pay" } }] },
  })
  server.addRule({ match: fresh("payer"), reply: { toolCalls: [{ name: "transfer", arguments: {} }] } })
  server.addRule({
    match: (r) => r.system === "payer",
    reply: (r) => ({ text: `payer: ${r.toolResults[0]?.content}` }),
  })
}

describe("sharing a store and recovering a cascade", () => {
  it("runtimes with their own namespace share one store without touching each other's conversations", async () => {
    script()
    server.addRule({
      match: (r) => r.system === "lead",
      reply: (r) => ({ text: `lead: ${r.toolResults[0]?.content}` }),
    })
    const store = new MemoryStore()
    const a = createRuntime(options({ store, namespace: "a:" }))
    const b = createRuntime(options({ store, namespace: "b:" }))
    const [ha, hb] = [a.spawn(a.root, "lead"), b.spawn(b.root, "lead")]
    expect(ha.id).toBe(hb.id) // the same handle id in both runtimes
    a.wake(ha, "go")
    b.wake(hb, "go")
    const [pa, pb] = await Promise.all([a.wait(ha), b.wait(hb)])
    expect(await store.getPending("a:root/lead.1")).toMatchObject({ id: pa.pending?.id })
    expect(await store.getPending("b:root/lead.1")).toMatchObject({ id: pb.pending?.id })
    expect(await store.get("root/lead.1")).toBeUndefined()
    await a.resume({ id: pa.pending?.id as string, ok: true })
    expect((await a.wait(ha)).text).toBe("lead: payer: moved")
    expect(b.stateOf(hb)).toBe("suspended")
    expect(await store.getPending("b:root/lead.1")).toMatchObject({ id: pb.pending?.id })
    const restored = restoreRuntime(JSON.parse(JSON.stringify(b.snapshot())), options({ store }))
    await restored.resume({ id: pb.pending?.id as string, ok: true })
    expect((await restored.wait(hb)).text).toBe("lead: payer: moved")
  })

  it("a cascade that died after the child applied the answer resumes from the store without redoing the child", async () => {
    script()
    // The first attempt's lead turn fails, as if the process died there; the next one works.
    server.addRule({ match: (r) => r.system === "lead", reply: { status: 400, text: "boom" }, times: 1 })
    server.addRule({
      match: (r) => r.system === "lead",
      reply: (r) => ({ text: `lead: ${r.toolResults[0]?.content}` }),
    })
    answers.length = 0
    const store = new MemoryStore()
    const first = createRuntime(options({ store }))
    const lead = first.spawn(first.root, "lead")
    first.wake(lead, "go")
    const parked = await first.wait(lead)
    const saved = JSON.parse(JSON.stringify(first.snapshot()))
    const answer = { id: parked.pending?.id as string, ok: true }

    await first.resume(answer)
    expect((await first.wait(lead)).status).toBe("error")
    const child = first.handle("root/lead.1/payer.1")
    expect(child && (await store.get(first.conversationId(child)))).toBeDefined()
    expect(child && (await store.getPending(first.conversationId(child)))).toBeUndefined() // the child did apply it
    const requestsBefore = server.requests.length

    // A new process restores the snapshot saved before that attempt and gets the answer again.
    const second = restoreRuntime(saved, options({ store }))
    await second.resume(answer)
    expect(await second.wait(lead)).toMatchObject({ status: "done", text: "lead: payer: moved" })
    expect(second.trace()).toContain(
      "root/lead.1/payer.1: resume → RECOVERED from the store (the answer was applied before)",
    )
    expect(answers.filter((a) => a?.ok)).toHaveLength(1) // the transfer ran once with the answer
    expect(server.requests.length - requestsBefore).toBe(1) // only the lead's turn
  })
})
