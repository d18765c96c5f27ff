import { createClient } from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import { DEFAULT_MAX_BODY_BYTES, createRelayProxy } from "../src/app.js"
import { API_KEY, STYLES, chat, fnTool, listen, proxyFor, useHarness } from "./helpers.js"

const h = useHarness()

describe("malformed requests ⇒ 400 in OpenAI's error shape", () => {
  const cases: [string, unknown, RegExp][] = [
    ["invalid JSON", "{not json", /not valid JSON/],
    ["a non-object body", "[1, 2]", /must be a JSON object/],
    ["no messages", { model: "m" }, /messages must be a non-empty array/],
    ["empty messages", { messages: [] }, /messages must be a non-empty array/],
    ["an unknown role", { messages: [{ role: "robot", content: "hi" }] }, /messages\[0\]\.role/],
    ["image content", { messages: [{ role: "user", content: [{ type: "image_url" }] }] }, /only text/],
    [
      "a non-boolean stream",
      { stream: "yes", messages: [{ role: "user", content: "hi" }] },
      /stream must be a boolean/,
    ],
    [
      "a non-function tool",
      { messages: [{ role: "user", content: "hi" }], tools: [{ type: "x" }] },
      /tools\[0\]/,
    ],
    [
      "an invalid tool name",
      { messages: [{ role: "user", content: "hi" }], tools: [fnTool("has space")] },
      /tools: .*has space/,
    ],
    [
      "a duplicate tool name",
      { messages: [{ role: "user", content: "hi" }], tools: [fnTool("a"), fnTool("a")] },
      /duplicate tool name/,
    ],
    [
      "an assistant message last",
      {
        messages: [
          { role: "user", content: "hi" },
          { role: "assistant", content: "yo" },
        ],
      },
      /last message must be a user message/,
    ],
    ["a tool message without id", { messages: [{ role: "tool", content: "x" }] }, /tool_call_id/],
  ]
  it.each(cases)("%s", async (_name, body, message) => {
    const { server, store } = h
    const res = await chat(proxyFor("openai", server, store), body)
    expect(res.status).toBe(400)
    expect(res.json.error.type).toBe("invalid_request_error")
    expect(res.json.error.message).toMatch(message)
    expect(server.requests).toHaveLength(0)
  })

  it("unknown routes are a 404 in the same shape", async () => {
    const { server, store } = h
    const res = await proxyFor("openai", server, store).request("/v1/embeddings", { method: "POST" })
    expect(res.status).toBe(404)
    expect(((await res.json()) as any).error.message).toMatch(/no route for POST \/v1\/embeddings/)
  })
})

