import { afterEach, describe, expect, it } from "vitest"
import { createFakeLLMServer, type FakeLLMServer, type FakeLLMServerOptions } from "./index.js"

const OPENAI = "/v1/chat/completions"
const ANTHROPIC = "/v1/messages"

const servers: FakeLLMServer[] = []

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

async function start(options?: FakeLLMServerOptions): Promise<FakeLLMServer> {
  const server = await createFakeLLMServer(options)
  servers.push(server)
  return server
}

function post(server: FakeLLMServer, path: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  const payload = typeof body === "string" ? body : JSON.stringify(body)
  const headers = { "content-type": "application/json", "X-Test-Header": "yes" }
  return fetch(`${server.url}${path}`, { method: "POST", body: payload, headers, ...init })
}

/** Response.json() is typed `unknown`; these tests poke at wire shapes freely. */
function json(res: Response): Promise<any> {
  return res.json()
}

async function postJson(server: FakeLLMServer, path: string, body: unknown): Promise<any> {
  return json(await post(server, path, body))
}

const user = (text: string) => ({ model: "m-1", messages: [{ role: "user", content: text }] })

interface Frame {
  event?: string
  data: string
}

/** A deliberately small SSE parser: frames end with a blank line, fields are `event:` and `data:`. */
function parseSse(text: string): Frame[] {
  expect(text.endsWith("\n\n")).toBe(true)
  return text
    .split("\n\n")
    .filter((block) => block !== "")
    .map((block) => {
      const frame: Frame = { data: "" }
      for (const line of block.split("\n")) {
        const colon = line.indexOf(": ")
        const field = line.slice(0, colon)
        const value = line.slice(colon + 2)
        if (field === "event") frame.event = value
        else if (field === "data") frame.data = value
        else throw new Error(`unexpected SSE line: ${line}`)
      }
      return frame
    })
}

