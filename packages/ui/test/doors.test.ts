import { request as httpRequest } from "node:http"
import { type ConversationStore, createToolkit } from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import { createAgUiHandler } from "../src/ag-ui/index.js"
import { createChatHandler } from "../src/ai-sdk/index.js"
import type { ChatHandlerOptions } from "../src/index.js"
import { mayNestDeeperThan, nestsDeeperThan } from "../src/internal/post-checks.js"
import {
  EDGES,
  chunksOf,
  clientOf,
  messageOf,
  postRaw,
  refundTools,
  responded,
  script,
  serve,
  useFakeModel,
  userMessage,
} from "./helpers.js"

// DESIGN §20 "Doors": a malformed Host, another conversation's request, an answer no store can
// write and a cross-site post are each refused before anything is read, claimed or run.

const env = useFakeModel("doors")

let counter = 0
const chatId = () => `doors-${++counter}-${Date.now()}`

interface RawReply {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** One request through node:http, with headers fetch cannot set (`Host`) or leaves out. */
function raw(
  url: string,
  opts: { method?: string; path: string; headers?: Record<string, string>; body?: string },
): Promise<RawReply> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { hostname, port, method: opts.method ?? "GET", path: opts.path, headers: opts.headers ?? {} },
      (res) => {
        let body = ""
        res.setEncoding("utf8")
        res.on("data", (chunk: string) => {
          body += chunk
        })
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
      },
    )
    req.on("error", reject)
    req.end(opts.body)
  })
}

const errorIn = (reply: RawReply) =>
  (JSON.parse(reply.body) as { error: Record<string, unknown> & { code: string; message: string } }).error

async function chatServer(edge: (typeof EDGES)[number], store?: ConversationStore, extra = {}) {
  const client = clientOf(env.fake, store)
  const { effects, tools } = refundTools()
  const toolkit = await createToolkit({ extraTools: tools })
  const server = await serve(createChatHandler({ client, toolkit, ...extra }), edge)
  return { client, effects, toolkit, server, url: server.url }
}

const turn = (id: string, text = "hi") =>
  JSON.stringify({ id, messages: [userMessage(text)], trigger: "submit-message" })

describe.each(EDGES)("a malformed Host header (%s)", (edge) => {
  // Not "xn--zz": whether a bad punycode label parses is the URL parser's call, and Node 24's
  // accepts it (a 200, never a 500: the promise holds either way).
  const malformed = ["a b", "a@b", "a/b", "a?b", "h:99999", "[1:2]", "999.1.1.1", "[::1"]

  it("is 400 TNX_BAD_REQUEST for a post and for GET …/stream, never a 500; nothing runs", async () => {
    const { server, url } = await chatServer(edge)
    const before = env.fake.requests.length
    for (const host of malformed) {
      const post = await raw(url, {
        method: "POST",
        path: "/api/chat",
        headers: { host, "content-type": "application/json" },
        body: turn(chatId()),
      })
      expect([host, post.status]).toEqual([host, 400])
      expect(errorIn(post)).toMatchObject({ code: "TNX_BAD_REQUEST", message: expect.stringMatching(/Host/) })
      const stream = await raw(url, { path: `/api/chat/${chatId()}/stream`, headers: { host } })
      expect([host, stream.status]).toEqual([host, 400])
      expect(errorIn(stream).code).toBe("TNX_BAD_REQUEST")
    }
    // A request target the URL parser refuses is a 400 too.
    const target = await raw(url, { path: "//[/stream" })
    expect(target.status).toBe(400)
    expect(errorIn(target)).toMatchObject({
      code: "TNX_BAD_REQUEST",
      message: expect.stringMatching(/target/),
    })
    expect(env.fake.requests.length).toBe(before)
    // Well-formed hosts are served as before.
    for (const host of ["example.com", "LOCALHOST:8080", "[::1]:3000", "10.0.0.1"]) {
      const stream = await raw(url, { path: `/api/chat/${chatId()}/stream`, headers: { host } })
      expect([host, stream.status]).toEqual([host, 204])
    }
    await server.close()
  })
})

it("a malformed Host never reaches a plain fetch handler: 400, where new URL(req.url) threw before", async () => {
  let calls = 0
  const server = await serve(async (req) => {
    calls++
    return new Response(new URL(req.url).host)
  }, "fetch handler")
  const bad = await raw(server.url, { path: "/x", headers: { host: "a b" } })
  expect(bad.status).toBe(400)
  expect(errorIn(bad).code).toBe("TNX_BAD_REQUEST")
  const good = await raw(server.url, { path: "/x", headers: { host: "example.com:81" } })
  expect(good).toMatchObject({ status: 200, body: "example.com:81" })
  expect(calls).toBe(1)
  await server.close()
})