describe("tool results that answer nothing pending ⇒ 409", () => {
  it("unknown tool_call ids", async () => {
    const { server, store } = h
    const res = await chat(proxyFor("openai", server, store), {
      messages: [
        { role: "user", content: "hi" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "nope", type: "function", function: { name: "t" } }],
        },
        { role: "tool", tool_call_id: "nope", content: "x" },
      ],
    })
    expect(res.status).toBe(409)
    expect(res.json.error.message).toMatch(/no pending tool call with id "nope" is known/)
    expect(server.requests).toHaveLength(0)
  })

  it("a second delivery of results already applied, and results for calls not in the request", async () => {
    const { server, store } = h
    server.enqueue({ toolCalls: [{ id: "c1", name: "t", arguments: {} }] }, { text: "done" })
    const app = proxyFor("openai", server, store)
    const messages: any[] = [{ role: "user", content: "go" }]
    const first = await chat(app, { messages, tools: [fnTool("t")] })
    const c1 = first.json.choices[0].message.tool_calls[0].id

    const stray = await chat(app, {
      messages: [
        ...messages,
        first.json.choices[0].message,
        { role: "tool", tool_call_id: c1, content: "ok" },
        { role: "tool", tool_call_id: c1, content: "again" },
      ],
    })
    expect(stray.status).toBe(400)
    expect(stray.json.error.message).toContain(`two tool results answer the tool call "${c1}"`)

    const extra = await chat(app, {
      messages: [
        ...messages,
        first.json.choices[0].message,
        { role: "tool", tool_call_id: c1, content: "ok" },
        { role: "tool", tool_call_id: "zz", content: "?" },
      ],
    })
    expect(extra.status).toBe(400)
    expect(extra.json.error.message).toContain(
      `tool call id "zz" is not one of the pending tool calls ("${c1}")`,
    )

    const follow = [
      ...messages,
      first.json.choices[0].message,
      { role: "tool", tool_call_id: c1, content: "ok" },
    ]
    const done = await chat(app, { messages: follow })
    expect(done.status).toBe(200)
    // The same results again (an SDK retrying a request whose response it lost): the same
    // answer, replayed without a model call.
    const again = await chat(app, { messages: follow })
    expect(again.status).toBe(200)
    expect(again.json.choices[0].message.content).toBe("done")
    expect(again.headers.get("x-relay-conversation")).toBe(done.headers.get("x-relay-conversation"))
    // Other results for the answered call: a conflict.
    const other = await chat(app, {
      messages: [
        ...messages,
        first.json.choices[0].message,
        { role: "tool", tool_call_id: c1, content: "changed" },
      ],
    })
    expect(other.status).toBe(409)
    expect(other.json.error.type).toBe("conflict_error")
    expect(other.json.error.message).toMatch(/already answered with other results/)
    expect(other.headers.get("x-should-retry")).toBe("false")
    expect(server.requests).toHaveLength(2)
  })

  it("two simultaneous deliveries of the same results resume the run once", async () => {
    const { server, store } = h
    server.enqueue({ toolCalls: [{ id: "c1", name: "t", arguments: {} }] }, { text: "once", delayMs: 50 })
    const app = proxyFor("openai", server, store)
    const messages: any[] = [{ role: "user", content: "go" }]
    const first = await chat(app, { messages, tools: [fnTool("t")] })
    const follow = {
      messages: [
        ...messages,
        first.json.choices[0].message,
        { role: "tool", tool_call_id: first.json.choices[0].message.tool_calls[0].id, content: "ok" },
      ],
    }
    const both = await Promise.all([chat(app, follow), chat(app, follow)])
    expect(both.map((r) => r.status).sort()).toEqual([200, 409])
    // The loser is told to retry, and its retry gets the winner's answer replayed.
    const loser = both.find((r) => r.status === 409)!
    expect(loser.headers.get("x-should-retry")).toBe("true")
    expect(loser.headers.get("retry-after")).toBe("1")
    const retry = await chat(app, follow)
    expect(retry.json.choices[0].message.content).toBe("once")
    expect(server.requests).toHaveLength(2)
  })

  it("results arriving after pendingTtlMs are a 410 naming the request and its expiresAt", async () => {
    const { server, store } = h
    server.enqueue({ toolCalls: [{ id: "c1", name: "t", arguments: {} }] })
    const client = createClient({
      baseUrl: `${server.url}/v1`,
      style: "openai",
      model: "m",
      apiKey: "k",
      store,
    })
    // A clock a minute behind: the results' deadline has passed before they arrive, no waiting.
    const logged: { level: string; message: string; data?: Record<string, unknown> }[] = []
    const logger = {
      info: (message: string, data?: Record<string, unknown>) =>
        logged.push({ level: "info", message, data }),
      error: (message: string, data?: Record<string, unknown>) =>
        logged.push({ level: "error", message, data }),
    }
    const app = createRelayProxy({ client, store, pendingTtlMs: 1, now: () => Date.now() - 60_000, logger })
    const messages: any[] = [{ role: "user", content: "go" }]
    const first = await chat(app, { messages, tools: [fnTool("t")] })
    const late = await chat(app, {
      messages: [
        ...messages,
        first.json.choices[0].message,
        { role: "tool", tool_call_id: first.json.choices[0].message.tool_calls[0].id, content: "ok" },
      ],
    })
    expect(late.status).toBe(410)
    expect(late.headers.get("x-should-retry")).toBe("false")
    const pending = (await store.listPending())[0]?.request
    expect(pending?.expiresAt).toBeDefined()
    expect(late.json.error).toMatchObject({
      code: "answer_expired",
      param: "messages",
      requestId: pending?.id,
      expiresAt: pending?.expiresAt,
    })
    expect(late.json.error.message).toMatch(/expired at/)
    // Refused results are logged at info, with the code and no stack.
    expect(logged).toEqual([
      {
        level: "info",
        message: expect.stringMatching(/^refused: POST \/v1\/chat\/completions 410: /),
        data: expect.objectContaining({ status: 410, code: "answer_expired" }),
      },
    ])
    expect(logged[0]?.message).not.toMatch(/\n\s+at /)
  })
})

