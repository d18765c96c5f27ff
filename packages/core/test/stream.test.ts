import { type Server, createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { describe, expect, it } from "vitest"
import type { RunResult, StreamEvent } from "../src/client/run-result.js"
import { AbortError, ConversationPendingError, LLMResponseError, LLMStreamError } from "../src/errors.js"
import { MemoryStore, type SaveMeta } from "../src/store/conversation-store.js"
import { defineTool } from "../src/tools/define-tool.js"
import { createToolkit } from "../src/tools/toolkit.js"
import type { Message } from "../src/types.js"
import { STYLES, type Style, approve, clientFor, useFakeServer } from "./helpers.js"

// These tests pin the chat and Anthropic transcript shapes; responses.test.ts pins the Responses ones.
const CHAT_STYLES = STYLES.filter((s) => s !== "openai-responses")

const ctx = useFakeServer()

const echo = defineTool({
  name: "echo",
  description: "Echo text",
  inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  run: ({ text }) => `echo: ${text}`,
})

const add = defineTool({
  name: "add",
  description: "Add two numbers",
  inputSchema: {
    type: "object",
    properties: { a: { type: "number" }, b: { type: "number" } },
    required: ["a", "b"],
  },
  run: ({ a, b }) => String(Number(a) + Number(b)),
})

/** Collects every event of a stream; rethrows its error with the events seen so far. */
async function collect(stream: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const events: StreamEvent[] = []
  for await (const ev of stream) events.push(ev)
  return events
}

async function collectFailure(
  stream: AsyncIterable<StreamEvent>,
): Promise<{ events: StreamEvent[]; error: unknown }> {
  const events: StreamEvent[] = []
  try {
    for await (const ev of stream) events.push(ev)
  } catch (error) {
    return { events, error }
  }
  throw new Error(`expected the stream to throw; it ended after ${events.length} events`)
}

function doneOf(events: StreamEvent[]): RunResult {
  const last = events.at(-1)
  expect(last?.type).toBe("done")
  return (last as Extract<StreamEvent, { type: "done" }>).result
}

const textOf = (events: StreamEvent[]) =>
  events
    .filter((e): e is Extract<StreamEvent, { type: "text" }> => e.type === "text")
    .map((e) => e.delta)
    .join("")

describe.each(CHAT_STYLES)("client.stream (%s)", (style) => {
  it("yields text deltas that add up to the final text, then usage and done", async () => {
    const { server } = ctx
    const text = "Hello, wörld 👋 — streamed in pieces"
    server.enqueue({ text, usage: { promptTokens: 7, completionTokens: 9 } })
    const events = await collect(clientFor(style, server).stream("hi"))
    const deltas = events.filter((e) => e.type === "text")
    expect(deltas.length).toBeGreaterThan(1)
    expect(textOf(events)).toBe(text)
    expect(events.map((e) => e.type)).toEqual([...deltas.map(() => "text"), "usage", "turn", "done"])
    expect(events.find((e) => e.type === "turn")).toEqual({ type: "turn", turn: 1, finishReason: "stop" })
    expect(events.find((e) => e.type === "usage")).toEqual({
      type: "usage",
      usage: { promptTokens: 7, completionTokens: 9, totalTokens: 16 },
    })
    const result = doneOf(events)
    expect(result).toMatchObject({ status: "done", text, turns: 1, toolCallCount: 0 })
    expect(result.usage).toEqual({ promptTokens: 7, completionTokens: 9, totalTokens: 16 })
    expect(server.requests[0]?.stream).toBe(true)
  })

  it("assembles interleaved tool-call argument fragments by index and reports calls and results", async () => {
    const { server } = ctx
    server.enqueue(
      {
        toolCalls: [
          { id: "c-echo", name: "echo", arguments: { text: "first call, with a longer argument" } },
          { id: "c-add", name: "add", arguments: { a: 20, b: 22 } },
        ],
        usage: { promptTokens: 10, completionTokens: 4 },
      },
      (req) => ({
        text: req.toolResults.map((r) => `${r.id}=${r.content}`).join("; "),
        usage: { promptTokens: 30, completionTokens: 6 },
      }),
    )
    const toolkit = await createToolkit({ extraTools: [echo, add] })
    const events = await collect(clientFor(style, server).stream("go", { toolkit }))
    const types = events.map((e) => e.type)
    const firstText = types.indexOf("text")
    expect(types.slice(0, firstText)).toEqual([
      "usage",
      "turn",
      "tool_call",
      "tool_call",
      "tool_result",
      "tool_result",
    ])
    expect(types.slice(firstText).filter((t) => t !== "text")).toEqual(["usage", "turn", "done"])
    expect(events.filter((e) => e.type === "turn")).toEqual([
      { type: "turn", turn: 1, finishReason: "tool_calls" },
      { type: "turn", turn: 2, finishReason: "stop" },
    ])
    expect(events.filter((e) => e.type === "tool_call")).toEqual([
      { type: "tool_call", id: "c-echo", name: "echo", args: { text: "first call, with a longer argument" } },
      { type: "tool_call", id: "c-add", name: "add", args: { a: 20, b: 22 } },
    ])
    expect(events.filter((e) => e.type === "tool_result")).toEqual([
      {
        type: "tool_result",
        id: "c-echo",
        name: "echo",
        output: "echo: first call, with a longer argument",
        isError: false,
      },
      { type: "tool_result", id: "c-add", name: "add", output: "42", isError: false },
    ])
    expect(events.filter((e) => e.type === "usage").map((e) => (e as { usage: unknown }).usage)).toEqual([
      { promptTokens: 10, completionTokens: 4, totalTokens: 14 },
      { promptTokens: 40, completionTokens: 10, totalTokens: 50 },
    ])
    const result = doneOf(events)
    expect(result.text).toBe("c-echo=echo: first call, with a longer argument; c-add=42")
    expect(textOf(events)).toBe(result.text)
    expect(result.toolCalls.map((c) => [c.id, c.args, c.output])).toEqual([
      ["c-echo", { text: "first call, with a longer argument" }, "echo: first call, with a longer argument"],
      ["c-add", { a: 20, b: 22 }, "42"],
    ])
    // The assembled calls go back to the model intact on the next turn.
    const assistant = server.requests[1]?.body.messages.find((m: { role: string }) => m.role === "assistant")
    if (style === "openai") {
      expect(assistant.tool_calls.map((c: any) => [c.id, JSON.parse(c.function.arguments)])).toEqual([
        ["c-echo", { text: "first call, with a longer argument" }],
        ["c-add", { a: 20, b: 22 }],
      ])
    } else {
      expect(assistant.content).toEqual([
        {
          type: "tool_use",
          id: "c-echo",
          name: "echo",
          input: { text: "first call, with a longer argument" },
        },
        { type: "tool_use", id: "c-add", name: "add", input: { a: 20, b: 22 } },
      ])
    }
  })

  it("keeps the text of a turn that also calls tools", async () => {
    const { server } = ctx
    server.enqueue(
      { text: "Let me check.", toolCalls: [{ id: "t1", name: "echo", arguments: { text: "x" } }] },
      { text: "Done." },
    )
    const toolkit = await createToolkit({ extraTools: [echo] })
    const events = await collect(clientFor(style, server).stream("go", { toolkit }))
    expect(textOf(events)).toBe("Let me check.Done.")
    expect(doneOf(events).text).toBe("Done.")
    const assistant = server.requests[1]?.body.messages.find((m: { role: string }) => m.role === "assistant")
    if (style === "openai") expect(assistant.content).toBe("Let me check.")
    else expect(assistant.content[0]).toEqual({ type: "text", text: "Let me check." })
  })

  it("streamed arguments that are not JSON become an error result; the run goes on", async () => {
    const { server } = ctx
    server.enqueue(
      { toolCalls: [{ id: "bad", name: "echo", arguments: '{"text": "unterminated' }] },
      { text: "ok" },
    )
    const toolkit = await createToolkit({ extraTools: [echo] })
    const events = await collect(clientFor(style, server).stream("go", { toolkit }))
    const result = events.find((e) => e.type === "tool_result") as Extract<
      StreamEvent,
      { type: "tool_result" }
    >
    expect(result).toMatchObject({ id: "bad", isError: true })
    expect(result.output).toMatch(/^invalid arguments for echo: the arguments are not valid JSON/)
    expect(doneOf(events).status).toBe("done")
    // The transcript sent back stays valid for the provider.
    const assistant = server.requests[1]?.body.messages.find((m: { role: string }) => m.role === "assistant")
    if (style === "anthropic") expect(assistant.content[0].input).toEqual({})
  })

  // Regression (issue 12): a halting run streamed an isError tool_result before `pending`.
  it("a suspending tool without waitFor yields pending (never an error tool_result), then done", async () => {
    const { server } = ctx
    server.enqueue({ toolCalls: [{ id: "ap1", name: "approve", arguments: { what: "the deploy" } }] })
    const toolkit = await createToolkit({ extraTools: [approve] })
    const events = await collect(clientFor(style, server).stream("deploy", { toolkit }))
    expect(events.map((e) => e.type)).toEqual(["usage", "turn", "tool_call", "pending", "done"])
    expect(events.some((e) => e.type === "tool_result")).toBe(false)
    const pendingEvent = events[3] as Extract<StreamEvent, { type: "pending" }>
    expect(pendingEvent.request).toMatchObject({
      kind: "approval",
      prompt: "Approve the deploy?",
      data: { callId: "ap1" },
    })
    expect(pendingEvent.request.id).toMatch(/^pnd-/)
    const result = doneOf(events)
    expect(result.status).toBe("pending")
    expect(result.pending).toEqual(pendingEvent.request)
    expect(server.requests).toHaveLength(1)
  })

  it("with waitFor the suspension resolves inline and no pending event is yielded", async () => {
    const { server } = ctx
    server.enqueue({ toolCalls: [{ id: "ap2", name: "approve", arguments: { what: "it" } }] }, (req) => ({
      text: `model saw ${req.toolResults[0]?.content}`,
    }))
    const toolkit = await createToolkit({ extraTools: [approve] })
    const client = clientFor(style, server, { waitFor: (req) => ({ id: req.id, ok: true }) })
    const events = await collect(client.stream("go", { toolkit }))
    expect(events.some((e) => e.type === "pending")).toBe(false)
    expect(events.find((e) => e.type === "tool_result")).toMatchObject({
      output: "approved it",
      isError: false,
    })
    expect(doneOf(events)).toMatchObject({ status: "done", text: "model saw approved it" })
  })

  it("retries a 503 before the stream starts", async () => {
    const { server } = ctx
    server.enqueue({ status: 503, headers: { "retry-after": "0" } }, { text: "after retry" })
    const events = await collect(clientFor(style, server).stream("hi"))
    expect(textOf(events)).toBe("after retry")
    expect(server.requests).toHaveLength(2)
  })

  it("with id, saves the streamed run to the store", async () => {
    const { server } = ctx
    server.enqueue({ text: "stored" })
    const store = new MemoryStore()
    const events = await collect(clientFor(style, server, { store }).stream("keep me", { id: "s-1" }))
    expect(await store.get("s-1")).toEqual(doneOf(events).messages)
    expect(await store.get("s-1")).toHaveLength(2)
  })
})

describe.each(CHAT_STYLES)("stream errors (%s)", (style) => {
  it("an abort while a later turn hangs makes the iterator throw AbortError after the earlier events", async () => {
    const { server } = ctx
    const controller = new AbortController()
    server.enqueue({ toolCalls: [{ id: "e1", name: "echo", arguments: { text: "a" } }] }, () => {
      setImmediate(() => controller.abort())
      return { hang: true }
    })
    const toolkit = await createToolkit({ extraTools: [echo] })
    const stream = clientFor(style, server, { retries: 2 }).stream("go", {
      toolkit,
      signal: controller.signal,
    })
    const { events, error } = await collectFailure(stream)
    expect(error).toBeInstanceOf(AbortError)
    expect(events.map((e) => e.type)).toEqual(["usage", "turn", "tool_call", "tool_result"])
    expect(server.requests).toHaveLength(2)
  }, 3_000)

  it("an abort in the middle of a response body makes the iterator throw AbortError", async () => {
    const { url, close } = await stallingServer(style)
    try {
      const controller = new AbortController()
      const client = clientFor(style, { url } as never, { baseUrl: style === "openai" ? `${url}/v1` : url })
      const stream = client.stream("hi", { signal: controller.signal })
      const events: StreamEvent[] = []
      let error: unknown
      try {
        for await (const ev of stream) {
          events.push(ev)
          if (ev.type === "text") controller.abort()
        }
      } catch (e) {
        error = e
      }
      expect(events).toEqual([{ type: "text", delta: "Hel" }])
      expect(error).toBeInstanceOf(AbortError)
    } finally {
      await close()
    }
  }, 3_000)

  it("a stream chunk that is not JSON is an LLMResponseError, not retried", async () => {
    const { server } = ctx
    const frame = style === "openai" ? "data: {not json\n\n" : "event: message_start\ndata: {not json\n\n"
    server.enqueue({ rawBody: frame }, { text: "never" })
    const { error } = await collectFailure(clientFor(style, server).stream("hi"))
    expect(error).toBeInstanceOf(LLMResponseError)
    expect(server.requests).toHaveLength(1)
  }, 3_000)

  it("an empty event stream is an LLMResponseError", async () => {
    const { server } = ctx
    server.enqueue({ rawBody: "" })
    const { error } = await collectFailure(clientFor(style, server).stream("hi"))
    expect(error).toBeInstanceOf(LLMResponseError)
  }, 3_000)

  it("a transient error event before any output is retried; then an LLMStreamError naming it", async () => {
    const { server } = ctx
    const frame =
      style === "openai"
        ? 'data: {"error":{"message":"upstream overloaded","type":"server_error"}}\n\n'
        : 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"upstream overloaded"}}\n\n'
    server.addRule({ match: () => true, reply: { rawBody: frame } })
    const { error } = await collectFailure(clientFor(style, server).stream("hi"))
    expect(error).toBeInstanceOf(LLMStreamError)
    expect((error as Error).message).toContain("upstream overloaded")
    expect(server.requests).toHaveLength(3)
  }, 3_000)

  it("breaking out of the stream stops the run: no further LLM request", async () => {
    const { server } = ctx
    server.enqueue(
      { toolCalls: [{ id: "b1", name: "echo", arguments: { text: "a" } }] },
      { text: "never needed" },
    )
    const toolkit = await createToolkit({ extraTools: [echo] })
    for await (const ev of clientFor(style, server).stream("go", { toolkit })) {
      if (ev.type === "tool_call") break
    }
    // Give a run that kept going in the background the time to send its next request.
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(server.requests).toHaveLength(1)
  })
})

