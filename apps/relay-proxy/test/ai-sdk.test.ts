import { createOpenAI } from "@ai-sdk/openai"
import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import { APICallError, generateText, stepCountIs, streamText, tool } from "ai"
import { afterEach, describe, expect, it } from "vitest"
import { z } from "zod"
import { STYLES, listen, proxyFor, useHarness } from "./helpers.js"

// The Vercel AI SDK 6, unchanged, against a listening proxy: the chat-completions provider
// (@ai-sdk/openai-compatible) and the default OpenAI provider, which speaks the Responses API.
const h = useHarness()
let listening: Awaited<ReturnType<typeof listen>> | undefined
afterEach(async () => {
  await listening?.close()
  listening = undefined
})

/** Every body the AI SDK sent to the proxy, parsed. */
let sent: any[] = []
const recordingFetch: typeof fetch = async (url, init) => {
  if (typeof init?.body === "string") sent.push(JSON.parse(init.body))
  return fetch(url, init)
}

async function baseURL(style: (typeof STYLES)[number]) {
  sent = []
  listening = await listen(proxyFor(style, h.server, h.store))
  return listening.baseURL
}

function weatherTool(seen: string[]) {
  return tool({
    description: "the weather in a city",
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => {
      seen.push(city)
      return `${city}: 21°C`
    },
  })
}

function scriptToolTurns() {
  h.server.enqueue(
    {
      text: "Let me check.",
      toolCalls: [
        { id: "m1", name: "weather", arguments: { city: "Lisbon" } },
        { id: "m2", name: "weather", arguments: { city: "Porto" } },
      ],
    },
    (req) => ({
      text: `Summary: ${req.toolResults.map((r) => r.content).join("; ")}`,
      usage: { promptTokens: 20, completionTokens: 6 },
    }),
  )
}

/** streamText over the two scripted tool turns, reading the whole stream as an app would. */
async function streamWeather(model: Parameters<typeof streamText>[0]["model"]) {
  scriptToolTurns()
  const seen: string[] = []
  const result = streamText({
    model,
    prompt: "Weather in Lisbon and Porto?",
    tools: { weather: weatherTool(seen) },
    stopWhen: stepCountIs(3),
  })
  const parts: string[] = []
  let streamed = ""
  for await (const part of result.fullStream) {
    if (part.type === "error") throw part.error
    if (part.type === "text-delta") streamed += part.text
    parts.push(part.type)
  }
  return { result, seen, streamed, parts }
}

describe.each(STYLES)("AI SDK over chat completions (%s upstream)", (style) => {
  async function model() {
    const provider = createOpenAICompatible({
      name: "relay",
      baseURL: await baseURL(style),
      apiKey: "caller",
      includeUsage: true,
      fetch: recordingFetch,
    })
    return provider("any-model")
  }

  it("generateText with a tool round trip (parallel calls)", async () => {
    scriptToolTurns()
    const seen: string[] = []
    const result = await generateText({
      model: await model(),
      prompt: "Weather in Lisbon and Porto?",
      tools: { weather: weatherTool(seen) },
      stopWhen: stepCountIs(3),
    })
    expect(seen.sort()).toEqual(["Lisbon", "Porto"])
    expect(result.text).toBe("Summary: Lisbon: 21°C; Porto: 21°C")
    expect(result.steps.map((s) => s.finishReason)).toEqual(["tool-calls", "stop"])
    expect(result.steps[1]?.usage.inputTokens).toBe(20)
    expect(h.server.requests).toHaveLength(2)
  })

  it("streamText with a tool round trip and usage", async () => {
    const { result, seen, streamed, parts } = await streamWeather(await model())
    expect(streamed).toBe("Let me check.Summary: Lisbon: 21°C; Porto: 21°C")
    expect(await result.text).toBe("Summary: Lisbon: 21°C; Porto: 21°C")
    expect(parts.filter((p) => p === "tool-call")).toHaveLength(2)
    expect(seen.sort()).toEqual(["Lisbon", "Porto"])
    expect((await result.totalUsage).outputTokens).toBe(11)
    expect(sent.every((body) => body.stream === true)).toBe(true)
  })

  it("an upstream 429 is retried by the AI SDK only: maxRetries + 1 upstream requests", async () => {
    h.server.addRule({
      match: () => true,
      reply: { status: 429, text: "rate limited", headers: { "retry-after": "0" } },
    })
    const error = await generateText({ model: await model(), prompt: "hi", maxRetries: 2 }).catch(
      (e: unknown) => e,
    )
    const last = (error as { lastError?: unknown }).lastError ?? error
    expect(APICallError.isInstance(last)).toBe(true)
    expect((last as APICallError).statusCode).toBe(429)
    expect(h.server.requests).toHaveLength(3)
  })
})

