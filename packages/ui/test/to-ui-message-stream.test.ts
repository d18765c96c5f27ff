import { LLMHttpError, type RunResult, type StreamEvent } from "@toolnexus/core"
import { type UIMessage, type UIMessageChunk, readUIMessageStream } from "ai"
import { describe, expect, it } from "vitest"
import { type UIMessageChunk as WrittenChunk, toUIMessageStream } from "../src/ai-sdk/index.js"

async function* eventsOf(events: StreamEvent[], fail?: unknown): AsyncGenerator<StreamEvent> {
  for (const ev of events) yield ev
  if (fail !== undefined) throw fail
}

/** The chunks of a stream: the copy's type, which ui-message-chunk.test-d.ts pins as `ai`'s. */
async function collect(stream: ReadableStream<WrittenChunk>): Promise<WrittenChunk[]> {
  const out: WrittenChunk[] = []
  for await (const c of stream) out.push(c)
  return out
}

/** Builds the message with the `ai` package, failing on any chunk it rejects. */
async function built(chunks: UIMessageChunk[]): Promise<UIMessage | undefined> {
  const stream = new ReadableStream<UIMessageChunk>({
    start(c) {
      for (const chunk of chunks) c.enqueue(chunk)
      c.close()
    },
  })
  let message: UIMessage | undefined
  for await (const m of readUIMessageStream({
    stream,
    terminateOnError: true,
    onError: (e) => {
      throw e
    },
  }))
    message = m
  return message
}

const result = (over: Partial<RunResult>): RunResult => ({
  status: "done",
  text: "",
  messages: [],
  toolCalls: [],
  toolCallCount: 0,
  turns: 1,
  model: "m",
  usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 },
  ...over,
})

describe("toUIMessageStream", () => {
  it("reasoning, text, a tool turn and a second turn: one step per model turn, parts closed in order", async () => {
    const chunks = await collect(
      toUIMessageStream(
        eventsOf([
          { type: "reasoning", delta: "Let me " },
          { type: "reasoning", delta: "check." },
          { type: "text", delta: "Checking" },
          { type: "turn", turn: 1, finishReason: "tool_calls" },
          { type: "tool_call", id: "c1", name: "lookup", args: { q: "x" } },
          { type: "tool_result", id: "c1", name: "lookup", output: "found", isError: false },
          { type: "text", delta: "Found it." },
          { type: "turn", turn: 2, finishReason: "stop" },
          { type: "done", result: result({ text: "Found it." }) },
        ]),
        { messageId: "msg-1" },
      ),
    )
    expect(chunks).toEqual([
      { type: "start", messageId: "msg-1" },
      { type: "start-step" },
      { type: "reasoning-start", id: "reasoning-1" },
      { type: "reasoning-delta", id: "reasoning-1", delta: "Let me " },
      { type: "reasoning-delta", id: "reasoning-1", delta: "check." },
      { type: "reasoning-end", id: "reasoning-1" },
      { type: "text-start", id: "text-2" },
      { type: "text-delta", id: "text-2", delta: "Checking" },
      { type: "text-end", id: "text-2" },
      { type: "tool-input-available", toolCallId: "c1", toolName: "lookup", input: { q: "x" } },
      { type: "tool-output-available", toolCallId: "c1", output: "found" },
      { type: "finish-step" },
      { type: "start-step" },
      { type: "text-start", id: "text-3" },
      { type: "text-delta", id: "text-3", delta: "Found it." },
      { type: "text-end", id: "text-3" },
      { type: "finish-step" },
      { type: "finish", finishReason: "stop" },
    ])
    const message = await built(chunks)
    expect(message?.parts.map((p) => p.type)).toEqual([
      "step-start",
      "reasoning",
      "text",
      "tool-lookup",
      "step-start",
      "text",
    ])
  })

  it("finish reasons: suspension tool-calls, refusal content-filter, cut-off length, other limits other", async () => {
    const finish = async (r: RunResult) =>
      (await collect(toUIMessageStream(eventsOf([{ type: "done", result: r }])))).at(-1)
    expect(await finish(result({ status: "pending" }))).toEqual({
      type: "finish",
      finishReason: "tool-calls",
    })
    expect(await finish(result({ finishReason: "refusal", refusal: "no" }))).toEqual({
      type: "finish",
      finishReason: "content-filter",
    })
    expect(await finish(result({ status: "incomplete", limit: "maxOutputTokens" }))).toEqual({
      type: "finish",
      finishReason: "length",
    })
    expect(await finish(result({ status: "incomplete", limit: "maxTurns" }))).toEqual({
      type: "finish",
      finishReason: "other",
    })
  })

  it("an approval of a streamed call is a tool-approval-request; other requests data parts; relay nothing", async () => {
    const approval = {
      id: "pnd-1",
      kind: "approval",
      prompt: "ok?",
      data: { callId: "c1", tool: "pay", args: {} },
    }
    const chunks = await collect(
      toUIMessageStream(
        eventsOf([
          { type: "tool_call", id: "c1", name: "pay", args: {} },
          { type: "pending", request: approval },
          { type: "pending", request: { id: "pnd-2", kind: "question", prompt: "Which?" } },
          {
            type: "pending",
            request: { id: "pnd-3", kind: "tool_call", prompt: "run it", data: { calls: [] } },
          },
          {
            type: "pending",
            request: { ...approval, id: "pnd-4", data: { ...approval.data, path: ["root", "a.1"] } },
          },
        ]),
      ),
    )
    expect(chunks.filter((c) => c.type === "tool-approval-request" || c.type.startsWith("data-"))).toEqual([
      { type: "tool-approval-request", approvalId: "pnd-1", toolCallId: "c1" },
      {
        type: "data-toolnexus-request",
        id: "pnd-2",
        data: { id: "pnd-2", kind: "question", prompt: "Which?" },
      },
      {
        type: "data-toolnexus-request",
        id: "pnd-4",
        data: { ...approval, id: "pnd-4", data: { ...approval.data, path: ["root", "a.1"] } },
      },
    ])
    expect(await built(chunks)).toBeDefined()
  })

  it("a throwing iterable ends with error then finish error; onError decides the text, keys are cut out", async () => {
    const key = "sk-env-secret-0123456789"
    process.env.ANTHROPIC_API_KEY = key
    try {
      const failure = new LLMHttpError(500, "boom")
      const chunks = await collect(toUIMessageStream(eventsOf([{ type: "text", delta: "Hi" }], failure)))
      expect(chunks.slice(-4)).toEqual([
        { type: "text-end", id: "text-1" },
        { type: "finish-step" },
        { type: "error", errorText: `TNX_LLM_HTTP: ${failure.message}` },
        { type: "finish", finishReason: "error" },
      ])
      const plain = await collect(toUIMessageStream(eventsOf([], new Error(`db password ${key}`))))
      expect(plain).toContainEqual({ type: "error", errorText: "TNX_INTERNAL: internal error" })
      const custom = await collect(
        toUIMessageStream(eventsOf([], new Error("x")), { onError: () => `failed with ${key}` }),
      )
      expect(custom).toContainEqual({ type: "error", errorText: "failed with [redacted]" })
    } finally {
      delete process.env.ANTHROPIC_API_KEY
    }
  })
})
