import { readFileSync } from "node:fs"
import { type EndpointStyle, createClient } from "@toolnexus/core"
import type OpenAI from "openai"
import { zodResponseFormat } from "openai/helpers/zod"
import { afterEach, describe, expect, it } from "vitest"
import { z } from "zod"
import { createRelayProxy } from "../src/app.js"
import { OpenAIClient, fnTool, listen, useHarness } from "./helpers.js"

// Real provider replies recorded by other projects' test suites (core's replay corpus, sources in
// packages/core/test/replay/SOURCES.md), served as the upstream through the client's fetch seam
// and read back through the proxy by the openai SDK.
const h = useHarness()
let listening: Awaited<ReturnType<typeof listen>> | undefined
afterEach(async () => {
  await listening?.close()
  listening = undefined
})

const recording = (name: string) =>
  readFileSync(new URL(`../../../packages/core/test/replay/${name}`, import.meta.url), "utf8")
const recorded = (name: string) => JSON.parse(recording(name))

/** A proxy whose upstream answers with the given recordings in order; `sent` collects its requests. */
async function replaying(style: EndpointStyle, ...names: string[]) {
  const sent: any[] = []
  const queue = names.map(recording)
  const client = createClient({
    baseUrl: style === "anthropic" ? "http://127.0.0.1:9" : "http://127.0.0.1:9/v1",
    style,
    model: "recorded-model",
    apiKey: "k",
    retries: 0,
    fetch: async (_url, init) => {
      sent.push(JSON.parse(String(init?.body)))
      const body = queue.shift()
      if (body === undefined) throw new Error("no recording left")
      return new Response(body, { status: 200, headers: { "content-type": "application/json" } })
    },
    store: h.store,
  })
  listening = await listen(createRelayProxy({ client, store: h.store, style }))
  return { openai: new OpenAIClient({ baseURL: listening.baseURL, apiKey: "k", maxRetries: 0 }), sent }
}

const weather = fnTool("weather", { location: { type: "string" } }) as OpenAI.ChatCompletionTool
const ask = (content: string) => ({ model: "m", messages: [{ role: "user" as const, content }] })

describe("recorded OpenAI-compatible chat replies", () => {
  it.each([
    [
      "compat-chat-tool-call.json",
      "call_962bfd2ab8f54b89a1161356",
      { prompt_tokens: 295, completion_tokens: 22 },
    ],
    [
      "deepseek-chat-tool-call.json",
      "call_00_9V0vrf86Pc9aelHCJMZqnJBo",
      { prompt_tokens: 339, completion_tokens: 92 },
    ],
  ])("%s: the tool call reaches the caller and its result resumes the run", async (file, modelId, usage) => {
    const { openai, sent } = await replaying("openai", file, "openai-chat-text.json")
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: "user", content: "Weather in San Francisco?" },
    ]
    const first = await openai.chat.completions.create({ model: "m", messages, tools: [weather] })
    const message = first.choices[0]!.message
    expect(first.choices[0]?.finish_reason).toBe("tool_calls")
    const call = message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall
    // The raw arguments string is passed on as the model wrote it (with its space).
    expect(call.function).toEqual({ name: "weather", arguments: '{"location": "San Francisco"}' })
    expect(call.id).not.toBe(modelId)
    expect(first.usage).toMatchObject(usage)

    messages.push(message, { role: "tool", tool_call_id: call.id, content: "foggy, 14°C" })
    const second = await openai.chat.completions.create({ model: "m", messages, tools: [weather] })
    expect(second.choices[0]?.message.content).toBe(
      recorded("openai-chat-text.json").choices[0].message.content,
    )
    expect(second.usage).toMatchObject({ prompt_tokens: 16, completion_tokens: 363 })
    // Upstream got the model's own id back with the caller's result.
    expect(sent[1].messages.at(-1)).toEqual({ role: "tool", tool_call_id: modelId, content: "foggy, 14°C" })
  })

  it("openai-chat-structured.json: parse() gets the recorded structured answer", async () => {
    const { openai, sent } = await replaying("openai", "openai-chat-structured.json")
    const res = await openai.chat.completions.parse({
      ...ask("weather in SF"),
      response_format: zodResponseFormat(
        z.object({ city: z.string(), units: z.enum(["c", "f"]) }),
        "location",
      ),
    })
    expect(res.choices[0]?.message.parsed).toEqual({ city: "San Francisco", units: "c" })
    expect(sent[0].response_format.json_schema.name).toBe("location")
  })
})

describe("recorded Anthropic replies", () => {
  it("anthropic-text.json: text and usage", async () => {
    const { openai } = await replaying("anthropic", "anthropic-text.json")
    const res = await openai.chat.completions.create(ask("How are you?"))
    expect(res.choices[0]?.message.content).toBe(
      "Hello! I'm doing well, thanks for asking. How are you doing today? Is there anything I can help you with?",
    )
    expect(res.usage).toEqual({ prompt_tokens: 12, completion_tokens: 29, total_tokens: 41 })
  })

  it("anthropic-refusal.json: a refusal with finish_reason stop, in chat and in Responses", async () => {
    const { openai } = await replaying("anthropic", "anthropic-refusal.json", "anthropic-refusal.json")
    const res = await openai.chat.completions.create(ask("something forbidden"))
    expect(res.choices[0]).toMatchObject({ finish_reason: "stop", message: { content: null, refusal: "" } })
    const response = await openai.responses.create({ model: "m", input: "something forbidden" })
    expect((response.output[0] as OpenAI.Responses.ResponseOutputMessage).content).toEqual([
      { type: "refusal", refusal: "" },
    ])
  })

  it("anthropic-web-search.json: server-tool blocks are not the caller's tool calls; the text arrives", async () => {
    const { openai } = await replaying("anthropic", "anthropic-web-search.json")
    const res = await openai.chat.completions.create({ ...ask("tech news today?"), tools: [weather] })
    expect(res.choices[0]?.finish_reason).toBe("stop")
    expect(res.choices[0]?.message.tool_calls).toBeUndefined()
    expect(res.choices[0]?.message.content).toMatch(/^Let me search for more specific tech news from today/)
    expect(res.usage?.prompt_tokens).toBe(27118)
  })
})

describe("recorded Responses API replies (openai-responses upstream)", () => {
  it.each([
    ["responses-reasoning-tools.json", /Final result: 570$/],
    ["responses-web-search.json", /./],
  ])("%s: the final message reaches chat and Responses callers", async (file, text) => {
    const { openai } = await replaying("openai-responses", file, file)
    const res = await openai.chat.completions.create(ask("q"))
    expect(res.choices[0]?.message.content).toMatch(text)
    const upstreamUsage = recorded(file).usage
    expect(res.usage).toMatchObject({
      prompt_tokens: upstreamUsage.input_tokens,
      completion_tokens: upstreamUsage.output_tokens,
    })
    const response = await openai.responses.create({ model: "m", input: "q" })
    expect(response.output_text).toBe(res.choices[0]?.message.content)
    // Only the final message is the caller's: reasoning and web-search items stay upstream.
    expect(response.output.map((item) => item.type)).toEqual(["message"])
  })
})
