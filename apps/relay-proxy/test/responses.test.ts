import type OpenAI from "openai"
import { afterEach, describe, expect, it } from "vitest"
import { OpenAIClient, STYLES, listen, proxyFor, useHarness } from "./helpers.js"

const h = useHarness()
let listening: Awaited<ReturnType<typeof listen>> | undefined
afterEach(async () => {
  await listening?.close()
  listening = undefined
})

async function sdk(style: (typeof STYLES)[number] = "openai") {
  listening = await listen(proxyFor(style, h.server, h.store))
  return new OpenAIClient({ baseURL: listening.baseURL, apiKey: "caller", maxRetries: 0 })
}

const lookup: OpenAI.Responses.FunctionTool = {
  type: "function",
  name: "lookup",
  description: "look a word up",
  parameters: { type: "object", properties: { word: { type: "string" } } },
  strict: false,
}

describe.each(STYLES)("POST /v1/responses with the openai SDK (%s upstream)", (style) => {
  it("a function call round trip by call_id, with instructions as the system prompt", async () => {
    h.server.enqueue(
      { text: "Looking up.", toolCalls: [{ id: "u1", name: "lookup", arguments: { word: "relay" } }] },
      (req) => ({
        text: `means ${req.toolResults[0]?.content}`,
        usage: { promptTokens: 9, completionTokens: 2 },
      }),
    )
    const openai = await sdk(style)
    const first = await openai.responses.create({
      model: "any",
      instructions: "Answer in one line.",
      input: "What does relay mean?",
      tools: [lookup],
    })
    expect(first.status).toBe("completed")
    expect(first.output.map((item) => item.type)).toEqual(["message", "function_call"])
    expect(first.output_text).toBe("Looking up.")
    const call = first.output[1] as OpenAI.Responses.ResponseFunctionToolCall
    expect(call).toMatchObject({ name: "lookup", arguments: '{"word":"relay"}', status: "completed" })
    expect(call.id).toMatch(/^fc_/)
    expect(call.call_id).toMatch(/^call_/)
    if (style !== "anthropic") expect(h.server.requests[0]?.system).toBe("Answer in one line.")

    // The usual openai-SDK loop: resend the output items, then the function_call_output.
    const second = await openai.responses.create({
      model: "any",
      input: [
        { role: "user", content: "What does relay mean?" },
        ...(first.output as OpenAI.Responses.ResponseInputItem[]),
        { type: "function_call_output", call_id: call.call_id, output: "to pass on" },
      ],
      tools: [lookup],
    })
    expect(second.output_text).toBe("means to pass on")
    expect(second.usage).toMatchObject({ input_tokens: 9, output_tokens: 2, total_tokens: 11 })
    expect(h.server.requests).toHaveLength(2)
    expect(h.server.requests[1]?.toolResults).toEqual([{ id: "u1", content: "to pass on", isError: false }])
  })

  it("streams the response.* events; a follow-up with only item references and the output resumes", async () => {
    h.server.enqueue(
      { text: "One moment.", toolCalls: [{ id: "u2", name: "lookup", arguments: { word: "x" } }] },
      { text: "Done." },
    )
    const openai = await sdk(style)
    const stream = await openai.responses.create({ model: "any", input: "x?", tools: [lookup], stream: true })
    const events: OpenAI.Responses.ResponseStreamEvent[] = []
    for await (const event of stream) events.push(event)
    // The text streams in the upstream's own pieces: consecutive deltas count as one step here.
    const steps = events.map((e) => e.type).filter((type, i, all) => type !== all[i - 1])
    expect(steps).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.done",
      "response.output_item.done",
      "response.completed",
    ])
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i))
    const done = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent
    const [message, call] = done.response.output as [
      OpenAI.Responses.ResponseOutputMessage,
      OpenAI.Responses.ResponseFunctionToolCall,
    ]
    const deltas = events.filter((e) => e.type === "response.output_text.delta")
    expect(deltas.map((e) => e.delta).join("")).toBe("One moment.")
    expect(new Set(deltas.map((e) => e.item_id))).toEqual(new Set([message.id]))
    const next = await openai.responses.create({
      model: "any",
      input: [
        { role: "user", content: "x?" },
        { type: "item_reference", id: message.id },
        { type: "item_reference", id: call.id! },
        { type: "function_call_output", call_id: call.call_id, output: "42" },
      ],
      stream: true,
    })
    let text = ""
    for await (const event of next) if (event.type === "response.output_text.delta") text += event.delta
    expect(text).toBe("Done.")
    expect(h.server.requests[1]?.toolResults).toEqual([{ id: "u2", content: "42", isError: false }])
    // The stored declarations served the follow-up that sent no tools.
    expect(h.server.requests[1]?.toolNames).toEqual(["lookup"])
  })
})