async function until(condition: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time")
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

describe("createFakeLLMServer", () => {
  it("listens on 127.0.0.1 with a random port per server", async () => {
    const a = await start()
    const b = await start()
    expect(a.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    expect(a.url).not.toBe(b.url)
  })
})

describe("OpenAI wire format", () => {
  it("answers a non-streaming text reply as a chat.completion", async () => {
    const server = await start({ replies: [{ text: "Hello there" }] })
    const res = await post(server, OPENAI, user("hi"))
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toContain("application/json")
    const body = await json(res)
    expect(body).toMatchObject({
      object: "chat.completion",
      model: "m-1",
      choices: [{ index: 0, message: { role: "assistant", content: "Hello there" }, finish_reason: "stop" }],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    })
    expect(body.id).toMatch(/^chatcmpl-/)
    expect(typeof body.created).toBe("number")
    expect(body.choices[0].message.tool_calls).toBeUndefined()
  })

  it("answers tool calls with string arguments, unique ids and finish_reason tool_calls", async () => {
    const server = await start({
      replies: [
        {
          toolCalls: [
            { name: "add", arguments: { a: 1, b: 2 } },
            { name: "echo", arguments: '{"broken": ' },
            { id: "call_mine", name: "add", arguments: {} },
          ],
          usage: { promptTokens: 7, completionTokens: 3 },
        },
      ],
    })
    const body = await postJson(server, OPENAI, user("add"))
    const { message, finish_reason } = body.choices[0]
    expect(finish_reason).toBe("tool_calls")
    expect(message.content).toBeNull()
    expect(message.tool_calls).toHaveLength(3)
    const [first, second, third] = message.tool_calls
    expect(first).toEqual({
      id: expect.stringMatching(/^call_/),
      type: "function",
      function: { name: "add", arguments: '{"a":1,"b":2}' },
    })
    expect(second.function.arguments).toBe('{"broken": ')
    expect(second.id).toMatch(/^call_/)
    expect(second.id).not.toBe(first.id)
    expect(third.id).toBe("call_mine")
    expect(body.usage).toEqual({ prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 })
  })

  it("streams text as chat.completion.chunk frames ending with usage and [DONE]", async () => {
    const server = await start({ replies: [{ text: "Streaming works fine" }] })
    const res = await post(server, OPENAI, { ...user("hi"), stream: true })
    expect(res.headers.get("content-type")).toBe("text/event-stream")
    const frames = parseSse(await res.text())
    expect(frames.every((frame) => frame.event === undefined)).toBe(true)
    expect(frames.at(-1)!.data).toBe("[DONE]")
    const chunks = frames.slice(0, -1).map((frame) => JSON.parse(frame.data))
    for (const chunk of chunks) {
      expect(chunk).toMatchObject({ object: "chat.completion.chunk", model: "m-1" })
      expect(chunk.id).toBe(chunks[0].id)
    }
    expect(chunks[0].choices[0].delta).toEqual({ role: "assistant", content: "" })
    const usage = chunks.at(-1)
    expect(usage.choices).toEqual([])
    expect(usage.usage).toEqual({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 })
    const finish = chunks.at(-2)
    expect(finish.choices[0]).toMatchObject({ delta: {}, finish_reason: "stop" })
    const textChunks = chunks.slice(1, -2)
    expect(textChunks.length).toBeGreaterThanOrEqual(2)
    for (const chunk of textChunks) expect(chunk.choices[0].finish_reason).toBeNull()
    expect(textChunks.map((chunk) => chunk.choices[0].delta.content).join("")).toBe("Streaming works fine")
  })

  it("streams tool calls announced by index, then fragmented and interleaved arguments", async () => {
    const server = await start({
      replies: [
        {
          text: "Let me check",
          toolCalls: [
            { name: "weather", arguments: { city: "Paris" } },
            { id: "call_x", name: "raw", arguments: "{not json" },
          ],
        },
      ],
    })
    const res = await post(server, OPENAI, { ...user("weather?"), stream: true })
    const chunks = parseSse(await res.text())
      .filter((frame) => frame.data !== "[DONE]")
      .map((frame) => JSON.parse(frame.data))
    const deltas = chunks.filter((chunk) => chunk.choices.length > 0).map((chunk) => chunk.choices[0].delta)
    const text = deltas.map((delta) => delta.content ?? "").join("")
    expect(text).toBe("Let me check")
    const toolDeltas = deltas.flatMap((delta) => delta.tool_calls ?? [])
    const announcements = toolDeltas.filter((delta) => delta.id !== undefined)
    expect(announcements).toEqual([
      {
        index: 0,
        id: expect.stringMatching(/^call_/),
        type: "function",
        function: { name: "weather", arguments: "" },
      },
      { index: 1, id: "call_x", type: "function", function: { name: "raw", arguments: "" } },
    ])
    const fragments = toolDeltas.filter((delta) => delta.id === undefined)
    const of = (index: number) => fragments.filter((delta) => delta.index === index)
    expect(of(0).length).toBeGreaterThanOrEqual(2)
    expect(of(1).length).toBeGreaterThanOrEqual(2)
    // Interleaved: call 1 gets a fragment before call 0 has all of its fragments.
    const order = fragments.map((delta) => delta.index)
    expect(order.indexOf(1)).toBeLessThan(order.lastIndexOf(0))
    // Each call is announced before any of its fragments.
    for (const index of [0, 1]) {
      const announced = toolDeltas.findIndex((delta) => delta.index === index && delta.id !== undefined)
      expect(announced).toBe(toolDeltas.findIndex((delta) => delta.index === index))
    }
    const args = (index: number) =>
      of(index)
        .map((delta) => delta.function.arguments)
        .join("")
    expect(JSON.parse(args(0))).toEqual({ city: "Paris" })
    expect(args(1)).toBe("{not json")
    const finish = chunks.find((chunk) => chunk.choices[0]?.finish_reason)
    expect(finish.choices[0].finish_reason).toBe("tool_calls")
  })

  it("also serves /chat/completions (a base URL without /v1)", async () => {
    const server = await start({ replies: [{ text: "ok" }] })
    const body = await postJson(server, "/chat/completions?api-version=1", user("hi"))
    expect(body.choices[0].message.content).toBe("ok")
    expect(server.requests[0]).toMatchObject({ style: "openai", path: "/chat/completions" })
  })
})

describe("Anthropic wire format", () => {
  it("answers a non-streaming reply as a message with text and tool_use blocks", async () => {
    const server = await start({
      replies: [
        {
          text: "Calling tools",
          toolCalls: [
            { name: "add", arguments: { a: 1 } },
            { name: "valid_raw", arguments: '{"x": [1, 2]}' },
            { name: "invalid_raw", arguments: "{oops" },
          ],
          usage: { promptTokens: 42, completionTokens: 8 },
        },
      ],
    })
    const body = await postJson(server, ANTHROPIC, { ...user("go"), max_tokens: 100 })
    expect(body).toMatchObject({
      type: "message",
      role: "assistant",
      model: "m-1",
      stop_reason: "tool_use",
      stop_sequence: null,
      usage: { input_tokens: 42, output_tokens: 8 },
    })
    expect(body.id).toMatch(/^msg_/)
    expect(body.content).toEqual([
      { type: "text", text: "Calling tools" },
      { type: "tool_use", id: expect.stringMatching(/^toolu_/), name: "add", input: { a: 1 } },
      { type: "tool_use", id: expect.stringMatching(/^toolu_/), name: "valid_raw", input: { x: [1, 2] } },
      { type: "tool_use", id: expect.stringMatching(/^toolu_/), name: "invalid_raw", input: {} },
    ])
    const ids = new Set(body.content.slice(1).map((block: any) => block.id))
    expect(ids.size).toBe(3)
  })

  it("answers a text-only reply with stop_reason end_turn and default usage", async () => {
    const server = await start({ replies: [{ text: "Done" }] })
    const body = await postJson(server, ANTHROPIC, user("hi"))
    expect(body.content).toEqual([{ type: "text", text: "Done" }])
    expect(body.stop_reason).toBe("end_turn")
    expect(body.usage).toEqual({ input_tokens: 10, output_tokens: 5 })
  })

  it("streams named events with text_delta and input_json_delta fragments", async () => {
    const server = await start({
      replies: [
        {
          text: "Thinking about it",
          toolCalls: [
            { id: "toolu_given", name: "lookup", arguments: { query: "cats" } },
            { name: "raw", arguments: "{half" },
          ],
          usage: { promptTokens: 12, completionTokens: 9 },
        },
      ],
    })
    const res = await post(server, ANTHROPIC, { ...user("hi"), stream: true })
    expect(res.headers.get("content-type")).toBe("text/event-stream")
    const frames = parseSse(await res.text())
    const events = frames.map((frame) => ({ event: frame.event, data: JSON.parse(frame.data) }))
    for (const { event, data } of events) expect(data.type).toBe(event)
    const names = events.map(({ event }) => event)
    expect(names.slice(0, 3)).toEqual(["message_start", "ping", "content_block_start"])
    expect(names.slice(-2)).toEqual(["message_delta", "message_stop"])

    const start0 = events[0]!.data.message
    expect(start0).toMatchObject({ type: "message", role: "assistant", model: "m-1", content: [] })
    expect(start0.id).toMatch(/^msg_/)
    expect(start0.usage.input_tokens).toBe(12)

    const blocks = (index: number) =>
      events.filter(({ data }) => data.index === index).map(({ data }) => data)
    const text = blocks(0)
    expect(text[0].content_block).toEqual({ type: "text", text: "" })
    expect(text.at(-1)).toEqual({ type: "content_block_stop", index: 0 })
    const textDeltas = text.slice(1, -1).map((data) => data.delta)
    expect(textDeltas.length).toBeGreaterThanOrEqual(2)
    expect(textDeltas.every((delta) => delta.type === "text_delta")).toBe(true)
    expect(textDeltas.map((delta) => delta.text).join("")).toBe("Thinking about it")

    for (const [index, expected] of [
      [1, { id: "toolu_given", name: "lookup", json: '{"query":"cats"}' }],
      [2, { id: expect.stringMatching(/^toolu_/), name: "raw", json: "{half" }],
    ] as const) {
      const tool = blocks(index)
      expect(tool[0].content_block).toEqual({
        type: "tool_use",
        id: expected.id,
        name: expected.name,
        input: {},
      })
      expect(tool.at(-1).type).toBe("content_block_stop")
      const deltas = tool.slice(1, -1).map((data) => data.delta)
      expect(deltas.every((delta) => delta.type === "input_json_delta")).toBe(true)
      expect(deltas.filter((delta) => delta.partial_json !== "").length).toBeGreaterThanOrEqual(2)
      expect(deltas.map((delta) => delta.partial_json).join("")).toBe(expected.json)
    }

    const delta = events.at(-2)!.data
    expect(delta.delta.stop_reason).toBe("tool_use")
    expect(delta.usage.output_tokens).toBe(9)
  })

  it("streams end_turn for a text-only reply", async () => {
    const server = await start({ replies: [{ text: "ok" }] })
    const frames = parseSse(await (await post(server, ANTHROPIC, { ...user("hi"), stream: true })).text())
    const delta = frames.find((frame) => frame.event === "message_delta")!
    expect(JSON.parse(delta.data).delta.stop_reason).toBe("end_turn")
    expect(frames.filter((frame) => frame.event === "content_block_start")).toHaveLength(1)
  })
})

describe("Responses wire format", () => {
  const RESPONSES = "/v1/responses"
  const input = (text: string, extra: Record<string, unknown> = {}) => ({
    model: "m-1",
    instructions: "Be brief.",
    input: [{ role: "user", content: [{ type: "input_text", text }] }],
    ...extra,
  })

  it("answers with a response object: message and function_call items whose call_id is the call id", async () => {
    const server = await start({
      replies: [{ text: "hi", toolCalls: [{ id: "call_a", name: "get", arguments: { q: 1 } }] }],
    })
    const body = await postJson(server, RESPONSES, input("hello"))
    expect(body).toMatchObject({ object: "response", status: "completed", model: "m-1" })
    expect(body.output).toEqual([
      expect.objectContaining({
        type: "message",
        role: "assistant",
        content: [{ type: "output_text", text: "hi", annotations: [] }],
      }),
      expect.objectContaining({
        type: "function_call",
        call_id: "call_a",
        name: "get",
        arguments: '{"q":1}',
      }),
    ])
    expect(body.output[1].id).toMatch(/^fc_/)
    expect(body.usage).toEqual({ input_tokens: 10, output_tokens: 5, total_tokens: 15 })
    const [view] = server.requests
    expect([view?.style, view?.system, view?.lastUserText]).toEqual([
      "openai-responses",
      "Be brief.",
      "hello",
    ])
  })

  it("streams event: + data: frames without [DONE], ending with response.completed", async () => {
    const server = await start({ replies: [{ text: "Hello there" }] })
    const frames = parseSse(await (await post(server, "/responses", input("x", { stream: true }))).text())
    expect(frames.every((f) => f.event !== undefined && JSON.parse(f.data).type === f.event)).toBe(true)
    expect(frames.map((f) => f.event)).toEqual([
      "response.created",
      "response.output_item.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_item.done",
      "response.completed",
    ])
    const deltas = frames
      .filter((f) => f.event === "response.output_text.delta")
      .map((f) => JSON.parse(f.data).delta)
    expect(deltas.join("")).toBe("Hello there")
  })

  it("scripts refusals, cut-offs and a nested error event", async () => {
    const server = await start({
      replies: [
        { refusal: "No." },
        { text: "par", cutOff: "maxOutputTokens" },
        { streamError: { type: "server_error" } },
      ],
    })
    const refused = await postJson(server, RESPONSES, input("a"))
    expect(refused.output[0].content).toEqual([{ type: "refusal", refusal: "No." }])
    const cut = await postJson(server, RESPONSES, input("b"))
    expect([cut.status, cut.incomplete_details]).toEqual(["incomplete", { reason: "max_output_tokens" }])
    const frames = parseSse(await (await post(server, RESPONSES, input("c", { stream: true }))).text())
    expect(frames).toHaveLength(1)
    expect(frames[0]?.event).toBe("error")
    expect(JSON.parse(frames[0]?.data ?? "{}").error).toMatchObject({ type: "server_error" })
  })

  it("reports function_call_output items after the last turn as tool results", async () => {
    const server = await start({ fallback: { text: "ok" } })
    await postJson(server, RESPONSES, {
      model: "m",
      input: [
        { role: "user", content: "go" },
        { type: "function_call", call_id: "c1", name: "t", arguments: "{}" },
        { type: "function_call_output", call_id: "c1", output: "done" },
      ],
      tools: [{ type: "function", name: "t", parameters: {} }],
    })
    expect(server.requests[0]?.toolResults).toEqual([{ id: "c1", content: "done", isError: false }])
    expect(server.requests[0]?.toolNames).toEqual(["t"])
  })
})

describe("routing and malformed requests", () => {
  it("answers unknown routes and other methods with 404 without recording them", async () => {
    const server = await start({ fallback: { text: "never" } })
    expect((await post(server, "/v1/completions", user("hi"))).status).toBe(404)
    const get = await fetch(`${server.url}${OPENAI}`)
    expect(get.status).toBe(404)
    expect((await json(get)).error.message).toContain("GET /v1/chat/completions")
    expect(server.requests).toHaveLength(0)
  })

  it("answers a non-JSON body with 400 in the style's error shape", async () => {
    const server = await start({ fallback: { text: "never" } })
    const openai = await post(server, OPENAI, "{not json")
    expect(openai.status).toBe(400)
    expect(await json(openai)).toMatchObject({
      error: { type: "invalid_request_error", message: expect.any(String) },
    })
    const anthropic = await post(server, ANTHROPIC, "[1, 2]")
    expect(anthropic.status).toBe(400)
    expect(await json(anthropic)).toMatchObject({ type: "error", error: { type: "invalid_request_error" } })
    expect(server.requests).toHaveLength(0)
  })
})

describe("reply selection", () => {
  const textOf = async (res: Response): Promise<string> => (await json(res)).choices[0].message.content

  it("tries rules in order, honours times, then the queue (FIFO), then the fallback", async () => {
    const server = await start({
      rules: [
        { match: "weather", reply: { text: "rule: weather once" }, times: 1 },
        { match: /^wea/, reply: { text: "rule: regexp" } },
        { match: (req) => req.toolNames.includes("special"), reply: { text: "rule: predicate" } },
      ],
      replies: [{ text: "queued 1" }, () => ({ text: "queued 2" })],
      fallback: (req) => ({ text: `fallback for #${req.index}` }),
    })
    const say = (text: string, extra = {}) => post(server, OPENAI, { ...user(text), ...extra })
    expect(await textOf(await say("weather in Paris"))).toBe("rule: weather once")
    expect(await textOf(await say("weather in Paris"))).toBe("rule: regexp")
    expect(
      await textOf(await say("other", { tools: [{ type: "function", function: { name: "special" } }] })),
    ).toBe("rule: predicate")
    expect(await textOf(await say("other"))).toBe("queued 1")
    expect(await textOf(await say("other"))).toBe("queued 2")
    expect(await textOf(await say("other"))).toBe("fallback for #5")
    expect(await textOf(await say("weather again"))).toBe("rule: regexp")
  })

  it("does not let a global RegExp's lastIndex skip matches", async () => {
    const server = await start({ rules: [{ match: /ping/g, reply: { text: "pong" } }] })
    expect(await textOf(await post(server, OPENAI, user("ping")))).toBe("pong")
    expect(await textOf(await post(server, OPENAI, user("ping")))).toBe("pong")
  })

  it("fails loudly with a 500 naming the request when nothing is scripted", async () => {
    const server = await start({ replies: [{ text: "only one" }] })
    await post(server, OPENAI, user("first"))
    const openai = await post(server, OPENAI, user('say "second"'))
    expect(openai.status).toBe(500)
    const { error } = await json(openai)
    expect(error.message).toContain("no scripted reply for request #1")
    expect(error.message).toContain('"say \\"second\\""')
    expect(error.code).toBe("no_scripted_reply")
    const anthropic = await post(server, ANTHROPIC, user("third"))
    expect(anthropic.status).toBe(500)
    const body = await json(anthropic)
    expect(body).toMatchObject({ type: "error", error: { type: "api_error" } })
    expect(body.error.message).toContain('request #2 (lastUserText: "third")')
  })

  it("answers 500 when a reply function throws", async () => {
    const server = await start({
      replies: [
        () => {
          throw new Error("boom")
        },
      ],
    })
    const res = await post(server, OPENAI, user("hi"))
    expect(res.status).toBe(500)
    expect((await json(res)).error.message).toContain("boom")
  })

  it("addRule/enqueue extend the script; reset clears all but the fallback", async () => {
    const server = await start({ fallback: { text: "fallback" } })
    server.addRule({ match: "a", reply: { text: "rule a" } })
    server.addRule({ match: "a", reply: { text: "shadowed" } })
    server.enqueue({ text: "q1" }, { text: "q2" })
    expect(await textOf(await post(server, OPENAI, user("a")))).toBe("rule a")
    expect(await textOf(await post(server, OPENAI, user("b")))).toBe("q1")
    const held = server.requests
    expect(held).toHaveLength(2)
    server.reset()
    expect(held).toHaveLength(0)
    expect(await textOf(await post(server, OPENAI, user("a")))).toBe("fallback")
    expect(server.requests.map((req) => req.index)).toEqual([0])
  })
})

describe("request recording", () => {
  it("extracts the OpenAI system prompt, last user text, tool results and tool names", async () => {
    const server = await start({ fallback: { text: "ok" } })
    await post(server, OPENAI, {
      model: "gpt-test",
      stream: true,
      tools: [
        { type: "function", function: { name: "add", parameters: {} } },
        { type: "function", function: { name: "echo" } },
      ],
      messages: [
        { role: "system", content: "You are terse." },
        { role: "user", content: "old question" },
        { role: "assistant", content: null, tool_calls: [{ id: "c0", type: "function", function: {} }] },
        { role: "tool", tool_call_id: "c0", content: "stale result" },
        {
          role: "user",
          content: [
            { type: "text", text: "new" },
            { type: "text", text: "question" },
          ],
        },
        { role: "assistant", content: null, tool_calls: [] },
        { role: "tool", tool_call_id: "c1", content: "3" },
        { role: "tool", tool_call_id: "c2", content: [{ type: "text", text: "parts" }] },
      ],
    })
    const [req] = server.requests
    expect(req).toMatchObject({
      index: 0,
      style: "openai",
      path: OPENAI,
      stream: true,
      model: "gpt-test",
      system: "You are terse.",
      lastUserText: "new\nquestion",
      toolNames: ["add", "echo"],
      toolResults: [
        { id: "c1", content: "3", isError: false },
        { id: "c2", content: "parts", isError: false },
      ],
    })
    expect(req!.headers["x-test-header"]).toBe("yes")
    expect(req!.body.messages).toHaveLength(8)
  })

  it("extracts the Anthropic system prompt, last user text, tool results and tool names", async () => {
    const server = await start({ fallback: { text: "ok" } })
    await post(server, ANTHROPIC, {
      model: "claude-test",
      max_tokens: 10,
      system: [{ type: "text", text: "Be kind." }],
      tools: [{ name: "lookup", input_schema: {} }],
      messages: [
        { role: "user", content: "find cats" },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "lookup", input: {} }] },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "t1", content: "2 cats" },
            {
              type: "tool_result",
              tool_use_id: "t2",
              content: [{ type: "text", text: "failed" }],
              is_error: true,
            },
          ],
        },
      ],
    })
    await post(server, ANTHROPIC, { model: "claude-test", system: "Plain", messages: [] })
    const [first, second] = server.requests
    expect(first).toMatchObject({
      index: 0,
      style: "anthropic",
      stream: false,
      model: "claude-test",
      system: "Be kind.",
      lastUserText: "find cats",
      toolNames: ["lookup"],
      toolResults: [
        { id: "t1", content: "2 cats", isError: false },
        { id: "t2", content: "failed", isError: true },
      ],
    })
    expect(second).toMatchObject({
      index: 1,
      system: "Plain",
      lastUserText: "",
      toolNames: [],
      toolResults: [],
    })
  })
})

