import { describe, expect, it } from "vitest"
import { chat, fnTool, proxyFor, useHarness } from "./helpers.js"

const h = useHarness()

/** A chat request through `app.request` with a caller key. */
async function chatAs(app: ReturnType<typeof proxyFor>, key: string | undefined, body: unknown) {
  const res = await app.request("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(body),
  })
  return { status: res.status, json: (await res.json()) as any }
}

describe("tool-call ids are scoped to the caller's conversation", () => {
  it("a model reusing one id for two callers: each resumes its own conversation (regression)", async () => {
    const { server, store } = h
    // Both conversations get the very same model id; the reply names whose results it saw.
    server.addRule({
      match: (req) => req.toolResults.length === 0,
      reply: { toolCalls: [{ id: "call_same", name: "whoami", arguments: {} }] },
    })
    server.addRule({
      match: (req) => req.toolResults.length > 0,
      reply: (req) => ({ text: `${req.lastUserText} got ${req.toolResults[0]?.content}` }),
    })
    const app = proxyFor("openai", server, store)
    const tools = [fnTool("whoami")]
    const alice = [{ role: "user", content: "alice asks" }]
    const bob = [{ role: "user", content: "bob asks" }]
    const a1 = await chat(app, { messages: alice, tools })
    const b1 = await chat(app, { messages: bob, tools })
    const aId = a1.json.choices[0].message.tool_calls[0].id
    const bId = b1.json.choices[0].message.tool_calls[0].id
    expect(aId).not.toBe(bId)

    // Alice answers after Bob's halt: she resumes her conversation, not his (the bug resumed the later one).
    const a2 = await chat(app, {
      messages: [...alice, a1.json.choices[0].message, { role: "tool", tool_call_id: aId, content: "ALICE" }],
    })
    expect(a2.json.choices[0].message.content).toBe("alice asks got ALICE")
    const b2 = await chat(app, {
      messages: [...bob, b1.json.choices[0].message, { role: "tool", tool_call_id: bId, content: "BOB" }],
    })
    expect(b2.json.choices[0].message.content).toBe("bob asks got BOB")
    expect(server.requests.map((r) => r.toolResults[0]?.id ?? null)).toEqual([
      null,
      null,
      "call_same",
      "call_same",
    ])
  })

  it("the model's own id resumes nothing", async () => {
    const { server, store } = h
    server.enqueue({ toolCalls: [{ id: "call_0", name: "t", arguments: {} }] })
    const app = proxyFor("openai", server, store)
    const first = await chat(app, { messages: [{ role: "user", content: "go" }], tools: [fnTool("t")] })
    const guess = await chat(app, {
      messages: [
        { role: "user", content: "go" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_0", type: "function", function: { name: "t" } }],
        },
        { role: "tool", tool_call_id: "call_0", content: "guessed" },
      ],
    })
    expect(guess.status).toBe(409)
    expect(first.json.choices[0].message.tool_calls[0].id).not.toBe("call_0")
    expect(server.requests).toHaveLength(1)
  })

  it("with caller keys, another key's tool-call id is unknown to a caller (409), and its owner still resumes", async () => {
    const { server, store } = h
    server.enqueue({ toolCalls: [{ id: "k1", name: "t", arguments: {} }] }, { text: "for A only" })
    const app = proxyFor("openai", server, store, { apiKeys: ["key-a", "key-b"] })
    const messages = [{ role: "user", content: "secret question" }]
    const first = await chatAs(app, "key-a", { messages, tools: [fnTool("t")] })
    const id = first.json.choices[0].message.tool_calls[0].id
    const follow = {
      messages: [
        ...messages,
        first.json.choices[0].message,
        { role: "tool", tool_call_id: id, content: "x" },
      ],
    }

    const stolen = await chatAs(app, "key-b", follow)
    expect(stolen.status).toBe(409)
    expect(stolen.json.error.message).toMatch(/no pending tool call/)
    expect(JSON.stringify(stolen.json)).not.toContain("for A only")
    expect((await chatAs(app, undefined, follow)).status).toBe(401)

    const own = await chatAs(app, "key-a", follow)
    expect(own.status).toBe(200)
    expect(own.json.choices[0].message.content).toBe("for A only")
    expect(server.requests).toHaveLength(2)
  })

  it("results for calls of two different conversations are refused", async () => {
    const { server, store } = h
    server.enqueue(
      { toolCalls: [{ id: "x", name: "t", arguments: {} }] },
      { toolCalls: [{ id: "y", name: "t", arguments: {} }] },
    )
    const app = proxyFor("openai", server, store)
    const a = await chat(app, { messages: [{ role: "user", content: "a" }], tools: [fnTool("t")] })
    const b = await chat(app, { messages: [{ role: "user", content: "b" }], tools: [fnTool("t")] })
    const mixed = await chat(app, {
      messages: [
        { role: "user", content: "a" },
        {
          role: "assistant",
          content: null,
          tool_calls: [...a.json.choices[0].message.tool_calls, ...b.json.choices[0].message.tool_calls],
        },
        { role: "tool", tool_call_id: a.json.choices[0].message.tool_calls[0].id, content: "1" },
        { role: "tool", tool_call_id: b.json.choices[0].message.tool_calls[0].id, content: "2" },
      ],
    })
    expect(mixed.status).toBe(400)
    expect(mixed.json.error.message).toMatch(/different conversations/)
    expect(server.requests).toHaveLength(2)
  })
})

describe("Responses items are scoped to the caller that got them", () => {
  it("another key's item_reference is unknown (400); the owner's resolves", async () => {
    const { server, store } = h
    server.enqueue({ text: "private answer" }, { text: "ok" })
    const app = proxyFor("openai", server, store, { apiKeys: ["key-a", "key-b"] })
    const post = (key: string, body: unknown) =>
      app.request("/v1/responses", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
        body: JSON.stringify(body),
      })
    const first = (await (await post("key-a", { model: "m", input: "tell me" })).json()) as any
    const itemId = first.output[0].id
    const input = [
      { role: "user", content: "tell me" },
      { type: "item_reference", id: itemId },
      { role: "user", content: "more" },
    ]
    const stolen = await post("key-b", { model: "m", input })
    expect(stolen.status).toBe(400)
    expect(JSON.stringify(await stolen.json())).not.toContain("private answer")
    const own = await post("key-a", { model: "m", input })
    expect(own.status).toBe(200)
    expect(JSON.stringify(server.requests[1]?.body)).toContain("private answer")
  })
})