describe.each(STYLES)("previous_response_id chains (%s upstream)", (style) => {
  it("a function_call_output after previous_response_id resumes; a later user turn gets the whole history", async () => {
    h.server.enqueue(
      { toolCalls: [{ id: "u3", name: "lookup", arguments: { word: "a" } }] },
      (req) => ({ text: `a is ${req.toolResults[0]?.content}` }),
      { text: "b is later" },
    )
    const openai = await sdk(style)
    const first = await openai.responses.create({ model: "any", input: "define a", tools: [lookup] })
    const call = first.output[0] as OpenAI.Responses.ResponseFunctionToolCall
    const second = await openai.responses.create({
      model: "any",
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: call.call_id, output: "first" }],
    })
    expect(second.output_text).toBe("a is first")
    expect(second.previous_response_id).toBe(first.id)
    const third = await openai.responses.create({
      model: "any",
      previous_response_id: second.id,
      input: "and b?",
    })
    expect(third.output_text).toBe("b is later")
    const upstream = JSON.stringify(h.server.requests[2]?.body)
    for (const part of ["define a", "first", "a is first", "and b?"]) expect(upstream).toContain(part)
    expect(h.server.requests).toHaveLength(3)
  })
})

describe("POST /v1/responses errors", () => {
  async function post(body: unknown) {
    const app = proxyFor("openai", h.server, h.store)
    const res = await app.request("/v1/responses", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    })
    return { status: res.status, json: (await res.json()) as any }
  }

  it.each([
    ["an unknown previous_response_id", { input: "hi", previous_response_id: "resp_1" }, /names no response/],
    ["an unknown item_reference", { input: [{ type: "item_reference", id: "msg_nope" }] }, /names no item/],
    ["a built-in tool", { input: "hi", tools: [{ type: "web_search" }] }, /only function tools/],
    [
      "an image input",
      { input: [{ role: "user", content: [{ type: "input_image", image_url: "x" }] }] },
      /only text/,
    ],
    ["an unsupported item", { input: [{ type: "computer_call", id: "c" }] }, /"computer_call" item/],
    ["an empty input", { input: [] }, /input must not be empty/],
    ["a missing input", {}, /input must be a string or an array/],
  ])("%s ⇒ 400", async (_name, body, message) => {
    const res = await post(body)
    expect(res.status).toBe(400)
    expect(res.json.error.type).toBe("invalid_request_error")
    expect(res.json.error.message).toMatch(message)
    expect(h.server.requests).toHaveLength(0)
  })

  it("store: false keeps the items out of the item store", async () => {
    h.server.enqueue({ text: "not kept" })
    const first = await post({ input: "hi", store: false })
    expect(first.json.store).toBe(false)
    const again = await post({ input: [{ type: "item_reference", id: first.json.output[0].id }] })
    expect(again.status).toBe(400)
  })

  it("an upstream 429 keeps its status, shape and Retry-After", async () => {
    h.server.enqueue({ status: 429, text: "too many", headers: { "retry-after": "7" } })
    const app = proxyFor("openai", h.server, h.store)
    const res = await app.request("/v1/responses", { method: "POST", body: JSON.stringify({ input: "hi" }) })
    expect(res.status).toBe(429)
    expect(res.headers.get("retry-after")).toBe("7")
    expect(((await res.json()) as any).error).toMatchObject({
      type: "rate_limit_exceeded",
      message: /too many/,
    })
  })
})
