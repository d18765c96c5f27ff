import { describe, expect, it } from "vitest"
import { buildClient } from "../src/client/client.js"
import { createClient } from "../src/client/create-client.js"
import type { StreamEvent } from "../src/client/run-result.js"
import { openaiDialect } from "../src/providers/openai.js"
import { MemoryStore } from "../src/store/conversation-store.js"
import { relayTool } from "../src/tools/relay-tool.js"
import { createToolkit } from "../src/tools/toolkit.js"
import { STYLES, approve, clientFor, lookup, useFakeServer } from "./helpers.js"

const ctx = useFakeServer()

const types = (events: StreamEvent[]) => events.map((e) => e.type)
const texts = (events: StreamEvent[]) => events.flatMap((e) => (e.type === "text" ? [e.delta] : [])).join("")

describe.each(STYLES)("onEvent (%s)", (style) => {
  it("run streams its events with streaming requests and ends with done carrying the result", async () => {
    const { server } = ctx
    server.enqueue(
      { toolCalls: [{ id: "l1", name: "lookup", arguments: { q: "x" } }] },
      { text: "the answer is: found x, in several pieces" },
    )
    const toolkit = await createToolkit({ extraTools: [lookup] })
    const events: StreamEvent[] = []
    const result = await clientFor(style, server).run("go", { toolkit, onEvent: (ev) => events.push(ev) })
    expect(server.requests.map((r) => r.stream)).toEqual([true, true])
    const firstText = types(events).indexOf("text")
    expect(types(events).slice(0, firstText)).toEqual(["usage", "turn", "tool_call", "tool_result"])
    expect(
      types(events)
        .slice(firstText)
        .filter((t) => t !== "text"),
    ).toEqual(["usage", "turn", "done"])
    expect(texts(events)).toBe(result.text)
    expect(events.at(-1)).toEqual({ type: "done", result })
  })

  it("without onEvent the requests do not stream", async () => {
    const { server } = ctx
    server.enqueue({ text: "plain" })
    await clientFor(style, server).run("hi")
    expect(server.requests[0]?.stream).toBe(false)
  })

  it("a listener that throws does not change the run", async () => {
    const { server } = ctx
    server.enqueue({ text: "fine" })
    const result = await clientFor(style, server).run("hi", {
      onEvent: () => {
        throw new Error("observer bug")
      },
    })
    expect(result).toMatchObject({ status: "done", text: "fine" })
  })

  it("two suspensions and a plain call in one turn: one pending event, results only for what ran", async () => {
    const { server } = ctx
    server.enqueue({
      toolCalls: [
        { id: "a1", name: "approve", arguments: { what: "one" } },
        { id: "l1", name: "lookup", arguments: { q: "y" } },
        { id: "a2", name: "approve", arguments: { what: "two" } },
      ],
    })
    const toolkit = await createToolkit({ extraTools: [approve, lookup] })
    const events: StreamEvent[] = []
    const result = await clientFor(style, server).ask("go", { toolkit, onEvent: (ev) => events.push(ev) })
    expect(result.status).toBe("pending")
    expect(types(events)).toEqual([
      "usage",
      "turn",
      "tool_call",
      "tool_call",
      "tool_call",
      "tool_result",
      "pending",
      "done",
    ])
    expect(events.find((e) => e.type === "tool_result")).toMatchObject({ id: "l1", isError: false })
    expect(events.find((e) => e.type === "pending")).toEqual({ type: "pending", request: result.pending })
  })

  it("a relay halt streams as pending only", async () => {
    const { server } = ctx
    server.enqueue({ toolCalls: [{ id: "r1", name: "browser_open", arguments: { url: "https://x" } }] })
    const toolkit = await createToolkit({ extraTools: [relayTool("browser_open", "Opens a page")] })
    const events: StreamEvent[] = []
    await clientFor(style, server).run("open", { toolkit, onEvent: (ev) => events.push(ev) })
    expect(types(events)).toEqual(["usage", "turn", "tool_call", "pending", "done"])
    expect(events.find((e) => e.type === "pending")).toMatchObject({ request: { kind: "tool_call" } })
  })

  it("continueRun streams the resumed turn: the retried call's result, then text deltas as they arrive", async () => {
    const { server } = ctx
    server.enqueue({ toolCalls: [{ id: "a1", name: "approve", arguments: { what: "the deploy" } }] })
    const toolkit = await createToolkit({ extraTools: [approve] })
    const client = clientFor(style, server)
    const halted = await client.run("deploy", { toolkit })
    const request = halted.pending!
    const long = "Deployed. Everything went fine and the service is up again."
    server.enqueue({ text: long })
    const events: StreamEvent[] = []
    const result = await client.continueRun({
      toolkit,
      messages: halted.messages,
      pending: request,
      answer: { id: request.id, ok: true },
      onEvent: (ev) => events.push(ev),
    })
    expect(server.requests.at(-1)?.stream).toBe(true)
    const deltas = events.filter((e) => e.type === "text")
    expect(deltas.length).toBeGreaterThan(1)
    expect(texts(events)).toBe(long)
    expect(types(events).filter((t) => t !== "text")).toEqual(["tool_result", "usage", "turn", "done"])
    expect(events[0]).toMatchObject({
      type: "tool_result",
      id: "a1",
      output: "approved the deploy",
      isError: false,
    })
    expect(result.status).toBe("done")
  })

  it("ask with id emits done after the conversation is saved", async () => {
    const { server } = ctx
    const store = new MemoryStore()
    const client = clientFor(style, server, { store })
    server.enqueue({ text: "saved" })
    let savedAtDone: unknown
    await client.ask("hi", {
      id: "c-1",
      onEvent: (ev) => {
        if (ev.type === "done") savedAtDone = store.get("c-1")
      },
    })
    expect(await savedAtDone).toHaveLength(2)
  })
})