describe.each(STYLES)("upstream failure keeps its status (%s)", (style) => {
  it("carries the upstream message but never the API key", async () => {
    const { server, store } = h
    // Real providers echo (parts of) a rejected key; even then it must not reach the caller.
    server.enqueue({ status: 500, text: `overloaded; key ${API_KEY} is fine` })
    const errors: { message: string; data?: Record<string, unknown> }[] = []
    const logger = {
      info: () => {},
      error: (message: string, data?: Record<string, unknown>) => errors.push({ message, data }),
    }
    const res = await chat(proxyFor(style, server, store, { logger }), {
      messages: [{ role: "user", content: "hi" }],
      tools: [fnTool("t")],
    })
    expect(res.status).toBe(500)
    expect(res.json.error.type).toBe(style === "anthropic" ? "api_error" : "server_error")
    expect(res.json.error.message).toMatch(/HTTP 500/)
    expect(res.json.error.message).toMatch(/overloaded/)
    expect(JSON.stringify(res.json)).not.toContain(API_KEY)
    expect(JSON.stringify(res.json)).not.toContain("very-secret")
    // The failure is logged at error with its code, as scrubbed as the body.
    expect(errors).toHaveLength(1)
    expect(errors[0]?.data).toMatchObject({ status: 500, code: "TNX_LLM_HTTP" })
    expect(errors[0]?.message).toMatch(/HTTP 500/)
    expect(JSON.stringify(errors)).not.toContain(API_KEY)
    // The key did travel upstream: its absence above is redaction, not a missing key.
    const sent = server.requests[0]?.headers
    expect(sent?.authorization ?? sent?.["x-api-key"]).toContain(API_KEY)
  })

  it("a failed resume keeps the results: the caller's retry finishes the run", async () => {
    const { server, store } = h
    server.enqueue(
      { toolCalls: [{ id: "c1", name: "t", arguments: {} }] },
      { status: 503, text: "try later" },
      (req) => ({ text: `got ${req.toolResults[0]?.content}` }),
    )
    const app = proxyFor(style, server, store)
    const messages: any[] = [{ role: "user", content: "go" }]
    const first = await chat(app, { messages, tools: [fnTool("t")] })
    const follow = {
      messages: [
        ...messages,
        first.json.choices[0].message,
        { role: "tool", tool_call_id: first.json.choices[0].message.tool_calls[0].id, content: "R" },
      ],
    }
    expect((await chat(app, follow)).status).toBe(503)
    const retry = await chat(app, follow)
    expect(retry.status).toBe(200)
    expect(retry.json.choices[0].message.content).toBe("got R")
  })
})

