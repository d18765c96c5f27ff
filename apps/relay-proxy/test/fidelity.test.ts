import { type Client, LLMStreamError, type RunResult } from "@toolnexus/core"
import type OpenAI from "openai"
import { afterEach, describe, expect, it } from "vitest"
import { createRelayProxy } from "../src/app.js"
import { OpenAIClient, STYLES, fnTool, listen, proxyFor, useHarness } from "./helpers.js"

// finish_reason and refusal as core reports them (DESIGN §10: RunResult.finishReason / .refusal,
// incomplete with limit "maxOutputTokens" / "contentFilter"): first end to end from the fake
// upstream in every style, then from a stub client giving exactly those results.
const h = useHarness()
let listening: Awaited<ReturnType<typeof listen>> | undefined
afterEach(async () => {
  await listening?.close()
  listening = undefined
})

const ask = { model: "m", messages: [{ role: "user" as const, content: "q" }] }

describe.each(STYLES)("from the upstream model (%s)", (style) => {
  async function sdk() {
    listening = await listen(proxyFor(style, h.server, h.store))
    return new OpenAIClient({ baseURL: listening.baseURL, apiKey: "k", maxRetries: 0 })
  }

  it("a refusal reaches chat as message.refusal and Responses as a refusal part", async () => {
    h.server.enqueue({ refusal: "Not that." }, { refusal: "Not that." })
    const openai = await sdk()
    const chat = await openai.chat.completions.create(ask)
    expect(chat.choices[0]?.finish_reason).toBe("stop")
    expect(chat.choices[0]?.message.refusal).toBe(style === "anthropic" ? "" : "Not that.")
    const res = await openai.responses.create({ model: "m", input: "q" })
    const part = (res.output[0] as OpenAI.Responses.ResponseOutputMessage).content.at(-1)
    expect(part?.type).toBe("refusal")
  })

  it("a tool call cut at the token limit is finish_reason length, without the call", async () => {
    h.server.enqueue({
      text: "Calling",
      toolCalls: [{ name: "t", arguments: '{"a":' }],
      cutOff: "maxOutputTokens",
    })
    const openai = await sdk()
    const res = await openai.chat.completions.create({
      ...ask,
      tools: [fnTool("t") as OpenAI.ChatCompletionTool],
    })
    expect(res.choices[0]?.finish_reason).toBe("length")
    expect(res.choices[0]?.message.tool_calls).toBeUndefined()
    expect(await h.store.listPending()).toEqual([])
    expect(h.server.requests).toHaveLength(1)
  })

  it("a content filter is finish_reason content_filter (Anthropic: a refusal)", async () => {
    h.server.enqueue({ text: "", cutOff: "contentFilter" })
    const openai = await sdk()
    const res = await openai.chat.completions.create(ask)
    expect(res.choices[0]?.finish_reason).toBe(style === "anthropic" ? "stop" : "content_filter")
  })
})

type Fidelity = Partial<RunResult> & { finishReason?: string; refusal?: string }

async function sdkWith(result: Fidelity) {
  const full = {
    status: "done",
    text: "",
    messages: [],
    toolCalls: [],
    toolCallCount: 0,
    turns: 1,
    model: "stub-model",
    usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 },
    ...result,
  }
  const client = { ask: async () => full, conversationStore: () => h.store } as unknown as Client
  listening = await listen(createRelayProxy({ client, store: h.store }))
  return new OpenAIClient({ baseURL: listening.baseURL, apiKey: "k", maxRetries: 0 })
}

const refused: Fidelity = { finishReason: "refusal", refusal: "I can't help with that." }
const cut: Fidelity = { status: "incomplete", limit: "maxOutputTokens", finishReason: "length", text: '{"' }
const filtered: Fidelity = { status: "incomplete", limit: "contentFilter", finishReason: "content_filter" }

describe("chat completions", () => {
  it("a refusal arrives as message.refusal with finish_reason stop", async () => {
    const openai = await sdkWith(refused)
    const res = await openai.chat.completions.create(ask)
    expect(res.choices[0]).toMatchObject({
      finish_reason: "stop",
      message: { content: null, refusal: "I can't help with that." },
    })
    const streamed = await openai.chat.completions.stream(ask).finalChatCompletion()
    expect(streamed.choices[0]?.message.refusal).toBe("I can't help with that.")
  })

  it("a reply cut at the token limit is finish_reason length, streaming or not", async () => {
    const openai = await sdkWith(cut)
    const res = await openai.chat.completions.create(ask)
    expect(res.choices[0]).toMatchObject({ finish_reason: "length", message: { content: '{"' } })
    const stream = await openai.chat.completions.create({ ...ask, stream: true })
    const reasons: (string | null | undefined)[] = []
    for await (const chunk of stream) reasons.push(chunk.choices[0]?.finish_reason)
    expect(reasons.filter(Boolean)).toEqual(["length"])
  })

  it("a content filter is finish_reason content_filter", async () => {
    const openai = await sdkWith(filtered)
    expect((await openai.chat.completions.create(ask)).choices[0]?.finish_reason).toBe("content_filter")
  })
})

describe("responses", () => {
  it("a refusal is a refusal content part, streamed as response.refusal.*", async () => {
    const openai = await sdkWith(refused)
    const res = await openai.responses.create({ model: "m", input: "q" })
    expect(res.status).toBe("completed")
    expect((res.output[0] as OpenAI.Responses.ResponseOutputMessage).content).toEqual([
      { type: "refusal", refusal: "I can't help with that." },
    ])
    const stream = await openai.responses.create({ model: "m", input: "q", stream: true })
    const types: string[] = []
    for await (const event of stream) types.push(event.type)
    expect(types).toContain("response.refusal.delta")
    expect(types).toContain("response.refusal.done")
  })

  it.each([
    ["the token limit", cut, "max_output_tokens"],
    ["a content filter", filtered, "content_filter"],
  ])("%s makes the response incomplete with its reason", async (_name, result, reason) => {
    const openai = await sdkWith(result)
    const res = await openai.responses.create({ model: "m", input: "q" })
    expect(res.status).toBe("incomplete")
    expect(res.incomplete_details).toEqual({ reason })
    const stream = await openai.responses.create({ model: "m", input: "q", stream: true })
    let last: OpenAI.Responses.ResponseStreamEvent | undefined
    for await (const event of stream) last = event
    expect(last?.type).toBe("response.incomplete")
  })
})

describe("an upstream stream's error event", () => {
  it.each([
    [{ type: "overloaded_error", message: "busy" }, 503, "true"],
    [{ type: "error", code: "insufficient_quota", message: "no credit" }, 429, "false"],
    [{ type: "invalid_request_error", message: "bad" }, 400, "false"],
  ])("%o ⇒ HTTP %i, x-should-retry %s", async (info, status, retry) => {
    const client = {
      ask: async () => {
        throw new LLMStreamError(info)
      },
      conversationStore: () => h.store,
    } as unknown as Client
    const app = createRelayProxy({ client, store: h.store })
    const res = await app.request("/v1/chat/completions", {
      method: "POST",
      body: JSON.stringify({ messages: [{ role: "user", content: "q" }] }),
    })
    expect(res.status).toBe(status)
    expect(res.headers.get("x-should-retry")).toBe(retry)
    expect(((await res.json()) as any).error.message).toContain(info.message)
  })
})