describe.each(env.cases)("another conversation's request (%s store, %s)", (name, edge, makeStore) => {
  /** Chat `id` halted on the refund approval: the posted user message, the assistant message, the request id. */
  async function approvalCard(url: string, id: string) {
    const user = userMessage("refund please")
    const chunks = await chunksOf(await postRaw(url, { id, messages: [user], trigger: "submit-message" }))
    const assistant = await messageOf(chunks)
    const ask = chunks.find((c) => c.type === "tool-approval-request") as { approvalId: string }
    return { user, assistant, requestId: ask.approvalId }
  }

  it("a decided request named by another chat: 404 TNX_UNKNOWN_REQUEST without its decision or reason", async () => {
    const { server, url, effects } = await chatServer(edge, makeStore())
    const owner = chatId()
    const { user, assistant, requestId } = await approvalCard(url, owner)
    const declined = {
      ...responded(assistant, false),
      parts: responded(assistant, false).parts.map((p) =>
        "approval" in p ? { ...p, approval: { ...(p.approval as object), reason: "the-private-reason" } } : p,
      ),
    }
    const applied = await postRaw(url, {
      id: owner,
      messages: [user, declined],
      trigger: "submit-message",
      messageId: assistant.id,
    })
    expect((await chunksOf(applied)).at(-1)).toEqual({ type: "finish", finishReason: "stop" })
    const other = await postRaw(url, {
      id: chatId(),
      messages: [],
      trigger: "submit-message",
      answer: { id: requestId, ok: true },
    })
    expect(other.status).toBe(404)
    const text = await other.text()
    expect(JSON.parse(text).error).toEqual({
      code: "TNX_UNKNOWN_REQUEST",
      requestId,
      message: expect.any(String),
    })
    expect(text).not.toContain("the-private-reason")
    expect(text).not.toContain("decision")
    // The chat that held it still learns its decision.
    const replay = await postRaw(url, {
      id: owner,
      messages: [],
      trigger: "submit-message",
      answer: { id: requestId, ok: true },
    })
    expect(replay.status).toBe(409)
    expect(((await replay.json()) as { error: unknown }).error).toMatchObject({
      code: "TNX_ANSWER_CONFLICT",
      decision: { ok: false, reason: "the-private-reason" },
    })
    expect(effects).toEqual([])
    await server.close()
  })

  // Deciding outside the handler (deliverAnswer, the approvals inbox) needs a durable store.
  it.skipIf(name === "memory")(
    "a request decided outside the handler: its own chat gets 409 with the decision, another 404",
    async () => {
      const store = makeStore() as ConversationStore
      const { server, url, client, toolkit } = await chatServer(edge, store)
      const owner = chatId()
      const { requestId } = await approvalCard(url, owner)
      const { deliverAnswer } = await import("@toolnexus/durable")
      await deliverAnswer(
        store as Parameters<typeof deliverAnswer>[0],
        { id: requestId, ok: true },
        { client, toolkit },
      )
      const answer = { id: requestId, ok: false, reason: "too late" }
      const other = await postRaw(url, { id: chatId(), messages: [], trigger: "submit-message", answer })
      expect(other.status).toBe(404)
      expect(await other.text()).not.toContain("decision")
      const own = await postRaw(url, { id: owner, messages: [], trigger: "submit-message", answer })
      expect(own.status).toBe(409)
      expect(((await own.json()) as { error: unknown }).error).toMatchObject({
        code: "TNX_ANSWER_CONFLICT",
        decision: { ok: true },
      })
      await server.close()
    },
  )

  it("a request being applied, named by another chat: 404 without the decision in flight", async () => {
    const { server, url, effects } = await chatServer(edge, makeStore())
    const owner = chatId()
    const { user, assistant, requestId } = await approvalCard(url, owner)
    script.finalDelayMs = 300
    const llmBefore = env.fake.requests.length
    const approving = postRaw(url, {
      id: owner,
      messages: [user, responded(assistant, true)],
      trigger: "submit-message",
      messageId: assistant.id,
    })
    // The approved tool ran and the slow final reply is in flight: the answer is being applied.
    while (env.fake.inFlight === 0 || env.fake.requests.length === llmBefore)
      await new Promise((r) => setTimeout(r, 5))
    const other = await postRaw(url, {
      id: chatId(),
      messages: [],
      trigger: "submit-message",
      answer: { id: requestId, ok: false },
    })
    expect(other.status).toBe(404)
    const text = await other.text()
    expect(JSON.parse(text).error.code).toBe("TNX_UNKNOWN_REQUEST")
    expect(text).not.toContain("decision")
    expect((await chunksOf(await approving)).at(-1)).toEqual({ type: "finish", finishReason: "stop" })
    expect(effects).toHaveLength(1)
    await server.close()
  })

  it("AG-UI: another thread resuming a decided interrupt gets RUN_ERROR TNX_UNKNOWN_REQUEST, no decision", async () => {
    const client = clientOf(env.fake, makeStore())
    const { tools } = refundTools()
    const toolkit = await createToolkit({ extraTools: tools })
    const server = await serve(createAgUiHandler({ client, toolkit }), edge)
    const post = (body: unknown) =>
      raw(server.url, {
        method: "POST",
        path: "/agent",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ runId: `r-${++counter}`, tools: [], context: [], ...(body as object) }),
      })
    const thread = chatId()
    const first = await post({
      threadId: thread,
      messages: [{ id: "u1", role: "user", content: "refund please" }],
    })
    const finished = first.body
      .split("\n\n")
      .map((frame) => frame.replace(/^data: /, ""))
      .filter(Boolean)
      .map((frame) => JSON.parse(frame) as { type: string; outcome?: { interrupts?: { id: string }[] } })
      .find((e) => e.type === "RUN_FINISHED")
    const interruptId = finished?.outcome?.interrupts?.[0]?.id as string
    const decline = {
      interruptId,
      status: "resolved",
      payload: { approved: false, reason: "the-private-reason" },
    }
    await post({ threadId: thread, messages: [], resume: [decline] })
    const other = await post({
      threadId: chatId(),
      messages: [],
      resume: [{ interruptId, status: "cancelled" }],
    })
    expect(other.body).not.toContain("the-private-reason")
    expect(other.body).not.toContain("decision")
    expect(JSON.parse(other.body.replace(/^data: /, ""))).toMatchObject({
      type: "RUN_ERROR",
      code: "TNX_UNKNOWN_REQUEST",
    })
    await server.close()
  })
})

