import { type StreamEvent, createClient, createToolkit, defineTool, pending } from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createRuntime } from "@toolnexus/agents"
import { askWithAnswer } from "../src/resume/ask-with-answer.js"
import { deliverAnswer } from "../src/resume/deliver-answer.js"
import { saveRuntime } from "../src/resume/runtime-persistence.js"
import { runWithAnswer } from "../src/resume/run-with-answer.js"
import { SqliteStore } from "../src/sqlite/index.js"

let server: FakeLLMServer
beforeAll(async () => {
  server = await createFakeLLMServer()
})
afterAll(() => server.close())

const pay = defineTool({
  name: "pay",
  description: "pay",
  inputSchema: { type: "object", properties: { amount: { type: "number" } } },
  run: ({ amount }, ctx) =>
    ctx.answer?.ok ? `paid ${amount}` : pending({ kind: "approval", prompt: `Pay ${amount}?` }),
})

const halt = { toolCalls: [{ id: "p1", name: "pay", arguments: { amount: 5 } }] }
const finish = { text: "The payment of five went through without trouble." }

describe.each(["openai", "anthropic"] as const)("resumes stream their events (%s)", (style) => {
  const clientOf = (store?: SqliteStore) =>
    createClient({
      baseUrl: style === "openai" ? `${server.url}/v1` : server.url,
      style,
      model: "m",
      apiKey: "k",
      store,
    })

  it("askWithAnswer streams the repaired call's result and the resumed turn's text; never an error result", async () => {
    server.reset()
    const store = new SqliteStore({ path: ":memory:" })
    const client = clientOf(store)
    const toolkit = await createToolkit({ extraTools: [pay] })
    server.enqueue(halt, finish)
    const asked: StreamEvent[] = []
    const halted = await client.ask("pay", { id: "c1", toolkit, onEvent: (ev) => asked.push(ev) })
    expect(asked.map((e) => e.type)).toEqual(["usage", "turn", "tool_call", "pending", "done"])
    const events: StreamEvent[] = []
    const result = await askWithAnswer(client, {
      id: "c1",
      toolkit,
      answer: { id: halted.pending?.id as string, ok: true },
      onEvent: (ev) => events.push(ev),
    })
    expect(result.status).toBe("done")
    expect(events[0]).toEqual({
      type: "tool_result",
      id: "p1",
      name: "pay",
      output: "paid 5",
      isError: false,
    })
    const deltas = events.filter((e) => e.type === "text")
    expect(deltas.length).toBeGreaterThan(1)
    expect(deltas.map((e) => (e as { delta: string }).delta).join("")).toBe(finish.text)
    expect(events.at(-1)).toEqual({ type: "done", result })
    expect(server.requests.at(-1)?.stream).toBe(true)
    await store.close()
  })

  it("runWithAnswer passes onEvent through", async () => {
    server.reset()
    const client = clientOf()
    const toolkit = await createToolkit({ extraTools: [pay] })
    server.enqueue(halt, finish)
    const halted = await client.run("pay", { toolkit })
    const types: string[] = []
    await runWithAnswer(client, {
      toolkit,
      history: halted.messages,
      pending: halted.pending!,
      answer: { id: halted.pending?.id as string, ok: false, reason: "declined" },
      onEvent: (ev) => types.push(ev.type),
    })
    expect(types[0]).toBe("tool_result")
    expect(types.at(-1)).toBe("done")
  })
})

describe("deliverAnswer streams the delivery's events", () => {
  const baseUrl = () => `${server.url}/v1`

  it("to a conversation: the resumed run's events", async () => {
    server.reset()
    const store = new SqliteStore({ path: ":memory:" })
    const client = createClient({ baseUrl: baseUrl(), style: "openai", model: "m", apiKey: "k", store })
    const toolkit = await createToolkit({ extraTools: [pay] })
    server.enqueue(halt, finish)
    const halted = await client.ask("pay", { id: "d1", toolkit })
    const events: StreamEvent[] = []
    const delivered = await deliverAnswer(
      store,
      { id: halted.pending?.id as string, ok: true },
      { client, toolkit, onEvent: (ev) => events.push(ev) },
    )
    expect(delivered.kind).toBe("conversation")
    expect(events[0]).toMatchObject({ type: "tool_result", output: "paid 5" })
    expect(events.at(-1)?.type).toBe("done")
    await store.close()
  })

  it("to a saved runtime: every resumed handle's run events, with their handle", async () => {
    server.reset()
    const store = new SqliteStore({ path: ":memory:" })
    const registry = {
      lead: { name: "lead", does: "delegates", soul: "lead", team: ["payer"] },
      payer: { name: "payer", does: "pays", soul: "payer", tools: [pay] },
    }
    server.addRule({
      match: (r) => r.system === "lead" && r.toolResults.length === 0,
      reply: { toolCalls: [{ id: "t1", name: "task", arguments: { agent: "payer", prompt: "pay" } }] },
    })
    server.addRule({
      match: (r) => r.system === "lead",
      reply: (r) => ({ text: `lead: ${r.toolResults[0]?.content}` }),
    })
    server.addRule({ match: (r) => r.system === "payer" && r.toolResults.length === 0, reply: halt })
    server.addRule({ match: (r) => r.system === "payer", reply: finish })
    const llm = { baseUrl: baseUrl(), style: "openai" as const, model: "m", apiKey: "k" }
    const rt = createRuntime({ registry, llm, store })
    const lead = rt.spawn(rt.root, "lead")
    rt.wake(lead, "go")
    const parked = await rt.wait(lead)
    await saveRuntime(store, "rt-1", rt)
    const events: (StreamEvent & { handle?: string })[] = []
    const delivered = await deliverAnswer(
      store,
      { id: parked.pending?.id as string, ok: true },
      { runtime: { registry, llm }, onEvent: (ev) => events.push(ev) },
    )
    expect(delivered).toMatchObject({
      kind: "runtime",
      result: { status: "done", text: `lead: ${finish.text}` },
    })
    expect(events.some((e) => (e.type as string) === "state")).toBe(false)
    const handles = new Set(events.map((e) => e.handle))
    expect(handles).toEqual(new Set(["root/lead.1", "root/lead.1/payer.1"]))
    expect(events.find((e) => e.handle === "root/lead.1/payer.1")).toMatchObject({
      type: "tool_result",
      output: "paid 5",
    })
    await store.close()
  })
})
