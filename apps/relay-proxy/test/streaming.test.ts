import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import { createClient } from "@toolnexus/core"
import { type DurableStore, openStore } from "@toolnexus/durable"
import { streamText } from "ai"
import type OpenAI from "openai"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { createRelayProxy } from "../src/app.js"
import { OpenAIClient, fnTool, listen } from "./helpers.js"

// A hand-driven upstream (the client's `fetch`): each reply is a list of SSE frames, and a frame
// may wait for a promise, so a test can hold the model "mid-sentence" until the caller has seen
// what came before.
type Frame = string | Promise<unknown>
const encoder = new TextEncoder()
const textFrame = (content: string) =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`
const endFrame = (finish = "stop") =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: finish }], usage: { prompt_tokens: 4, completion_tokens: 3 } })}\n\ndata: [DONE]\n\n`
const toolFrame = (id: string, name: string, args: string) =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id, type: "function", function: { name, arguments: args } }] } }] })}\n\n`
const errorFrame = `data: ${JSON.stringify({ error: { type: "server_error", message: "the model fell over" } })}\n\n`

let replies: Frame[][] = []
let upstreamCalls = 0
let upstreamSignal: AbortSignal | undefined
const upstreamFetch = async (_url: string, init?: RequestInit): Promise<Response> => {
  upstreamCalls++
  upstreamSignal = init?.signal ?? undefined
  const frames = replies.shift()
  if (!frames) return new Response(JSON.stringify({ error: { message: "unscripted" } }), { status: 500 })
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      for (const frame of frames) {
        if (typeof frame === "string") controller.enqueue(encoder.encode(frame))
        else await frame
      }
      controller.close()
    },
  })
  return new Response(body, { headers: { "content-type": "text/event-stream" } })
}

function gate() {
  let open!: () => void
  const opened = new Promise<void>((resolve) => {
    open = resolve
  })
  return { open, opened }
}

let store: DurableStore
let listening: Awaited<ReturnType<typeof listen>>
beforeEach(async () => {
  replies = []
  upstreamCalls = 0
  store = await openStore("sqlite::memory:")
  const client = createClient({
    baseUrl: "http://127.0.0.1:9/v1",
    style: "openai",
    model: "upstream-model",
    apiKey: "k",
    retries: 0,
    fetch: upstreamFetch as typeof fetch,
    store,
  })
  listening = await listen(createRelayProxy({ client, store, model: "upstream-model" }))
})
afterEach(async () => {
  await listening.close()
  await store.close()
})

const openai = () => new OpenAIClient({ baseURL: listening.baseURL, apiKey: "caller", maxRetries: 0 })
const weather = fnTool("get_weather", { city: { type: "string" } }) as OpenAI.ChatCompletionTool

describe("stream: true forwards the upstream's deltas as they arrive", () => {
  it("chat: the first delta reaches the SDK while the upstream still holds the rest", async () => {
    const seen = gate()
    replies.push([textFrame("It is "), seen.opened, textFrame("18°C."), endFrame()])
    const stream = await openai().chat.completions.create({
      model: "any",
      messages: [{ role: "user", content: "weather?" }],
      stream: true,
      stream_options: { include_usage: true },
    })
    const deltas: string[] = []
    let usage: OpenAI.CompletionUsage | null | undefined
    let finish: string | null | undefined
    for await (const chunk of stream) {
      const content = chunk.choices[0]?.delta.content
      if (content) {
        deltas.push(content)
        // Only now may the upstream go on: had the proxy waited for the whole turn, this would hang.
        seen.open()
      }
      finish ??= chunk.choices[0]?.finish_reason
      if (chunk.usage) usage = chunk.usage
    }
    expect(deltas).toEqual(["It is ", "18°C."])
    expect(finish).toBe("stop")
    expect(usage).toEqual({ prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 })
  })

  it("chat: text streams live, then the tool calls with caller-scoped ids; the follow-up streams too", async () => {
    const seen = gate()
    replies.push([
      textFrame("Checking. "),
      seen.opened,
      toolFrame("call_0", "get_weather", '{"city":"Oslo"}'),
      endFrame("tool_calls"),
    ])
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "Oslo?" }]
    const runner = openai().chat.completions.stream({ model: "any", messages, tools: [weather] })
    runner.on("content", () => seen.open())
    const message = await runner.finalMessage()
    expect(message.content).toBe("Checking. ")
    const call = message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall
    expect(call.id).toMatch(/^call_[A-Za-z0-9_-]{22}$/)
    expect(call.function).toEqual({ name: "get_weather", arguments: '{"city":"Oslo"}' })
    replies.push([textFrame("Oslo: "), textFrame("-3°C"), endFrame()])
    messages.push(message, { role: "tool", tool_call_id: call.id, content: "-3°C" })
    const second = openai().chat.completions.stream({ model: "any", messages, tools: [weather] })
    const final = await second.finalChatCompletion()
    expect(final.choices[0]?.message.content).toBe("Oslo: -3°C")
    expect(upstreamCalls).toBe(2)
  })

  it("responses: output_text deltas arrive while the upstream still holds the rest", async () => {
    const seen = gate()
    replies.push([textFrame("Hel"), seen.opened, textFrame("lo."), endFrame()])
    const stream = await openai().responses.create({ model: "any", input: "hi", stream: true })
    const types: string[] = []
    let completed: OpenAI.Responses.Response | undefined
    for await (const event of stream) {
      types.push(event.type)
      if (event.type === "response.output_text.delta") seen.open()
      if (event.type === "response.completed") completed = event.response
    }
    expect(types.slice(0, 5)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
    ])
    expect(types.filter((t) => t === "response.output_text.delta")).toHaveLength(2)
    const message = completed?.output[0] as OpenAI.Responses.ResponseOutputMessage
    expect(message.content).toEqual([expect.objectContaining({ type: "output_text", text: "Hello." })])
    expect(types.at(-1)).toBe("response.completed")
    expect(completed?.usage?.total_tokens).toBe(7)
  })

  it("refusal deltas stream as `delta.refusal` (chat) and `response.refusal.delta` (responses)", async () => {
    const refusalFrame = (refusal: string) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: { refusal } }] })}\n\n`
    replies.push([refusalFrame("I can't "), refusalFrame("help with that."), endFrame()])
    const chat = await openai().chat.completions.create({
      model: "any",
      messages: [{ role: "user", content: "bad" }],
      stream: true,
    })
    const refusals: string[] = []
    let finish: string | null | undefined
    for await (const chunk of chat) {
      if (chunk.choices[0]?.delta.refusal) refusals.push(chunk.choices[0].delta.refusal)
      finish ??= chunk.choices[0]?.finish_reason
    }
    expect(refusals).toEqual(["I can't ", "help with that."])
    expect(finish).toBe("stop")
    replies.push([refusalFrame("No"), refusalFrame("pe."), endFrame()])
    const events: OpenAI.Responses.ResponseStreamEvent[] = []
    for await (const event of await openai().responses.create({ model: "any", input: "bad", stream: true }))
      events.push(event)
    const deltas = events.filter((e) => e.type === "response.refusal.delta")
    expect(deltas.map((e) => e.delta)).toEqual(["No", "pe."])
    const done = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent
    expect((done.response.output[0] as OpenAI.Responses.ResponseOutputMessage).content).toEqual([
      { type: "refusal", refusal: "Nope." },
    ])
  })

  it("the AI SDK's streamText gets the text in the upstream's pieces", async () => {
    replies.push([textFrame("one "), textFrame("two"), endFrame()])
    const provider = createOpenAICompatible({
      name: "relay",
      baseURL: listening.baseURL,
      apiKey: "caller",
      includeUsage: true,
    })
    const result = streamText({ model: provider("any"), prompt: "count", maxRetries: 0 })
    const pieces: string[] = []
    for await (const piece of result.textStream) pieces.push(piece)
    expect(pieces).toEqual(["one ", "two"])
    expect((await result.usage).totalTokens).toBe(7)
  })
})

