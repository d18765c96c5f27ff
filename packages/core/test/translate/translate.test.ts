import { readFileSync } from "node:fs"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { ConfigError, LLMHttpError, createClient, createToolkit, defineTool } from "../../src/index.js"

// Upstream's JS port's translate() through a recording fetch: the exact bodies (SOURCES.md).
const here = path.dirname(fileURLToPath(import.meta.url))
const expected = JSON.parse(
  readFileSync(path.join(here, "../fixtures/upstream-toolkit/translate.json"), "utf8"),
) as {
  cases: {
    label: string
    style: "openai" | "anthropic"
    clientOptions: Record<string, unknown>
    request: Record<string, unknown>
    reply: unknown
    url: string
    body: string
    result: unknown
  }[]
}

/** A fetch that records each request and answers with `reply`. */
function recorder(reply: unknown, status = 200) {
  const sent: { url: string; body: string }[] = []
  const fetch = (async (url: string | URL, init?: { body?: unknown }) => {
    sent.push({ url: String(url), body: String(init?.body) })
    return new Response(JSON.stringify(reply), { status, headers: { "content-type": "application/json" } })
  }) as unknown as typeof globalThis.fetch
  return { sent, fetch }
}

const echo = defineTool({
  name: "echo",
  description: "Echo",
  inputSchema: { type: "object", properties: { s: { type: "string" } } },
  run: () => {
    throw new Error("translate must never execute a tool")
  },
})

describe("translate, byte for byte upstream's request bodies", () => {
  for (const c of expected.cases) {
    it(`${c.label}`, async () => {
      const { sent, fetch } = recorder(c.reply)
      const client = createClient({
        baseUrl: "http://127.0.0.1:9",
        style: c.style,
        model: "stub-model",
        apiKey: "k",
        fetch,
        ...c.clientOptions,
      })
      const { toolkit, ...request } = c.request
      const result = await client.translate({
        ...(request as { messages: unknown[] }),
        ...(toolkit ? { toolkit: await createToolkit({ extraTools: [echo] }) } : {}),
      })
      expect(sent).toEqual([{ url: c.url, body: c.body }])
      const { raw, ...rest } = result
      expect(rest).toEqual(c.result)
      expect(raw).toEqual(c.reply)
    })
  }
})

describe("translate: one request, nothing else", () => {
  it("applies requestParams, then bodyTransform, to its one body, as run does", async () => {
    const { sent, fetch } = recorder(expected.cases[0]?.reply)
    const client = createClient({
      baseUrl: "http://127.0.0.1:9",
      style: "anthropic",
      model: "m",
      fetch,
      requestParams: { temperature: 0.2, metadata: { user_id: "u1" } },
      bodyTransform: (body) => ({ ...body, top_k: 3, temperature: 0.1 }),
    })
    await client.translate({ messages: [{ role: "user", content: "hi" }] })
    expect(sent).toHaveLength(1)
    const body = JSON.parse(sent[0]?.body ?? "{}")
    expect(body).toMatchObject({ model: "m", metadata: { user_id: "u1" }, top_k: 3, temperature: 0.1 })
    expect(body.messages).toEqual([{ role: "user", content: "hi" }])
  })

  it("runs beforeLLM and afterLLM once, no tool hooks, and saves nothing", async () => {
    const seen: string[] = []
    const { sent, fetch } = recorder(expected.cases[0]?.reply)
    const client = createClient({
      baseUrl: "http://127.0.0.1:9",
      style: "anthropic",
      model: "m",
      fetch,
      hooks: {
        beforeLLM: ({ messages }) => {
          seen.push(`before ${messages.length}`)
          return { messages: [{ role: "user", content: "replaced" }] }
        },
        afterLLM: ({ response }) =>
          void seen.push(`after ${response.toolCalls.map((c) => c.name).join(",")}`),
        beforeTool: () => void seen.push("tool"),
      },
    })
    await client.translate({
      messages: [
        { role: "user", content: "a" },
        { role: "user", content: "b" },
      ],
    })
    expect(seen).toEqual(["before 2", "after get_weather,alpha"])
    expect(JSON.parse(sent[0]?.body ?? "{}").messages).toEqual([{ role: "user", content: "replaced" }])
    expect(client.metrics()).toContain('toolnexus_llm_requests_total{model="m",status="ok"} 1')
  })

  it("retries a 503 like run does, and a 400 is a typed error", async () => {
    let calls = 0
    const fetch = (async () => {
      calls++
      return calls === 1
        ? new Response("busy", { status: 503 })
        : new Response(JSON.stringify({ choices: [{ message: { content: "ok" }, finish_reason: "stop" }] }), {
            status: 200,
          })
    }) as unknown as typeof globalThis.fetch
    const client = createClient({
      baseUrl: "http://127.0.0.1:9",
      style: "openai",
      model: "m",
      fetch,
      retryBaseMs: 1,
    })
    expect((await client.translate({ messages: [{ role: "user", content: "hi" }] })).text).toBe("ok")
    expect(calls).toBe(2)
    const bad = createClient({
      baseUrl: "http://127.0.0.1:9",
      style: "openai",
      model: "m",
      fetch: recorder({}, 400).fetch,
    })
    await expect(bad.translate({ messages: [] })).rejects.toBeInstanceOf(LLMHttpError)
    await expect(bad.translate({} as never)).rejects.toBeInstanceOf(ConfigError)
  })

  it("openai-responses: messages as items, calls by call_id", async () => {
    const { sent, fetch } = recorder({
      output: [
        { type: "message", content: [{ type: "output_text", text: "calling" }] },
        {
          type: "function_call",
          id: "fc_1",
          call_id: "call_9",
          name: "get_weather",
          arguments: '{"city":"Oslo"}',
        },
      ],
      usage: { input_tokens: 4, output_tokens: 2 },
    })
    const client = createClient({
      baseUrl: "http://127.0.0.1:9",
      style: "openai-responses",
      model: "m",
      fetch,
    })
    const result = await client.translate({
      messages: [
        { role: "system", content: "S" },
        { role: "user", content: "hi" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }],
        },
        { role: "tool", tool_call_id: "c1", content: "r" },
      ],
      tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }],
      toolChoice: "required",
      maxTokens: 20,
    })
    expect(JSON.parse(sent[0]?.body ?? "{}")).toEqual({
      model: "m",
      input: [
        { role: "system", content: "S" },
        { role: "user", content: "hi" },
        { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
        { type: "function_call_output", call_id: "c1", output: "r" },
      ],
      store: false,
      tools: [{ type: "function", name: "get_weather", parameters: { type: "object" } }],
      tool_choice: "required",
      max_output_tokens: 20,
    })
    expect(result.toolCalls).toEqual([{ id: "call_9", name: "get_weather", arguments: '{"city":"Oslo"}' }])
    expect(result.finishReason).toBe("tool_calls")
    expect(result.usage).toEqual({ promptTokens: 4, completionTokens: 2, totalTokens: 6 })
  })
})