describe("turn and refusal events from the model turn", () => {
  it("carry the wire format's finish reason and refusal text", async () => {
    const client = buildClient(
      {
        model: "m",
        dialect: openaiDialect,
        endpoint: { provider: "test", model: "m" },
        callModel: async (call) => {
          call.onRefusal?.("I can't ")
          call.onRefusal?.("help with that.")
          return {
            messages: [{ role: "assistant", content: "" }],
            text: "",
            toolCalls: [],
            usage: { promptTokens: 1, completionTokens: 1 },
            finishReason: "refusal",
            refusal: "I can't help with that.",
          }
        },
      },
      { model: "m" },
    )
    const events: StreamEvent[] = []
    await client.run("something bad", { onEvent: (ev) => events.push(ev) })
    expect(events.slice(0, 4)).toEqual([
      { type: "refusal", delta: "I can't " },
      { type: "refusal", delta: "help with that." },
      { type: "usage", usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 } },
      { type: "turn", turn: 1, finishReason: "refusal" },
    ])
  })
})

describe.each(STYLES)("ask with onText and onEvent (%s)", (style) => {
  it("feeds the text deltas to both", async () => {
    const { server } = ctx
    server.enqueue({ text: "both listeners hear this text" })
    const fromText: string[] = []
    const events: StreamEvent[] = []
    await clientFor(style, server).ask("hi", {
      onText: (d) => fromText.push(d),
      onEvent: (ev) => events.push(ev),
    })
    expect(fromText.join("")).toBe("both listeners hear this text")
    expect(texts(events)).toBe("both listeners hear this text")
  })
})

describe("a resumed turn's text arrives while the model is still writing", () => {
  it("the first delta is seen before the stream's next frame is even sent", async () => {
    const frames = (text: string) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: text } }] })}\n\n`
    const end = `data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }], usage: { prompt_tokens: 1, completion_tokens: 2 } })}\n\ndata: [DONE]\n\n`
    let firstSeen!: () => void
    const seen = new Promise<void>((resolve) => {
      firstSeen = resolve
    })
    const encoder = new TextEncoder()
    let call = 0
    const fetchImpl = async (): Promise<Response> => {
      call++
      if (call === 1) {
        const halt = {
          choices: [
            {
              index: 0,
              message: {
                role: "assistant",
                content: null,
                tool_calls: [
                  { id: "a1", type: "function", function: { name: "approve", arguments: '{"what":"it"}' } },
                ],
              },
              finish_reason: "tool_calls",
            },
          ],
        }
        return new Response(JSON.stringify(halt), { headers: { "content-type": "application/json" } })
      }
      const body = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(encoder.encode(frames("Approved, ")))
          await seen // the rest is only written once the first delta reached the listener
          controller.enqueue(encoder.encode(frames("and done.")))
          controller.enqueue(encoder.encode(end))
          controller.close()
        },
      })
      return new Response(body, { headers: { "content-type": "text/event-stream" } })
    }
    const client = createClient({
      baseUrl: "http://127.0.0.1:9/v1",
      style: "openai",
      model: "m",
      apiKey: "k",
      fetch: fetchImpl as typeof fetch,
    })
    const toolkit = await createToolkit({ extraTools: [approve] })
    const halted = await client.run("go", { toolkit })
    const request = halted.pending!
    const deltas: string[] = []
    const result = await client.continueRun({
      toolkit,
      messages: halted.messages,
      pending: request,
      answer: { id: request.id, ok: true },
      onEvent: (ev) => {
        if (ev.type !== "text") return
        deltas.push(ev.delta)
        firstSeen()
      },
    })
    expect(deltas).toEqual(["Approved, ", "and done."])
    expect(result.text).toBe("Approved, and done.")
  }, 5_000)
})