describe("scripted failures", () => {
  it("sends a status with headers and an error body in each style's shape", async () => {
    const limited = { status: 429, headers: { "Retry-After": "1" }, text: "slow down" }
    const server = await start({ replies: [limited, limited, { status: 529 }] })
    const openai = await post(server, OPENAI, { ...user("hi"), stream: true })
    expect(openai.status).toBe(429)
    expect(openai.headers.get("retry-after")).toBe("1")
    expect(openai.headers.get("content-type")).toContain("application/json")
    expect(await json(openai)).toMatchObject({ error: { message: "slow down", type: expect.any(String) } })
    const anthropic = await post(server, ANTHROPIC, user("hi"))
    expect(anthropic.status).toBe(429)
    expect(await json(anthropic)).toEqual({
      type: "error",
      error: { type: "rate_limit_error", message: "slow down" },
    })
    const overloaded = await post(server, ANTHROPIC, user("hi"))
    expect(overloaded.status).toBe(529)
    expect((await json(overloaded)).error.type).toBe("overloaded_error")
  })

  it("adds scripted headers to successful replies too", async () => {
    const server = await start({ replies: [{ text: "ok", headers: { "x-request-id": "req_1" } }] })
    const res = await post(server, ANTHROPIC, { ...user("hi"), stream: true })
    expect(res.headers.get("x-request-id")).toBe("req_1")
    expect(res.headers.get("content-type")).toBe("text/event-stream")
  })

  it("sends rawBody verbatim", async () => {
    const server = await start({
      replies: [
        { rawBody: "<html>not json</html>" },
        { rawBody: '{"object":"chat.completion"}' },
        { status: 502, rawBody: "Bad Gateway", headers: { "content-type": "text/plain" } },
        { rawBody: "data: {broken\n\n" },
      ],
    })
    const html = await post(server, OPENAI, user("hi"))
    expect(html.status).toBe(200)
    expect(await html.text()).toBe("<html>not json</html>")
    expect(await json(await post(server, OPENAI, user("hi")))).toEqual({ object: "chat.completion" })
    const gateway = await post(server, ANTHROPIC, user("hi"))
    expect(gateway.status).toBe(502)
    expect(gateway.headers.get("content-type")).toBe("text/plain")
    expect(await gateway.text()).toBe("Bad Gateway")
    const sse = await post(server, OPENAI, { ...user("hi"), stream: true })
    expect(sse.headers.get("content-type")).toBe("text/event-stream")
    expect(await sse.text()).toBe("data: {broken\n\n")
  })

  it("waits delayMs before answering", async () => {
    const server = await start({ replies: [{ text: "late", delayMs: 150 }] })
    const began = Date.now()
    const body = await postJson(server, OPENAI, user("hi"))
    expect(Date.now() - began).toBeGreaterThanOrEqual(140)
    expect(body.choices[0].message.content).toBe("late")
  })

  it("frees a delayed request when the client disconnects", async () => {
    const server = await start({ replies: [{ text: "late", delayMs: 60_000 }] })
    const controller = new AbortController()
    const pending = post(server, OPENAI, user("hi"), { signal: controller.signal })
    await until(() => server.inFlight === 1 && server.requests.length === 1)
    controller.abort()
    await expect(pending).rejects.toThrow(/abort/i)
    await until(() => server.inFlight === 0)
  })

  it("hangs until the client aborts", async () => {
    const server = await start({ replies: [{ hang: true }, { text: "after" }] })
    const controller = new AbortController()
    let settled = false
    const pending = post(server, ANTHROPIC, user("hi"), { signal: controller.signal }).finally(() => {
      settled = true
    })
    await until(() => server.requests.length === 1)
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(settled).toBe(false)
    expect(server.inFlight).toBe(1)
    controller.abort()
    await expect(pending).rejects.toMatchObject({ name: "AbortError" })
    await until(() => server.inFlight === 0)
    expect((await postJson(server, ANTHROPIC, user("again"))).content[0].text).toBe("after")
  })

  it("drops the connection without a response", async () => {
    const server = await start({ replies: [{ dropConnection: true }, { text: "still alive" }] })
    await expect(post(server, OPENAI, user("hi"))).rejects.toThrow(TypeError)
    expect(server.requests).toHaveLength(1)
    expect((await postJson(server, OPENAI, user("hi"))).choices[0].message.content).toBe("still alive")
  })

  it("close() ends hanging requests and keep-alive connections, and is idempotent", async () => {
    const server = await createFakeLLMServer({ replies: [{ text: "warm-up" }], fallback: { hang: true } })
    // Leaves an idle keep-alive socket in fetch's pool.
    await postJson(server, OPENAI, user("warm-up"))
    const pending = post(server, OPENAI, user("hang"))
    const outcome = pending.then(
      () => "resolved",
      () => "rejected",
    )
    await until(() => server.requests.length === 2)
    const began = Date.now()
    await Promise.all([server.close(), server.close()])
    expect(Date.now() - began).toBeLessThan(1000)
    expect(await outcome).toBe("rejected")
    await expect(fetch(`${server.url}${OPENAI}`, { method: "POST", body: "{}" })).rejects.toThrow(TypeError)
  })
})