describe.each(CHAT_STYLES)("ask (%s)", (style) => {
  it("with onText streams the text and returns the same result as run", async () => {
    const { server } = ctx
    const script = () => {
      server.enqueue(
        { text: "Thinking…", toolCalls: [{ id: "k1", name: "add", arguments: { a: 1, b: 2 } }] },
        (req) => ({ text: `The sum is ${req.toolResults[0]?.content}.` }),
      )
    }
    const toolkit = await createToolkit({ extraTools: [add] })
    const client = clientFor(style, server)
    script()
    const plain = await client.run("sum", { toolkit })
    expect(server.requests.map((r) => r.stream)).toEqual([false, false])
    server.reset()
    script()
    const deltas: string[] = []
    const streamed = await client.ask("sum", { toolkit, onText: (d) => deltas.push(d) })
    expect(server.requests.map((r) => r.stream)).toEqual([true, true])
    expect(deltas.length).toBeGreaterThan(2)
    expect(deltas.join("")).toBe("Thinking…The sum is 3.")
    // Two runs, two generated ids; everything else is the same.
    expect(streamed.runId).not.toBe(plain.runId)
    expect(streamed).toEqual({ ...plain, runId: streamed.runId })
    expect(streamed.text).toBe("The sum is 3.")
  })

  it("without onText sends non-streaming requests", async () => {
    const { server } = ctx
    server.enqueue({ text: "plain" })
    const result = await clientFor(style, server).ask("hi")
    expect(result.text).toBe("plain")
    expect(server.requests[0]?.stream).toBe(false)
  })

  it("with id saves to the store with {pending} meta and continues the conversation", async () => {
    const { server } = ctx
    const store = new MemoryStore()
    const client = clientFor(style, server, { store })
    expect(client.conversationStore()).toBe(store)
    server.enqueue({ text: "reply one" }, { text: "reply two" })
    const first = await client.ask("first question", { id: "conv-1", onText: () => {} })
    expect(await store.get("conv-1")).toEqual(first.messages)
    expect(await store.getPending("conv-1")).toBeUndefined()

    const second = await client.ask("second question", { id: "conv-1" })
    const sent = server.requests[1]?.body.messages
    const assistantOne =
      style === "openai"
        ? { role: "assistant", content: "reply one" }
        : { role: "assistant", content: [{ type: "text", text: "reply one" }] }
    expect(sent).toEqual([
      { role: "user", content: "first question" },
      assistantOne,
      { role: "user", content: "second question" },
    ])
    expect(second.messages).toHaveLength(4)
    expect(await store.get("conv-1")).toEqual(second.messages)
    // Another id is another conversation.
    server.enqueue({ text: "other" })
    await client.ask("unrelated", { id: "conv-2" })
    expect(server.requests[2]?.body.messages).toEqual([{ role: "user", content: "unrelated" }])
  })

  it("with id records the halted request as pending meta, and null when a run finishes", async () => {
    const { server } = ctx
    const store = new MemoryStore()
    const metas: unknown[] = []
    const recording = {
      get: (id: string) => store.get(id),
      getPending: (id: string) => store.getPending(id),
      save: (id: string, messages: Message[], meta?: SaveMeta) => {
        metas.push(meta)
        return store.save(id, messages, meta)
      },
    }
    const client = clientFor(style, server, { store: recording })
    server.enqueue({ toolCalls: [{ id: "p1", name: "approve", arguments: { what: "x" } }] }, { text: "fine" })
    const toolkit = await createToolkit({ extraTools: [approve] })
    const halted = await client.ask("approve x", { toolkit, id: "conv-p" })
    expect(halted.status).toBe("pending")
    expect(await store.getPending("conv-p")).toEqual(halted.pending)
    expect(await store.get("conv-p")).toEqual(halted.messages)
    // A new prompt on the waiting conversation is refused; the request stays.
    await expect(client.ask("never mind", { toolkit, id: "conv-p" })).rejects.toThrow(
      ConversationPendingError,
    )
    expect(await store.getPending("conv-p")).toEqual(halted.pending)

    const done = await client.ask("plain", { toolkit, id: "conv-q" })
    expect(done.status).toBe("done")
    expect(metas).toEqual([{ pending: halted.pending }, { pending: null }])
  })

  it("uses the client's own in-memory store by default", async () => {
    const { server } = ctx
    server.enqueue({ text: "a" }, { text: "b" })
    const client = clientFor(style, server)
    await client.ask("one", { id: "default-store" })
    await client.ask("two", { id: "default-store" })
    expect(server.requests[1]?.body.messages).toHaveLength(3)
    expect(await client.conversationStore().get("default-store")).toHaveLength(4)
    // A second client does not share it.
    expect(await clientFor(style, server).conversationStore().get("default-store")).toBeUndefined()
  })
})

