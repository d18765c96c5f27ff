import type OpenAI from "openai"
import { afterEach, describe, expect, it } from "vitest"
import { OpenAIClient, STYLES, fnTool, listen, proxyFor, useHarness } from "./helpers.js"

// `model`, `temperature` and `tool_choice` through the official `openai` SDK: the model id is
// echoed, the other two reach the upstream request in its own form, or the SDK gets a 400.
const h = useHarness()
let listening: Awaited<ReturnType<typeof listen>> | undefined
afterEach(async () => {
  await listening?.close()
  listening = undefined
})

async function sdk(style: (typeof STYLES)[number]) {
  listening = await listen(proxyFor(style, h.server, h.store))
  return new OpenAIClient({ baseURL: listening.baseURL, apiKey: "caller-key", maxRetries: 0 })
}

const weather = fnTool("get_weather", { city: { type: "string" } }) as OpenAI.ChatCompletionTool
const weatherFn = {
  type: "function",
  name: "get_weather",
  parameters: { type: "object" },
  strict: false,
} as const
const ask: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "Weather in Oslo?" }]

/** The upstream's form of "call get_weather" and of "call some tool". */
const named = {
  openai: { type: "function", function: { name: "get_weather" } },
  anthropic: { type: "tool", name: "get_weather" },
  "openai-responses": { type: "function", name: "get_weather" },
}
const required = { openai: "required", anthropic: { type: "any" }, "openai-responses": "required" }

async function refusal(call: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(OpenAIClient.BadRequestError)
  return error as InstanceType<typeof OpenAI.APIError>
}

describe.each(STYLES)("caller parameters (%s upstream)", (style) => {
  it("echoes the caller's model id; the upstream is asked with its own model", async () => {
    h.server.enqueue({ text: "Hi." }, { text: "Hi again." }, { text: "Streamed." })
    const openai = await sdk(style)
    const chat = await openai.chat.completions.create({ model: "gpt-4.1-mini", messages: ask })
    expect(chat.model).toBe("gpt-4.1-mini")
    const response = await openai.responses.create({ model: "gpt-5", input: "hi" })
    expect(response.model).toBe("gpt-5")
    const stream = await openai.chat.completions.create({ model: "my-alias", messages: ask, stream: true })
    const models = new Set<string>()
    for await (const chunk of stream) models.add(chunk.model)
    expect([...models]).toEqual(["my-alias"])
    expect(h.server.requests.map((r) => r.body.model)).toEqual(Array(3).fill("upstream-model"))
  })

  it("passes temperature and a named tool_choice to the upstream, on the resume too", async () => {
    h.server.enqueue(
      { toolCalls: [{ id: "up_1", name: "get_weather", arguments: { city: "Oslo" } }] },
      (req) => ({
        text: `Oslo: ${req.toolResults[0]?.content}`,
      }),
    )
    const openai = await sdk(style)
    const params = {
      model: "any",
      tools: [weather],
      temperature: 0.2,
      tool_choice: { type: "function", function: { name: "get_weather" } },
    } satisfies Omit<OpenAI.ChatCompletionCreateParamsNonStreaming, "messages">
    const first = await openai.chat.completions.create({ ...params, messages: ask })
    const message = first.choices[0]!.message
    const call = message.tool_calls![0]!
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      ...ask,
      message,
      { role: "tool", tool_call_id: call.id, content: "-3°C" },
    ]
    const second = await openai.chat.completions.create({ ...params, tool_choice: "none", messages })
    expect(second.choices[0]?.message.content).toBe("Oslo: -3°C")
    const [one, two] = h.server.requests.map((r) => r.body)
    expect(one).toMatchObject({ temperature: 0.2, tool_choice: named[style] })
    const none = style === "anthropic" ? { type: "none" } : "none"
    expect(two).toMatchObject({ temperature: 0.2, tool_choice: none })
  })

  it("passes the Responses API's tool_choice forms", async () => {
    h.server.enqueue({ text: "a" }, { text: "b" })
    const openai = await sdk(style)
    await openai.responses.create({ model: "any", input: "hi", tools: [weatherFn], tool_choice: "required" })
    await openai.responses.create({
      model: "any",
      input: "hi",
      tools: [weatherFn],
      tool_choice: { type: "function", name: "get_weather" },
    })
    expect(h.server.requests.map((r) => r.body.tool_choice)).toEqual([required[style], named[style]])
  })

  it("without tool_choice or temperature the upstream request has neither", async () => {
    h.server.enqueue({ text: "a" })
    const openai = await sdk(style)
    await openai.chat.completions.create({ model: "any", messages: ask, tools: [weather] })
    const body = h.server.requests[0]!.body
    expect(body.temperature).toBeUndefined()
    // Anthropic's wire has no default choice; OpenAI's says auto by omission.
    expect(body.tool_choice).toBeUndefined()
  })

  it("refuses a tool_choice naming a tool the request does not declare, asking nothing upstream", async () => {
    const openai = await sdk(style)
    const error = await refusal(
      openai.chat.completions.create({
        model: "any",
        messages: ask,
        tools: [weather],
        tool_choice: { type: "function", function: { name: "delete_everything" } },
      }),
    )
    expect(error.status).toBe(400)
    expect(error.param).toBe("tool_choice")
    expect(error.message).toContain('"delete_everything", which is not in tools')
    const responses = await refusal(
      openai.responses.create({ model: "any", input: "hi", tool_choice: "required" }),
    )
    expect(responses.message).toContain('"required" needs at least one tool')
    expect(h.server.requests).toHaveLength(0)
  })

  it("refuses a temperature the upstream cannot take, and a malformed tool_choice", async () => {
    const openai = await sdk(style)
    const max = style === "anthropic" ? 1 : 2
    const hot = await refusal(
      openai.chat.completions.create({ model: "any", messages: ask, temperature: max + 0.5 }),
    )
    expect(hot.param).toBe("temperature")
    expect(hot.message).toContain(`temperature must be a number from 0 to ${max} for this upstream model`)
    const odd = await refusal(
      openai.chat.completions.create({
        model: "any",
        messages: ask,
        tools: [weather],
        tool_choice: { type: "custom", custom: { name: "x" } },
      }),
    )
    expect(odd.param).toBe("tool_choice")
    expect(h.server.requests).toHaveLength(0)
  })
})
