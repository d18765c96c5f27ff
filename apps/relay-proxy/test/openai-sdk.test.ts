import type OpenAI from "openai"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import type { RelayProxyOptions } from "../src/app.js"
import { OPENAI_VERSION, OpenAIClient, STYLES, fnTool, listen, proxyFor, useHarness } from "./helpers.js"

// The official `openai` SDK (helpers' OpenAIClient: 7.x on Node 22+, else 6.x), unchanged,
// against a listening proxy.
const h = useHarness()
let listening: Awaited<ReturnType<typeof listen>> | undefined
afterEach(async () => {
  await listening?.close()
  listening = undefined
})

async function sdk(style: (typeof STYLES)[number] = "openai", options: Partial<RelayProxyOptions> = {}) {
  listening = await listen(proxyFor(style, h.server, h.store, options))
  return new OpenAIClient({ baseURL: listening.baseURL, apiKey: "caller-key", maxRetries: 2 })
}

const weather = fnTool("get_weather", { city: { type: "string" } }) as OpenAI.ChatCompletionTool

it("drives the client's current major where this Node runs it (7 needs Node 22)", () => {
  const nodeMajor = Number(process.versions.node.split(".")[0])
  expect(OPENAI_VERSION.split(".")[0]).toBe(nodeMajor >= 22 ? "7" : "6")
})

describe.each(STYLES)(`openai SDK ${OPENAI_VERSION} chat completions (%s upstream)`, (style) => {
  beforeEach(() => h.server.reset())

  it("a plain chat", async () => {
    h.server.enqueue({ text: "Hello there.", usage: { promptTokens: 3, completionTokens: 2 } })
    const openai = await sdk(style)
    const res = await openai.chat.completions.create({
      model: "any",
      messages: [{ role: "user", content: "hi" }],
    })
    expect(res.choices[0]?.message.content).toBe("Hello there.")
    expect(res.choices[0]?.finish_reason).toBe("stop")
    expect(res.usage).toEqual({ prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 })
  })

  it("a tool round trip", async () => {
    h.server.enqueue(
      { toolCalls: [{ id: "up_1", name: "get_weather", arguments: { city: "Oslo" } }] },
      (req) => ({ text: `Oslo: ${req.toolResults[0]?.content}` }),
    )
    const openai = await sdk(style)
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "Weather in Oslo?" }]
    const first = await openai.chat.completions.create({ model: "any", messages, tools: [weather] })
    const message = first.choices[0]!.message
    expect(first.choices[0]?.finish_reason).toBe("tool_calls")
    const call = message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall
    expect(call.function).toEqual({ name: "get_weather", arguments: '{"city":"Oslo"}' })
    messages.push(message, { role: "tool", tool_call_id: call.id, content: "-3°C" })
    const second = await openai.chat.completions.create({ model: "any", messages, tools: [weather] })
    expect(second.choices[0]?.message.content).toBe("Oslo: -3°C")
    expect(h.server.requests).toHaveLength(2)
    expect(h.server.requests[1]?.toolResults).toEqual([{ id: "up_1", content: "-3°C", isError: false }])
  })

  it("streams text with the include_usage chunk", async () => {
    h.server.enqueue({ text: "Streamed answer.", usage: { promptTokens: 4, completionTokens: 3 } })
    const openai = await sdk(style)
    const stream = await openai.chat.completions.create({
      model: "any",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      stream_options: { include_usage: true },
    })
    const chunks: OpenAI.ChatCompletionChunk[] = []
    for await (const chunk of stream) chunks.push(chunk)
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("Streamed answer.")
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe("stop")
    expect(chunks.at(-1)?.choices).toEqual([])
    expect(chunks.at(-1)?.usage).toEqual({ prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 })
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true)
  })

  it("streams parallel tool calls by index and resumes from them", async () => {
    h.server.enqueue(
      {
        text: "Checking both.",
        toolCalls: [
          { id: "p1", name: "get_weather", arguments: { city: "Rome" } },
          { id: "p2", name: "get_weather", arguments: { city: "Lima" } },
        ],
      },
      (req) => ({ text: req.toolResults.map((r) => r.content).join(" & ") }),
    )
    const openai = await sdk(style)
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "Rome and Lima?" }]
    // The SDK's stream helper assembles the deltas into a final message, as an app would.
    const runner = openai.chat.completions.stream({ model: "any", messages, tools: [weather] })
    const final = await runner.finalChatCompletion()
    const message = final.choices[0]!.message
    expect(final.choices[0]?.finish_reason).toBe("tool_calls")
    expect(message.content).toBe("Checking both.")
    const calls = message.tool_calls as OpenAI.ChatCompletionMessageFunctionToolCall[]
    expect(calls.map((c) => JSON.parse(c.function.arguments).city)).toEqual(["Rome", "Lima"])
    expect(new Set(calls.map((c) => c.id)).size).toBe(2)
    messages.push(
      { role: "assistant", content: message.content, tool_calls: message.tool_calls },
      { role: "tool", tool_call_id: calls[1]!.id, content: "sunny" },
      { role: "tool", tool_call_id: calls[0]!.id, content: "rain" },
    )
    const second = await openai.chat.completions.create({ model: "any", messages, stream: true })
    let text = ""
    for await (const chunk of second) text += chunk.choices[0]?.delta.content ?? ""
    expect(text).toBe("rain & sunny")
  })

  it.each([false, true])(
    "runTools({stream: %s}) executes the caller's tools to the final answer",
    async (stream) => {
      h.server.enqueue(
        { toolCalls: [{ name: "get_weather", arguments: { city: "Kyiv" } }] },
        {
          toolCalls: [
            { name: "get_weather", arguments: { city: "Riga" } },
            { name: "get_weather", arguments: { city: "Baku" } },
          ],
        },
        (req) => ({ text: `done: ${req.toolResults.map((r) => r.content).join(", ")}` }),
      )
      const openai = await sdk(style)
      const seen: string[] = []
      const params = {
        model: "any",
        messages: [{ role: "user" as const, content: "Weather in three cities" }],
        tools: [
          {
            type: "function" as const,
            function: {
              name: "get_weather",
              description: "the weather",
              parameters: { type: "object", properties: { city: { type: "string" } } },
              parse: JSON.parse,
              function: ({ city }: { city: string }) => {
                seen.push(city)
                return `${city} ok`
              },
            },
          },
        ],
      }
      // The non-streaming and the streaming runner take different parameter types.
      const runner = stream
        ? openai.chat.completions.runTools({ ...params, stream: true })
        : openai.chat.completions.runTools(params)
      expect(await runner.finalContent()).toBe("done: Riga ok, Baku ok")
      expect(seen).toEqual(["Kyiv", "Riga", "Baku"])
      expect(h.server.requests).toHaveLength(3)
    },
  )
})