describe.each(CHAT_STYLES)("conversation (%s)", (style) => {
  it("send keeps the history; reset clears it", async () => {
    const { server } = ctx
    server.enqueue({ text: "one" }, { text: "two" }, { text: "three" })
    const conv = clientFor(style, server).conversation()
    expect(conv.messages).toEqual([])
    expect((await conv.send("first")).text).toBe("one")
    expect(conv.messages).toHaveLength(2)
    const second = await conv.send("second")
    expect(second.text).toBe("two")
    expect(server.requests[1]?.body.messages.map((m: { role: string }) => m.role)).toEqual([
      "user",
      "assistant",
      "user",
    ])
    expect(server.requests[1]?.body.messages[0]).toEqual({ role: "user", content: "first" })
    expect(conv.messages).toEqual(second.messages)
    expect(conv.messages).toHaveLength(4)
    conv.reset()
    expect(conv.messages).toEqual([])
    await conv.send("third")
    expect(server.requests[2]?.body.messages).toEqual([{ role: "user", content: "third" }])
  })

  it("keeps tool turns in the history and uses its toolkit", async () => {
    const { server } = ctx
    server.enqueue(
      { toolCalls: [{ id: "cv1", name: "echo", arguments: { text: "t" } }] },
      { text: "a" },
      { text: "b" },
    )
    const toolkit = await createToolkit({ extraTools: [echo] })
    const conv = clientFor(style, server).conversation({ toolkit })
    await conv.send("one")
    await conv.send("two")
    expect(server.requests[0]?.toolNames).toEqual(["echo"])
    expect(server.requests[2]?.toolNames).toEqual(["echo"])
    // user, assistant(tool call), tool result(s), assistant, user
    const sent = server.requests[2]?.body.messages as { role: string }[]
    expect(sent.at(-1)).toEqual({ role: "user", content: "two" })
    expect(sent.length).toBe(conv.messages.length - 1)
  })
})

/**
 * A server that answers with the start of an SSE stream (one text delta) and then stalls
 * without ending the response, so an abort lands in the middle of the body.
 */
async function stallingServer(style: Style): Promise<{ url: string; close(): Promise<void> }> {
  const frames =
    style === "openai"
      ? [
          `data: ${JSON.stringify({ choices: [{ index: 0, delta: { role: "assistant", content: "Hel" } }] })}\n\n`,
        ]
      : [
          `event: message_start\ndata: ${JSON.stringify({
            type: "message_start",
            message: {
              id: "m",
              role: "assistant",
              content: [],
              usage: { input_tokens: 1, output_tokens: 1 },
            },
          })}\n\n`,
          `event: content_block_start\ndata: ${JSON.stringify({
            type: "content_block_start",
            index: 0,
            content_block: { type: "text", text: "" },
          })}\n\n`,
          `event: content_block_delta\ndata: ${JSON.stringify({
            type: "content_block_delta",
            index: 0,
            delta: { type: "text_delta", text: "Hel" },
          })}\n\n`,
        ]
  const server: Server = createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      for (const frame of frames) res.write(frame)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
