import { type StreamEvent, createClient, createToolkit, defineTool, pending } from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { askWithAnswer } from "../src/resume/ask-with-answer.js"
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