describe("an upstream failure on a streamed request", () => {
  it("before any delta: the mapped HTTP status, as without streaming", async () => {
    replies.push([errorFrame])
    const error = await openai()
      .chat.completions.create({ model: "any", messages: [{ role: "user", content: "hi" }], stream: true })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAIClient.APIError)
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(503)
  })

  it("chat, after deltas: an in-stream error event, no [DONE]; the SDK throws it", async () => {
    replies.push([textFrame("Half an ans"), errorFrame])
    const stream = await openai().chat.completions.create({
      model: "any",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
    })
    const deltas: string[] = []
    const error = await (async () => {
      for await (const chunk of stream) deltas.push(chunk.choices[0]?.delta.content ?? "")
    })().catch((e: unknown) => e)
    expect(deltas.join("")).toBe("Half an ans")
    expect(error).toBeInstanceOf(OpenAIClient.APIError)
    expect((error as Error).message).toMatch(/fell over/)
    expect((error as InstanceType<typeof OpenAI.APIError>).type).toBe("server_error")
  })

  it("chat, raw: the stream ends with one `data: {error}` frame", async () => {
    replies.push([textFrame("Half"), errorFrame])
    const res = await fetch(`${listening.baseURL}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], stream: true }),
    })
    expect(res.status).toBe(200)
    const frames = (await res.text()).split("\n\n").filter((f) => f !== "")
    expect(frames).not.toContain("data: [DONE]")
    const last = JSON.parse(frames.at(-1)!.slice("data: ".length))
    expect(last.error).toMatchObject({ type: "server_error", code: null, param: null })
  })

  it("responses, after deltas: `error` then `response.failed`; the SDK throws", async () => {
    replies.push([textFrame("Half"), errorFrame])
    const stream = await openai().responses.create({ model: "any", input: "hi", stream: true })
    const types: string[] = []
    const error = await (async () => {
      for await (const event of stream) types.push(event.type)
    })().catch((e: unknown) => e)
    expect(types).toContain("response.output_text.delta")
    expect(error).toBeInstanceOf(OpenAIClient.APIError)
    expect((error as Error).message).toMatch(/fell over/)
    replies.push([textFrame("Half"), errorFrame])
    const res = await fetch(`${listening.baseURL}/responses`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: "hi", stream: true }),
    })
    const text = await res.text()
    const events = [...text.matchAll(/^event: (.+)$/gm)].map((m) => m[1])
    expect(events.slice(-2)).toEqual(["error", "response.failed"])
  })

  it("the AI SDK's streamText reports the in-stream error as an error part after the text", async () => {
    replies.push([textFrame("Half"), errorFrame])
    const provider = createOpenAICompatible({ name: "relay", baseURL: listening.baseURL, apiKey: "caller" })
    const result = streamText({ model: provider("any"), prompt: "hi", maxRetries: 0, onError: () => {} })
    const parts: { type: string; text?: string; error?: unknown }[] = []
    for await (const part of result.fullStream) parts.push(part as (typeof parts)[number])
    expect(parts.filter((p) => p.type === "text-delta").map((p) => p.text)).toEqual(["Half"])
    const failure = parts.find((p) => p.type === "error")
    expect(JSON.stringify(failure?.error)).toMatch(/fell over/)
  })

  it("a caller hanging up mid-stream aborts the upstream request", async () => {
    replies.push([textFrame("Endless"), new Promise(() => {})])
    const stream = await openai().chat.completions.create({
      model: "any",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
    })
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) break // leaving the loop aborts the SDK's request
    }
    await expect.poll(() => upstreamSignal?.aborted).toBe(true)
  })

  it("a resumed turn failing mid-stream keeps the tool results: the retry finishes the run", async () => {
    replies.push([toolFrame("call_0", "get_weather", '{"city":"Oslo"}'), endFrame("tool_calls")])
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "Oslo?" }]
    const message = await openai()
      .chat.completions.stream({ model: "any", messages, tools: [weather] })
      .finalMessage()
    const call = message.tool_calls![0]!
    messages.push(message, { role: "tool", tool_call_id: call.id, content: "-3°C" })
    replies.push([textFrame("Oslo is"), errorFrame])
    const broken = await openai().chat.completions.create({
      model: "any",
      messages,
      tools: [weather],
      stream: true,
    })
    await expect(
      (async () => {
        for await (const _ of broken);
      })(),
    ).rejects.toThrow(/fell over/)
    replies.push([textFrame("Oslo is -3°C."), endFrame()])
    const { data, response } = await openai()
      .chat.completions.create({ model: "any", messages, tools: [weather], stream: true })
      .withResponse()
    // A continuation's conversation is known before the model is asked, so its stream names it.
    expect(response.headers.get("x-relay-conversation")).toMatch(/^conv-/)
    let text = ""
    for await (const chunk of data) text += chunk.choices[0]?.delta.content ?? ""
    expect(text).toBe("Oslo is -3°C.")
    expect(upstreamCalls).toBe(3)
  })
})
