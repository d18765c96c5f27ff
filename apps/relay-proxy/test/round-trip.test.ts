import { describe, expect, it } from "vitest"
import { CONVERSATION_HEADER } from "../src/app.js"
import { STYLES, chat, fnTool, proxyFor, useHarness } from "./helpers.js"

const h = useHarness()

describe.each(STYLES)("relay round trip (%s upstream)", (style) => {
  it("returns the model's tool call, then resumes with the caller's result without re-asking", async () => {
    const { server, store } = h
    server.enqueue(
      {
        text: "Let me look.",
        toolCalls: [{ id: "call_w1", name: "get_weather", arguments: { city: "Paris" } }],
      },
      (req) => ({
        text: `It is ${req.toolResults[0]?.content}.`,
        usage: { promptTokens: 30, completionTokens: 7 },
      }),
    )
    const app = proxyFor(style, server, store)
    const tools = [fnTool("get_weather", { city: { type: "string" } })]
    const history = [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Weather in Paris?" },
    ]

    const first = await chat(app, { model: "whatever", messages: history, tools })
    expect(first.status).toBe(200)
    const choice = first.json.choices[0]
    expect(choice.finish_reason).toBe("tool_calls")
    expect(choice.message.content).toBe("Let me look.")
    expect(choice.message.tool_calls).toEqual([
      {
        id: expect.any(String),
        type: "function",
        function: { name: "get_weather", arguments: '{"city":"Paris"}' },
      },
    ])
    // The caller gets a fresh id of this conversation, never the model's own (see scoping.test.ts).
    const callId = choice.message.tool_calls[0].id
    expect(callId).toMatch(/^call_[\w-]{20,}$/)
    expect(callId).not.toBe("call_w1")
    expect(first.json.object).toBe("chat.completion")
    const conversation = first.headers.get(CONVERSATION_HEADER)
    expect(conversation).toMatch(/^conv-/)
    expect(server.requests[0]?.toolNames).toEqual(["get_weather"])
    if (style !== "anthropic") expect(server.requests[0]?.system).toBe("Be brief.")
    else expect(server.requests[0]?.lastUserText).toBe("[system]\nBe brief.\nWeather in Paris?")

    const second = await chat(app, {
      messages: [...history, choice.message, { role: "tool", tool_call_id: callId, content: "18°C, sunny" }],
      tools,
    })
    expect(second.status).toBe(200)
    expect(second.json.choices[0].finish_reason).toBe("stop")
    expect(second.json.choices[0].message).toMatchObject({ role: "assistant", content: "It is 18°C, sunny." })
    expect(second.json.choices[0].message.tool_calls).toBeUndefined()
    expect(second.json.usage).toEqual({ prompt_tokens: 30, completion_tokens: 7, total_tokens: 37 })
    expect(second.headers.get(CONVERSATION_HEADER)).toBe(conversation)

    // Exactly two upstream requests: the halted turn was continued, not asked again.
    expect(server.requests).toHaveLength(2)
    expect(server.requests[1]?.toolResults).toEqual([
      { id: "call_w1", content: "18°C, sunny", isError: false },
    ])
    expect(server.requests[1]?.toolNames).toEqual(["get_weather"])

    // The stored transcript is balanced: one result for the one call, no placeholder, no pending.
    const stored = (await store.get(conversation!)) as any[]
    const shapes = {
      openai: ["system", "user", "assistant", "tool", "assistant"],
      anthropic: ["user", "assistant", "user", "assistant"],
      "openai-responses": [
        "system",
        "user",
        "assistant",
        "function_call",
        "function_call_output",
        "assistant",
      ],
    }
    expect(stored.map((m) => m.role ?? m.type)).toEqual(shapes[style])
    expect(JSON.stringify(stored)).not.toContain("executed by the caller")
    expect(await store.getPending(conversation!)).toBeUndefined()
  })

  it("three relay calls come back in one response and are answered in one follow-up", async () => {
    const { server, store } = h
    server.enqueue(
      {
        toolCalls: [
          { id: "r1", name: "read_file", arguments: { path: "a.txt" } },
          { id: "r2", name: "read_file", arguments: { path: "b.txt" } },
          { id: "r3", name: "list_dir", arguments: { dir: "." } },
        ],
      },
      (req) => ({ text: req.toolResults.map((r) => `${r.id}=${r.content}`).join(";") }),
    )
    const app = proxyFor(style, server, store)
    const messages: any[] = [{ role: "user", content: "Summarise my files" }]
    const tools = [fnTool("read_file"), fnTool("list_dir")]
    const first = await chat(app, { messages, tools })
    const message = first.json.choices[0].message
    expect(first.json.choices[0].finish_reason).toBe("tool_calls")
    expect(message.content).toBeNull()
    expect(message.tool_calls.map((c: any) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ["read_file", { path: "a.txt" }],
      ["read_file", { path: "b.txt" }],
      ["list_dir", { dir: "." }],
    ])
    const [r1, r2, r3] = message.tool_calls.map((c: any) => c.id)

    // Answered out of order, and without re-declaring the tools: the stored declarations are used.
    const second = await chat(app, {
      messages: [
        ...messages,
        message,
        { role: "tool", tool_call_id: r3, content: "a.txt b.txt" },
        { role: "tool", tool_call_id: r1, content: [{ type: "text", text: "AAA" }] },
        { role: "tool", tool_call_id: r2, content: "BBB" },
      ],
    })
    expect(second.json.choices[0].message.content).toBe("r1=AAA;r2=BBB;r3=a.txt b.txt")
    expect(server.requests).toHaveLength(2)
    expect(server.requests[1]?.toolNames).toEqual(["read_file", "list_dir"])
  })

  it("a call the caller left unanswered reaches the model as an explicit error result", async () => {
    const { server, store } = h
    server.enqueue(
      {
        toolCalls: [
          { id: "r1", name: "read_file", arguments: { path: "a" } },
          { id: "r2", name: "read_file", arguments: { path: "b" } },
          { id: "r3", name: "read_file", arguments: { path: "c" } },
        ],
      },
      { text: "partial summary" },
    )
    const app = proxyFor(style, server, store)
    const messages: any[] = [{ role: "user", content: "read a, b, c" }]
    const first = await chat(app, { messages, tools: [fnTool("read_file")] })
    const [r1, , r3] = first.json.choices[0].message.tool_calls.map((c: any) => c.id)
    const second = await chat(app, {
      messages: [
        ...messages,
        first.json.choices[0].message,
        { role: "tool", tool_call_id: r1, content: "A" },
        { role: "tool", tool_call_id: r3, content: "C" },
      ],
      tools: [fnTool("read_file")],
    })
    expect(second.status).toBe(200)
    expect(second.json.choices[0].message.content).toBe("partial summary")
    const results = server.requests[1]?.toolResults ?? []
    expect(results.map((r) => r.id)).toEqual(["r1", "r2", "r3"])
    expect(results[0]).toMatchObject({ content: "A", isError: false })
    expect(results[1]?.content).toMatch(/no result was supplied for relay call r2/)
    // Only Anthropic's wire has an error flag for tool results.
    expect(results[1]?.isError).toBe(style === "anthropic")
    expect(results[2]).toMatchObject({ content: "C", isError: false })
  })

  it("a resumed run may call tools again: a second tool_calls response, then the answer", async () => {
    const { server, store } = h
    server.enqueue(
      { toolCalls: [{ id: "s1", name: "search", arguments: { q: "x" } }] },
      { toolCalls: [{ id: "s2", name: "search", arguments: { q: "y" } }] },
      (req) => ({ text: `done with ${req.toolResults[0]?.content}` }),
    )
    const app = proxyFor(style, server, store)
    const tools = [fnTool("search")]
    const messages: any[] = [{ role: "user", content: "search twice" }]
    const r1 = await chat(app, { messages, tools })
    const s1 = r1.json.choices[0].message.tool_calls[0].id
    messages.push(r1.json.choices[0].message, { role: "tool", tool_call_id: s1, content: "X" })
    const r2 = await chat(app, { messages, tools })
    expect(r2.json.choices[0].finish_reason).toBe("tool_calls")
    const s2 = r2.json.choices[0].message.tool_calls[0].id
    expect(s2).not.toBe(s1)
    expect(server.requests[1]?.toolResults[0]?.id).toBe("s1")
    expect(r2.headers.get("x-relay-conversation")).toBe(r1.headers.get("x-relay-conversation"))
    messages.push(r2.json.choices[0].message, { role: "tool", tool_call_id: s2, content: "Y" })
    const r3 = await chat(app, { messages, tools })
    expect(r3.json.choices[0].message.content).toBe("done with Y")
    expect(server.requests).toHaveLength(3)
  })
})

describe("plain conversations", () => {
  it("a request without tools is answered directly and nothing is stored", async () => {
    const { server, store } = h
    server.enqueue({ text: "4" })
    const app = proxyFor("openai", server, store)
    const res = await chat(app, { messages: [{ role: "user", content: "2+2?" }] })
    expect(res.status).toBe(200)
    expect(res.json.choices[0]).toMatchObject({ finish_reason: "stop", message: { content: "4" } })
    expect(res.json.usage).toEqual({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 })
    expect(res.json.model).toBe("upstream-model")
    expect(res.headers.get("x-relay-conversation")).toBeNull()
    expect(server.requests[0]?.toolNames).toEqual([])
    expect(await store.listPending()).toEqual([])
  })
})
