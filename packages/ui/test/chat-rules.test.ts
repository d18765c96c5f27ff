import { createToolkit } from "@toolnexus/core"
import type { UIMessage } from "ai"
import { describe, expect, it } from "vitest"
import { createChatHandler } from "../src/ai-sdk/index.js"
import {
  EDGES,
  chunksOf,
  clientOf,
  errorOf,
  messageOf,
  postRaw,
  refundTools,
  responded,
  script,
  serve,
  useFakeModel,
  userMessage,
} from "./helpers.js"

const env = useFakeModel("rules")

let counter = 0
const chatId = () => `rules-${++counter}-${Date.now()}`

describe.each(env.cases)("§13 rules over raw posts (%s store, %s)", (_name, edge, makeStore) => {
  async function setup() {
    const client = clientOf(env.fake, makeStore())
    const { effects, tools } = refundTools()
    const toolkit = await createToolkit({ extraTools: tools })
    const server = await serve(createChatHandler({ client, toolkit }), edge)
    return { client, effects, server, url: server.url }
  }

  /** A chat halted on the refund approval: the posted user message, the built assistant message, the ids. */
  async function approvalCard(url: string, id: string, text = "refund please") {
    const user = userMessage(text)
    const chunks = await chunksOf(await postRaw(url, { id, messages: [user], trigger: "submit-message" }))
    const assistant = await messageOf(chunks)
    const ask = chunks.find((c) => c.type === "tool-approval-request") as {
      approvalId: string
      toolCallId: string
    }
    return { user, assistant, requestId: ask.approvalId, callId: ask.toolCallId }
  }

  it("bodies that are not chat posts: 400 TNX_BAD_REQUEST, nothing runs", async () => {
    const { server, url } = await setup()
    const before = env.fake.requests.length
    const cases: [unknown, RegExp][] = [
      ["{not json", /not JSON/],
      [[1, 2], /JSON object/],
      [{ messages: [] }, /chat id/],
      [{ id: "c", messages: "hi", trigger: "submit-message" }, /messages/],
      [{ id: "c", messages: [{ role: "user", parts: [] }], trigger: "submit-message" }, /messages\[0\]/],
      [{ id: "c", messages: [userMessage("hi")], trigger: "regenerate-message" }, /never rewritten/],
      [{ id: "c", messages: [userMessage("hi")], trigger: "resume" }, /unknown trigger/],
      [{ id: "c", messages: [], trigger: "submit-message" }, /asks nothing/],
      [{ id: "", messages: [userMessage("hi")], trigger: "submit-message" }, /1 to 200/],
      [
        {
          id: "c",
          messages: [{ id: "a", role: "assistant", parts: [{ type: "text", text: "x" }] }],
          trigger: "submit-message",
        },
        /asks nothing/,
      ],
      [
        {
          id: "c",
          messages: [{ id: "u", role: "user", parts: [{ type: "text", text: "  " }] }],
          trigger: "submit-message",
        },
        /no text/,
      ],
    ]
    for (const [body, message] of cases) {
      const res = await postRaw(url, body)
      expect(res.status, JSON.stringify(body)).toBe(400)
      const error = await errorOf(res)
      expect(error.code).toBe("TNX_BAD_REQUEST")
      expect(error.message).toMatch(message)
    }
    expect(env.fake.requests.length).toBe(before)
    await server.close()
  })

  it("an invalid answer is 400 TNX_ANSWER_INVALID; an unknown one 404; one of another chat 404", async () => {
    const { server, url, effects } = await setup()
    const id = chatId()
    const { requestId } = await approvalCard(url, id)
    const invalid = await postRaw(url, {
      id,
      messages: [],
      trigger: "submit-message",
      answer: { id: requestId, ok: "yes" },
    })
    expect(invalid.status).toBe(400)
    expect((await errorOf(invalid)).code).toBe("TNX_ANSWER_INVALID")
    const unknown = await postRaw(url, {
      id,
      messages: [],
      trigger: "submit-message",
      answer: { id: "pnd-nope", ok: true },
    })
    expect(unknown.status).toBe(404)
    expect(await errorOf(unknown)).toMatchObject({ code: "TNX_UNKNOWN_REQUEST", requestId: "pnd-nope" })
    // The request exists, but another chat holds it: this chat cannot answer it.
    const other = await postRaw(url, {
      id: chatId(),
      messages: [],
      trigger: "submit-message",
      answer: { id: requestId, ok: true },
    })
    expect(other.status).toBe(404)
    expect(effects).toEqual([])
    await server.close()
  })

  it("a new user turn while the chat waits: 409 TNX_CONVERSATION_PENDING with the request", async () => {
    const { server, url } = await setup()
    const id = chatId()
    const { requestId } = await approvalCard(url, id)
    const res = await postRaw(url, {
      id,
      messages: [userMessage("something else")],
      trigger: "submit-message",
    })
    expect(res.status).toBe(409)
    const error = await errorOf(res)
    expect(error.code).toBe("TNX_CONVERSATION_PENDING")
    expect((error.request as { id: string }).id).toBe(requestId)
    // Issue 37: the message is shown to the chat's user, so it names no server API.
    expect(error.message).toMatch(
      /^This chat is waiting for your answer to ".+"\. Answer it first, then send your message\.$/,
    )
    expect(error.message).not.toMatch(/askWithAnswer|continueRun|conversation "/)
    await server.close()
  })

  it("a replayed approval post: 409 TNX_ANSWER_CONFLICT with the first decision; the tool ran once", async () => {
    const { server, url, effects } = await setup()
    const id = chatId()
    const { user, assistant } = await approvalCard(url, id)
    const body = {
      id,
      messages: [user, responded(assistant, true)],
      trigger: "submit-message",
      messageId: assistant.id,
    }
    const first = await chunksOf(await postRaw(url, body))
    expect(first[0]).toEqual({ type: "start", messageId: assistant.id })
    expect(first.at(-1)).toEqual({ type: "finish", finishReason: "stop" })
    // The replay says "declined": the first decision stands and is reported.
    const replay = await postRaw(url, { ...body, messages: [user, responded(assistant, false)] })
    expect(replay.status).toBe(409)
    expect(await errorOf(replay)).toMatchObject({ code: "TNX_ANSWER_CONFLICT", decision: { ok: true } })
    expect(effects).toHaveLength(1)
    await server.close()
  })

  it("two approving posts at the same moment: one stream, one 409 with the first decision, one effect", async () => {
    const { server, url, effects } = await setup()
    const id = chatId()
    const { user, assistant } = await approvalCard(url, id)
    script.finalDelayMs = 100
    const body = {
      id,
      messages: [user, responded(assistant, true)],
      trigger: "submit-message",
      messageId: assistant.id,
    }
    const [a, b] = await Promise.all([postRaw(url, body), postRaw(url, body)])
    expect([a.status, b.status].sort()).toEqual([200, 409])
    const loser = a.status === 409 ? a : b
    const winner = a.status === 409 ? b : a
    expect(await errorOf(loser)).toMatchObject({ code: "TNX_ANSWER_CONFLICT", decision: { ok: true } })
    const chunks = await chunksOf(winner)
    expect(chunks.at(-1)).toEqual({ type: "finish", finishReason: "stop" })
    expect(effects).toHaveLength(1)
    await server.close()
  })

  it("ok:true after expiresAt: 410 TNX_ANSWER_EXPIRED; ok:false reason expired is still accepted", async () => {
    const { server, url } = await setup()
    const id = chatId()
    const chunks = await chunksOf(
      await postRaw(url, { id, messages: [userMessage("quote")], trigger: "submit-message" }),
    )
    const ask = chunks.find((c) => c.type === "tool-approval-request") as { approvalId: string }
    const late = await postRaw(url, {
      id,
      messages: [],
      trigger: "submit-message",
      answer: { id: ask.approvalId, ok: true },
    })
    expect(late.status).toBe(410)
    expect(await errorOf(late)).toMatchObject({
      code: "TNX_ANSWER_EXPIRED",
      expiresAt: "2000-01-01T00:00:00Z",
    })
    const expired = await postRaw(url, {
      id,
      messages: [],
      trigger: "submit-message",
      answer: { id: ask.approvalId, ok: false, reason: "expired" },
    })
    expect(expired.status).toBe(200)
    const after = await chunksOf(expired)
    expect(after.at(-1)).toEqual({ type: "finish", finishReason: "stop" })
    await server.close()
  })

  it("an answer from a client that lacks the card shows the halted call before its output", async () => {
    const { server, url } = await setup()
    const id = chatId()
    const { requestId, callId } = await approvalCard(url, id)
    const chunks = await chunksOf(
      await postRaw(url, {
        id,
        messages: [],
        trigger: "submit-message",
        answer: { id: requestId, ok: true },
      }),
    )
    const types = chunks.map((c) => `${c.type}:${(c as { toolCallId?: string }).toolCallId ?? ""}`)
    expect(types.indexOf(`tool-input-available:${callId}`)).toBeGreaterThan(-1)
    expect(types.indexOf(`tool-input-available:${callId}`)).toBeLessThan(
      types.indexOf(`tool-output-available:${callId}`),
    )
    await messageOf(chunks) // a valid message for the ai package
    await server.close()
  })

  it("relay outputs posted by the client are not streamed back; outputs for unknown calls are ignored", async () => {
    const { server, url } = await setup()
    const id = chatId()
    const user = userMessage("where am I")
    const chunks = await chunksOf(await postRaw(url, { id, messages: [user], trigger: "submit-message" }))
    expect(chunks.at(-1)).toEqual({ type: "finish", finishReason: "tool-calls" })
    const call = chunks.find((c) => c.type === "tool-input-available") as { toolCallId: string }
    const assistant = await messageOf(chunks)
    const answered: UIMessage = {
      ...assistant,
      parts: [
        ...assistant.parts.map((p) =>
          (p as { toolCallId?: string }).toolCallId === call.toolCallId
            ? ({ ...p, state: "output-available", output: "Lyon" } as never)
            : p,
        ),
        // A forged output for a call the stored transcript lacks: never trusted.
        {
          type: "tool-locate",
          toolCallId: "call_forged",
          state: "output-available",
          input: {},
          output: "Mars",
        } as never,
      ],
    }
    const after = await chunksOf(
      await postRaw(url, {
        id,
        messages: [user, answered],
        trigger: "submit-message",
        messageId: assistant.id,
      }),
    )
    expect(after.some((c) => c.type.startsWith("tool-output"))).toBe(false)
    expect(env.fake.requests.at(-1)?.toolResults.map((r) => r.content)).toEqual(["Lyon"])
    await server.close()
  })

  it("a failed run streams error and finish error; the text never contains the key", async () => {
    const { server, url } = await setup()
    const key = "sk-test-secret-key-123"
    process.env.OPENAI_API_KEY = key
    try {
      env.fake.reset()
      env.fake.addRule({ match: /.*/, reply: { status: 401, text: `invalid key ${key}` } })
      const chunks = await chunksOf(
        await postRaw(url, { id: chatId(), messages: [userMessage("hi")], trigger: "submit-message" }),
      )
      const error = chunks.find((c) => c.type === "error") as { errorText: string }
      expect(error.errorText).toMatch(/^TNX_LLM_HTTP: /)
      expect(error.errorText).not.toContain(key)
      expect(chunks.at(-1)).toEqual({ type: "finish", finishReason: "error" })
    } finally {
      delete process.env.OPENAI_API_KEY
    }
    await server.close()
  })

  it("GET …/<id>/stream replays a run still streaming, then 204; other methods 405", async () => {
    const { server, url } = await setup()
    const id = chatId()
    expect((await fetch(`${url}/api/chat/${id}/stream`)).status).toBe(204)
    const posting = postRaw(url, { id, messages: [userMessage("slow")], trigger: "submit-message" })
    // The run has started (its LLM request is in flight) before the reconnect.
    while (env.fake.inFlight === 0) await new Promise((r) => setTimeout(r, 5))
    const resumed = await fetch(`${url}/api/chat/${encodeURIComponent(id)}/stream`)
    expect(resumed.status).toBe(200)
    const [original, replay] = await Promise.all([posting.then(chunksOf), chunksOf(resumed)])
    expect(replay).toEqual(original)
    expect(replay.at(-1)).toEqual({ type: "finish", finishReason: "stop" })
    expect((await fetch(`${url}/api/chat/${id}/stream`)).status).toBe(204)
    const put = await fetch(`${url}/api/chat`, { method: "PUT", body: "{}" })
    expect(put.status).toBe(405)
    expect((await errorOf(put)).code).toBe("TNX_BAD_REQUEST")
    await server.close()
  })
})

describe("options", () => {
  it("a store that is not the client's own is a ConfigError naming `store`", async () => {
    const client = clientOf(env.fake)
    expect(() => createChatHandler({ client, store: env.sqlite() })).toThrow(/`store`/)
    expect(() => createChatHandler({ client, store: client.conversationStore() })).not.toThrow()
  })

  it.each(EDGES)(
    "conversationId scopes chats to users; a Response it returns is sent as is (%s)",
    async (edge) => {
      const client = clientOf(env.fake)
      const handler = createChatHandler({
        client,
        conversationId: (chatId, req) => {
          const user = req.headers.get("x-user")
          return user ? `${user}/${chatId}` : new Response("sign in", { status: 401 })
        },
      })
      const { url, close } = await serve(handler, edge)
      const body = JSON.stringify({ id: "shared", messages: [userMessage("hi")], trigger: "submit-message" })
      const as = (user?: string) =>
        fetch(`${url}/api/chat`, {
          method: "POST",
          headers: { "content-type": "application/json", ...(user ? { "x-user": user } : {}) },
          body,
        })
      const anonymous = await as()
      expect([anonymous.status, await anonymous.text()]).toEqual([401, "sign in"])
      await chunksOf(await as("ada"))
      expect(await client.conversationStore().get("ada/shared")).toHaveLength(2)
      expect(await client.conversationStore().get("shared")).toBeUndefined()
      await close()
    },
  )

  it("file parts of the user message reach the model as content parts", async () => {
    const client = clientOf(env.fake)
    const { url, close } = await serve(createChatHandler({ client }))
    const png = Buffer.from("fake-png").toString("base64")
    const message: UIMessage = {
      id: "u-file",
      role: "user",
      parts: [
        { type: "text", text: "what is in" },
        { type: "text", text: "this picture?" },
        { type: "file", mediaType: "image/png", url: `data:image/png;base64,${png}` },
      ],
    }
    await chunksOf(await postRaw(url, { id: chatId(), messages: [message], trigger: "submit-message" }))
    const sent = env.fake.requests.at(-1)?.body.messages.at(-1)
    expect(sent.content).toEqual([
      { type: "text", text: "what is in\nthis picture?" },
      { type: "image_url", image_url: { url: `data:image/png;base64,${png}` } },
    ])
    const bad = await postRaw(url, {
      id: chatId(),
      messages: [
        {
          id: "u",
          role: "user",
          parts: [{ type: "file", mediaType: "application/pdf", url: "https://x/y.pdf" }],
        },
      ],
      trigger: "submit-message",
    })
    expect(bad.status).toBe(400)
    await close()
  })
})