/** `{a: {a: … {} }}`, `levels` objects deep. */
function nested(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = {}
  for (let i = 1; i < levels; i++) value = { a: value }
  return value
}

/** The JSON text of `nested(levels)`, written out: `JSON.stringify` itself overflows on it. */
const nestedText = (levels: number) => `${'{"a":'.repeat(levels - 1)}{}${"}".repeat(levels - 1)}`

describe.each(env.cases)("an answer no store can write (%s store, %s)", (_name, edge, makeStore) => {
  it("20,000 levels of nested JSON: 400 TNX_BAD_REQUEST before anything is claimed or written", async () => {
    const store = makeStore()
    const { client, server, url } = await chatServer(edge, store)
    const id = chatId()
    const card = await chunksOf(
      await postRaw(url, { id, messages: [userMessage("email please")], trigger: "submit-message" }),
    )
    const ask = card.find((c) => c.type === "data-toolnexus-request") as { data: { id: string } }
    const requestId = ask.data.id
    const llmBefore = env.fake.requests.length
    const deep = await postRaw(
      url,
      `{"id":${JSON.stringify(id)},"messages":[],"trigger":"submit-message","answer":{"id":${JSON.stringify(requestId)},"ok":true,"data":${nestedText(20_000)}}}`,
    )
    expect(deep.status).toBe(400)
    expect(((await deep.json()) as { error: unknown }).error).toMatchObject({
      code: "TNX_BAD_REQUEST",
      message: expect.stringMatching(/deeper than 1000 levels/),
    })
    // Nothing was claimed, run or written: the chat still waits on the request, and a
    // storable answer to it is applied.
    expect(env.fake.requests.length).toBe(llmBefore)
    const waiting = client.conversationStore() as ConversationStore & {
      getPending(id: string): Promise<{ id: string } | undefined>
      getDecision?(id: string): Promise<unknown>
    }
    expect((await waiting.getPending(id))?.id).toBe(requestId)
    if (waiting.getDecision) expect(await waiting.getDecision(requestId)).toBeUndefined()
    const fine = await postRaw(url, {
      id,
      messages: [],
      trigger: "submit-message",
      answer: { id: requestId, ok: true, data: { email: "a@example.com" } },
    })
    expect(fine.status).toBe(200)
    expect((await chunksOf(fine)).at(-1)).toEqual({ type: "finish", finishReason: "stop" })
    await server.close()
  })

  it("AG-UI: a resume payload nested 20,000 levels deep is 400 before the interrupt is touched", async () => {
    const client = clientOf(env.fake, makeStore())
    const server = await serve(createAgUiHandler({ client }), edge)
    const deep = await raw(server.url, {
      method: "POST",
      path: "/agent",
      headers: { "content-type": "application/json" },
      body: `{"threadId":"t","runId":"r","messages":[],"tools":[],"resume":[{"interruptId":"pnd-x","status":"resolved","payload":${nestedText(20_000)}}]}`,
    })
    expect(deep.status).toBe(400)
    expect(errorIn(deep)).toMatchObject({ code: "TNX_BAD_REQUEST", message: expect.stringMatching(/deeper/) })
    await server.close()
  })
})