describe.each(STYLES)("AI SDK over the Responses API (%s upstream)", (style) => {
  async function model() {
    const openai = createOpenAI({ baseURL: await baseURL(style), apiKey: "caller", fetch: recordingFetch })
    // The provider's default model is the Responses one; say so explicitly all the same.
    return openai.responses("any-model")
  }

  it("generateText: the follow-up's item_reference resolves from the proxy's store", async () => {
    scriptToolTurns()
    const seen: string[] = []
    const result = await generateText({
      model: await model(),
      system: "Be brief.",
      prompt: "Weather in Lisbon and Porto?",
      tools: { weather: weatherTool(seen) },
      stopWhen: stepCountIs(3),
    })
    expect(result.text).toBe("Summary: Lisbon: 21°C; Porto: 21°C")
    expect(seen.sort()).toEqual(["Lisbon", "Porto"])
    // The AI SDK left `store` unset and referred to the text item it got back instead of resending it.
    expect(sent[0].store).toBeUndefined()
    const followUp = sent[1].input as any[]
    expect(followUp.some((item) => item.type === "item_reference" && /^msg_/.test(item.id))).toBe(true)
    expect(followUp.filter((item) => item.type === "function_call_output")).toHaveLength(2)
    expect(h.server.requests).toHaveLength(2)
    expect(h.server.requests[1]?.toolResults.map((r) => r.id)).toEqual(["m1", "m2"])
  })

  it("streamText with a tool round trip", async () => {
    const { result, seen, streamed } = await streamWeather(await model())
    expect(streamed).toBe("Let me check.Summary: Lisbon: 21°C; Porto: 21°C")
    expect(await result.text).toBe("Summary: Lisbon: 21°C; Porto: 21°C")
    expect(seen.sort()).toEqual(["Lisbon", "Porto"])
    expect((await result.steps).map((s) => s.finishReason)).toEqual(["tool-calls", "stop"])
    expect((await result.totalUsage).inputTokens).toBe(30)
  })

  it("a multi-turn chat refers to earlier answers by item_reference", async () => {
    h.server.enqueue({ text: "Paris." }, (req) => ({ text: `You asked: ${req.lastUserText}` }))
    const m = await model()
    const first = await generateText({ model: m, prompt: "Capital of France?" })
    const second = await generateText({
      model: m,
      messages: [
        { role: "user", content: "Capital of France?" },
        ...first.response.messages,
        { role: "user", content: "And Italy?" },
      ],
    })
    expect(second.text).toBe("You asked: And Italy?")
    expect((sent[1].input as any[]).map((item) => item.type ?? item.role)).toEqual([
      "user",
      "item_reference",
      "user",
    ])
    const upstream = h.server.requests[1]?.body
    expect(JSON.stringify(upstream)).toContain("Paris.")
  })
})

describe("AI SDK's OpenAI provider over chat completions (openai.chat)", () => {
  it("streamText with a tool round trip", async () => {
    const openai = createOpenAI({ baseURL: await baseURL("openai"), apiKey: "caller", fetch: recordingFetch })
    const { result, seen, streamed } = await streamWeather(openai.chat("any-model"))
    expect(streamed).toBe("Let me check.Summary: Lisbon: 21°C; Porto: 21°C")
    expect(seen.sort()).toEqual(["Lisbon", "Porto"])
    expect((await result.totalUsage).totalTokens).toBe(41)
    expect(sent.map((body) => body.stream_options)).toEqual([
      { include_usage: true },
      { include_usage: true },
    ])
  })
})