describe("request body limit", () => {
  const body = (bytes: number) => {
    const head = '{"messages":[{"role":"user","content":"'
    const tail = '"}]}'
    return head + "x".repeat(bytes - head.length - tail.length) + tail
  }

  it("1 MiB by default: one byte more is a 413 in OpenAI's shape, exactly 1 MiB is served", async () => {
    const { server, store } = h
    server.enqueue({ text: "fits" })
    const app = proxyFor("openai", server, store)
    const over = await chat(app, body(DEFAULT_MAX_BODY_BYTES + 1))
    expect(over.status).toBe(413)
    expect(over.headers.get("x-should-retry")).toBe("false")
    expect(over.json.error).toEqual({
      message: "the request body exceeds 1048576 bytes",
      type: "invalid_request_error",
      param: null,
      code: "request_too_large",
    })
    expect(server.requests).toHaveLength(0)
    const exact = await chat(app, body(DEFAULT_MAX_BODY_BYTES))
    expect(exact.status).toBe(200)
  })

  it("a chunked body without content-length is counted as it arrives", async () => {
    const { server, store } = h
    const app = proxyFor("openai", server, store, { maxBodyBytes: 1000 })
    const chunks = [body(800), "          "]
    const stream = new ReadableStream({
      pull(controller) {
        const next = chunks.shift()
        if (next === undefined) controller.close()
        else controller.enqueue(new TextEncoder().encode(next.repeat(2)))
      },
    })
    const res = await app.request("/v1/responses", {
      method: "POST",
      body: stream,
      duplex: "half",
    } as RequestInit)
    expect(res.status).toBe(413)
    expect(server.requests).toHaveLength(0)
  })

  it("a 20 MB body sent to a listening proxy is refused without being read", async () => {
    const { server, store } = h
    const listening = await listen(proxyFor("openai", server, store))
    try {
      const res = await fetch(`${listening.baseURL}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: body(20 * 1024 * 1024),
      })
      expect(res.status).toBe(413)
      expect(((await res.json()) as any).error.code).toBe("request_too_large")
    } finally {
      await listening.close()
    }
  })
})

describe("upstream failures map to the caller's status", () => {
  const cases: [string, (typeof STYLES)[number], object, number, Record<string, string>][] = [
    [
      "429 keeps Retry-After",
      "openai",
      { status: 429, text: "slow", headers: { "retry-after": "3" } },
      429,
      { "retry-after": "3" },
    ],
    [
      "429 keeps retry-after-ms",
      "anthropic",
      { status: 429, text: "slow", headers: { "retry-after-ms": "250" } },
      429,
      { "retry-after-ms": "250" },
    ],
    [
      "Anthropic 529 overloaded is a 503",
      "anthropic",
      { status: 529, text: "Overloaded", headers: { "retry-after": "1" } },
      503,
      { "retry-after": "1" },
    ],
    ["404 passes through", "openai", { status: 404, text: "no such model" }, 404, {}],
    ["401 (the proxy's upstream key) passes through", "openai", { status: 401, text: "bad key" }, 401, {}],
    ["422 passes through", "anthropic", { status: 422, text: "unprocessable" }, 422, {}],
    ["503 stays 503", "openai", { status: 503, text: "down" }, 503, {}],
    ["a malformed 200 reply is a 502", "openai", { status: 200, rawBody: "not json" }, 502, {}],
  ]
  it.each(cases)("%s", async (_name, style, reply, status, headers) => {
    const { server, store } = h
    server.enqueue(reply)
    const res = await chat(proxyFor(style, server, store), { messages: [{ role: "user", content: "hi" }] })
    expect(res.status).toBe(status)
    expect(res.json.error.message).toMatch(/upstream model/)
    for (const [name, value] of Object.entries(headers)) expect(res.headers.get(name)).toBe(value)
    expect(server.requests).toHaveLength(1)
  })

  it("an upstream timeout is a 504", async () => {
    const { server, store } = h
    server.enqueue({ hang: true })
    const client = createClient({
      baseUrl: `${server.url}/v1`,
      style: "openai",
      model: "m",
      apiKey: "k",
      retries: 0,
      timeoutMs: 100,
      store,
    })
    const res = await chat(createRelayProxy({ client, store }), {
      messages: [{ role: "user", content: "hi" }],
    })
    expect(res.status).toBe(504)
    expect(res.json.error.code).toBe("upstream_timeout")
  })
})

describe("a caller that hangs up", () => {
  it("aborts the upstream request; its retry of the same results resumes the run", async () => {
    const { server, store } = h
    server.enqueue({ toolCalls: [{ id: "c1", name: "t", arguments: {} }] }, { hang: true }, (req) => ({
      text: `got ${req.toolResults[0]?.content}`,
    }))
    const listening = await listen(proxyFor("openai", server, store))
    const post = (body: unknown, signal?: AbortSignal) =>
      fetch(`${listening.baseURL}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        signal,
      })
    try {
      const messages: any[] = [{ role: "user", content: "go" }]
      const first = (await (await post({ messages, tools: [fnTool("t")] })).json()) as any
      const follow = {
        messages: [
          ...messages,
          first.choices[0].message,
          { role: "tool", tool_call_id: first.choices[0].message.tool_calls[0].id, content: "R" },
        ],
      }
      const controller = new AbortController()
      const gone = post(follow, controller.signal).catch((e: unknown) => e)
      await expect.poll(() => server.requests.length).toBe(2)
      controller.abort()
      await gone
      // The proxy gave up its upstream request with the caller.
      await expect.poll(() => server.inFlight).toBe(0)
      // The aborted resume releases its claim just after; until then a delivery is told it is being applied.
      let retry: any
      await expect
        .poll(async () => {
          const res = await post(follow)
          retry = await res.json()
          return res.status
        })
        .toBe(200)
      expect(retry.choices[0].message.content).toBe("got R")
      expect(server.requests).toHaveLength(3)
    } finally {
      await listening.close()
    }
  })
})