it("nestsDeeperThan counts objects and arrays, without recursion, and stops at the bound", () => {
  expect(nestsDeeperThan(nested(1000), 1000)).toBe(false)
  expect(nestsDeeperThan(nested(1001), 1000)).toBe(true)
  expect(nestsDeeperThan([[[1]]], 3)).toBe(false)
  expect(nestsDeeperThan([[[[]]]], 3)).toBe(true)
  expect(nestsDeeperThan("text", 0)).toBe(false)
  expect(nestsDeeperThan(nested(1_000_000), 1000)).toBe(true)
})

describe.each(EDGES)("cross-site posts (%s)", (edge) => {
  const handlers: [
    string,
    (opts: ChatHandlerOptions) => (req: Request) => Promise<Response>,
    string,
    string,
  ][] = [
    ["createChatHandler", createChatHandler, "/api/chat", turn("x")],
    [
      "createAgUiHandler",
      createAgUiHandler,
      "/agent",
      JSON.stringify({ threadId: "x", runId: "r", messages: [{ id: "u", role: "user", content: "hi" }] }),
    ],
  ]

  it.each(handlers)(
    "%s: a foreign Origin is 403 TNX_CROSS_SITE, a body not sent as JSON 415",
    async (_n, make, path, body) => {
      const client = clientOf(env.fake)
      const server = await serve(make({ client, allowedOrigins: ["https://app.example.com/"] }), edge)
      const post = (headers: Record<string, string>, sent = body) =>
        raw(server.url, {
          method: "POST",
          path,
          headers,
          body: sent.replace('"x"', JSON.stringify(chatId())),
        })
      const before = env.fake.requests.length
      for (const origin of [
        "https://evil.example",
        "null",
        `${server.url.replace("127.0.0.1", "localhost")}`,
      ]) {
        const refused = await post({ origin, "content-type": "application/json" })
        expect([origin, refused.status]).toEqual([origin, 403])
        expect(errorIn(refused)).toMatchObject({
          code: "TNX_CROSS_SITE",
          message: expect.stringContaining(origin),
        })
      }
      for (const type of [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
      ]) {
        const refused = await post({ "content-type": type })
        expect([type, refused.status]).toEqual([type, 415])
        expect(errorIn(refused).code).toBe("TNX_UNSUPPORTED_MEDIA_TYPE")
      }
      const untyped = await post({})
      expect(untyped.status).toBe(415)
      expect(env.fake.requests.length).toBe(before)
      // The page's own origin, an allowed one, and a post without Origin (a server, curl) are served.
      for (const headers of [
        { origin: server.url, "content-type": "application/json" },
        { origin: "https://app.example.com", "content-type": "Application/JSON; charset=utf-8" },
        { "content-type": "application/json" },
      ] as Record<string, string>[]) {
        const served = await post(headers)
        expect([headers, served.status]).toEqual([headers, 200])
        expect(served.headers["content-type"]).toMatch(/text\/event-stream/)
      }
      await server.close()
    },
  )
})

it("allowedOrigins entries that are not http(s) origins are a ConfigError naming the option", () => {
  const client = clientOf(env.fake)
  for (const allowedOrigins of [["app.example.com"], ["ftp://files.example"], [7 as unknown as string]]) {
    expect(() => createChatHandler({ client, allowedOrigins })).toThrow(/allowedOrigins/)
    expect(() => createAgUiHandler({ client, allowedOrigins })).toThrow(/allowedOrigins/)
  }
})

it("mayNestDeeperThan: the shortest text one level too deep is walked, a text one character shorter need not be", () => {
  for (const max of [0, 1, 3, 1000]) {
    const shortest = `${"[".repeat(max + 1)}${"]".repeat(max + 1)}`
    expect(nestsDeeperThan(JSON.parse(shortest), max)).toBe(true)
    expect(mayNestDeeperThan(shortest, max)).toBe(true)
    expect(mayNestDeeperThan(shortest.slice(1), max)).toBe(false)
  }
  // A chat turn's post is far below the bound.
  expect(mayNestDeeperThan(JSON.stringify({ id: "c", messages: [userMessage("hi")] }), 1000)).toBe(false)
})