describe(`openai SDK ${OPENAI_VERSION} errors`, () => {
  it("an upstream 429 reaches the SDK as a 429 with its Retry-After; only the SDK retries", async () => {
    h.server.addRule({
      match: () => true,
      reply: { status: 429, text: "slow down", headers: { "retry-after": "0" } },
    })
    const openai = await sdk()
    const error = await openai.chat.completions
      .create({ model: "any", messages: [{ role: "user", content: "hi" }] })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAIClient.RateLimitError)
    const rate = error as InstanceType<typeof OpenAI.RateLimitError>
    expect(rate.status).toBe(429)
    expect(rate.headers.get("retry-after")).toBe("0")
    expect(rate.message).toMatch(/slow down/)
    // maxRetries 2: three caller attempts, each exactly one upstream request — no stacking.
    expect(h.server.requests).toHaveLength(3)
  })

  it("an upstream 400 passes through as a 400 and is not retried", async () => {
    h.server.enqueue({ status: 400, text: "bad schema for tool t" })
    const openai = await sdk()
    const error = await openai.chat.completions
      .create({ model: "any", messages: [{ role: "user", content: "hi" }], tools: [fnTool("t") as any] })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAIClient.BadRequestError)
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({
      type: "invalid_request_error",
      message: expect.stringMatching(/bad schema for tool t/),
    })
    expect(h.server.requests).toHaveLength(1)
  })

  it("an unreachable upstream is a 502, retried by the SDK only", async () => {
    h.server.addRule({ match: () => true, reply: { dropConnection: true } })
    const openai = await sdk()
    const error = await openai.chat.completions
      .create({ model: "any", messages: [{ role: "user", content: "hi" }] })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAIClient.APIError)
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(502)
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe("upstream_unreachable")
    expect(h.server.requests).toHaveLength(3)
  })

  it("a body over the limit is a 413 in OpenAI's shape, not retried, and never reaches upstream", async () => {
    const openai = await sdk("openai", { maxBodyBytes: 64 * 1024 })
    const error = await openai.chat.completions
      .create({ model: "any", messages: [{ role: "user", content: "x".repeat(100 * 1024) }] })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAIClient.APIError)
    const api = error as InstanceType<typeof OpenAI.APIError>
    expect(api.status).toBe(413)
    expect(api.code).toBe("request_too_large")
    expect(api.message).toMatch(/exceeds 65536 bytes/)
    expect(h.server.requests).toHaveLength(0)
  })

  it("with caller keys, a wrong or missing key is a 401 (AuthenticationError) and a right one works", async () => {
    h.server.enqueue({ text: "welcome" })
    listening = await listen(proxyFor("openai", h.server, h.store, { apiKeys: ["key-a", "key-b"] }))
    const wrong = new OpenAIClient({ baseURL: listening.baseURL, apiKey: "key-c" })
    const error = await wrong.chat.completions
      .create({ model: "any", messages: [{ role: "user", content: "hi" }] })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAIClient.AuthenticationError)
    expect((error as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe("invalid_api_key")
    const missing = await fetch(`${listening.baseURL}/models`)
    expect(missing.status).toBe(401)
    expect(((await missing.json()) as any).error.message).toMatch(/no API key was provided/)
    const right = new OpenAIClient({ baseURL: listening.baseURL, apiKey: "key-b" })
    const res = await right.chat.completions.create({
      model: "any",
      messages: [{ role: "user", content: "hi" }],
    })
    expect(res.choices[0]?.message.content).toBe("welcome")
    expect(h.server.requests).toHaveLength(1)
  })

  it("tool results that answer nothing are a 409 the SDK does not retry", async () => {
    listening = await listen(proxyFor("openai", h.server, h.store))
    let attempts = 0
    const openai = new OpenAIClient({
      baseURL: listening.baseURL,
      apiKey: "k",
      fetch: (url, init) => {
        attempts++
        return fetch(url, init)
      },
    })
    const error = await openai.chat.completions
      .create({
        model: "any",
        messages: [
          { role: "user", content: "hi" },
          {
            role: "assistant",
            tool_calls: [{ id: "x", type: "function", function: { name: "t", arguments: "{}" } }],
          },
          { role: "tool", tool_call_id: "x", content: "late" },
        ],
      })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAIClient.ConflictError)
    expect((error as InstanceType<typeof OpenAI.ConflictError>).headers.get("x-should-retry")).toBe("false")
    expect(attempts).toBe(1)
  })

  it("two SDK calls delivering the same results: one model call, both get the answer", async () => {
    h.server.enqueue({ toolCalls: [{ name: "t", arguments: {} }] }, { text: "applied once", delayMs: 200 })
    const openai = await sdk()
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "go" }]
    const first = await openai.chat.completions.create({
      model: "any",
      messages,
      tools: [fnTool("t") as any],
    })
    const message = first.choices[0]!.message
    messages.push(message, { role: "tool", tool_call_id: message.tool_calls![0]!.id, content: "r" })
    const both = await Promise.all([
      openai.chat.completions.create({ model: "any", messages }),
      openai.chat.completions.create({ model: "any", messages }),
    ])
    expect(both.map((r) => r.choices[0]?.message.content)).toEqual(["applied once", "applied once"])
    expect(h.server.requests).toHaveLength(2)
  })

  it("models.list() names the upstream model", async () => {
    const openai = await sdk()
    const models = await openai.models.list()
    expect(models.data.map((m) => m.id)).toEqual(["upstream-model"])
    expect((await openai.models.retrieve("upstream-model")).id).toBe("upstream-model")
    await expect(openai.models.retrieve("gpt-9")).rejects.toBeInstanceOf(OpenAIClient.NotFoundError)
  })
})
