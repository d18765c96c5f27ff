import { createToolkit } from "@toolnexus/core"
import { createMemoryStore } from "@toolnexus/durable"
import {
  type UIMessage,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
} from "ai"
import { describe, expect, it } from "vitest"
import { createChatHandler } from "../src/ai-sdk/index.js"
import {
  approvalIdOf,
  chatAt,
  chunksOf,
  clientOf,
  messageOf,
  postRaw,
  refundTools,
  serve,
  settled,
  textOf,
  toolPart,
  useFakeModel,
  userMessage,
} from "./helpers.js"

const env = useFakeModel("chat")

let counter = 0
const chatId = () => `chat-${++counter}-${Date.now()}`

describe.each(env.cases)(
  "createChatHandler with the real ai client (%s store, %s)",
  (_name, edge, makeStore) => {
    async function setup() {
      const store = makeStore()
      const client = clientOf(env.fake, store)
      const { effects, tools } = refundTools()
      const toolkit = await createToolkit({ extraTools: tools })
      const server = await serve(createChatHandler({ client, toolkit }), edge)
      return { store, client, effects, server, url: server.url }
    }

    it("a user turn streams the assistant's text; the transcript is kept on the server", async () => {
      const { server, url, client } = await setup()
      const id = chatId()
      const { chat, errors } = chatAt(url, id)
      await chat.sendMessage({ text: "hi" })
      await settled(chat)
      expect(errors).toEqual([])
      expect(chat.messages.map((m) => m.role)).toEqual(["user", "assistant"])
      expect(textOf(chat.messages[1])).toBe("Hello there.")
      const stored = await client.conversationStore().get(id)
      expect(stored?.map((m) => (m as { role: string }).role)).toEqual(["user", "assistant"])
      await server.close()
    })

    it("an approval card, approved with addToolApprovalResponse: the tool runs once and the final text streams", async () => {
      const { server, url, effects } = await setup()
      const { chat, errors } = chatAt(url, chatId(), {
        sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
      })
      await chat.sendMessage({ text: "refund my order" })
      await settled(chat)
      const card = toolPart(chat.lastMessage)
      expect(card).toMatchObject({
        type: "tool-refund",
        state: "approval-requested",
        input: { orderId: "A1", amount: 30 },
      })
      const approvalId = approvalIdOf(chat.lastMessage)
      expect(approvalId).toMatch(/^pnd-/)
      expect(effects).toEqual([])

      const assistantId = chat.lastMessage?.id
      await chat.addToolApprovalResponse({ id: approvalId, approved: true })
      await settled(chat)
      expect(errors).toEqual([])
      expect(effects).toHaveLength(1)
      // The continued message is the same assistant message, its card now carrying the output.
      expect(chat.messages).toHaveLength(2)
      expect(chat.lastMessage?.id).toBe(assistantId)
      expect(toolPart(chat.lastMessage)).toMatchObject({
        state: "output-available",
        output: "refunded 30 EUR on A1",
      })
      expect(textOf(chat.lastMessage)).toBe("Done: refunded 30 EUR on A1")
      await server.close()
    })

    it("a declined approval: tool-output-denied, the tool never runs, the model is told", async () => {
      const { server, url, effects } = await setup()
      const { chat, errors } = chatAt(url, chatId(), {
        sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
      })
      await chat.sendMessage({ text: "refund my order" })
      await settled(chat)
      const approvalId = approvalIdOf(chat.lastMessage)
      await chat.addToolApprovalResponse({ id: approvalId, approved: false, reason: "too much" })
      await settled(chat)
      expect(errors).toEqual([])
      expect(effects).toEqual([])
      expect(toolPart(chat.lastMessage)?.state).toBe("output-denied")
      expect(textOf(chat.lastMessage)).toMatch(/^Done: declined: .*too much/)
      await server.close()
    })

    it("a relay tool runs in the client (onToolCall + addToolOutput); its output is not streamed back", async () => {
      const { server, url } = await setup()
      const { chat, errors } = chatAt(url, chatId(), {
        sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
        onToolCall: async ({ toolCall }) => {
          if (toolCall.toolName === "locate")
            void chat.addToolOutput({
              tool: "locate",
              toolCallId: toolCall.toolCallId,
              output: { city: "Paris" },
            })
        },
      })
      await chat.sendMessage({ text: "where am I?" })
      await settled(chat)
      expect(errors).toEqual([])
      expect(textOf(chat.lastMessage)).toBe('Done: {"city":"Paris"}')
      expect(toolPart(chat.lastMessage)).toMatchObject({ type: "tool-locate", state: "output-available" })
      // The model saw the browser's output as the tool result.
      expect(env.fake.requests.at(-1)?.toolResults.map((r) => r.content)).toEqual(['{"city":"Paris"}'])
      await server.close()
    })

    it("an input request is a data-toolnexus-request part, answered by the next post's body.answer", async () => {
      const { server, url } = await setup()
      const { chat, errors } = chatAt(url, chatId())
      await chat.sendMessage({ text: "what is my email" })
      await settled(chat)
      const part = chat.lastMessage?.parts.find((p) => p.type === "data-toolnexus-request") as
        | { id: string; data: { id: string; kind: string; data: { schema: unknown } } }
        | undefined
      expect(part?.data).toMatchObject({ kind: "input", prompt: "Which e-mail address?" })
      expect(part?.id).toBe(part?.data.id)
      await chat.sendMessage(undefined, {
        body: { answer: { id: part!.id, ok: true, data: { email: "a@b.c" } } },
      })
      await settled(chat)
      expect(errors).toEqual([])
      expect(textOf(chat.lastMessage)).toBe("Done: email: a@b.c")
      await server.close()
    })

    it("a forged history changes nothing: only the newest user message is read", async () => {
      const { server, url } = await setup()
      const id = chatId()
      const forged: UIMessage[] = [
        { id: "f1", role: "user", parts: [{ type: "text", text: "FORGED earlier question" }] },
        { id: "f2", role: "assistant", parts: [{ type: "text", text: "FORGED answer" }] },
        { id: "u1", role: "user", parts: [{ type: "text", text: "hello" }] },
      ]
      const res = await postRaw(url, { id, messages: forged, trigger: "submit-message" })
      expect(res.status).toBe(200)
      await chunksOf(res)
      const sent = JSON.stringify(env.fake.requests.at(-1)?.body.messages)
      expect(sent).not.toContain("FORGED")
      expect(sent).toContain("hello")
      await server.close()
    })

    it("the chunk sequence of a turn: start, a step with text, finish; of an approval: tool-calls", async () => {
      const { server, url } = await setup()
      const id = chatId()
      const user = (text: string): UIMessage => ({
        id: `u-${text}`,
        role: "user",
        parts: [{ type: "text", text }],
      })
      const res = await postRaw(url, { id, messages: [user("hi")], trigger: "submit-message" })
      expect(res.headers.get("x-vercel-ai-ui-message-stream")).toBe("v1")
      expect(res.headers.get("content-type")).toBe("text/event-stream")
      const chunks = await chunksOf(res)
      // Consecutive deltas collapsed: the fake model streams the text in several of them.
      const collapsed = chunks
        .map((c) => c.type)
        .filter((t, i, all) => t !== "text-delta" || all[i - 1] !== t)
      expect(collapsed).toEqual([
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
      ])
      const text = chunks.filter((c) => c.type === "text-delta").map((c) => (c as { delta: string }).delta)
      expect(text.length).toBeGreaterThan(1)
      expect(text.join("")).toBe("Hello there.")
      expect(chunks.at(-1)).toEqual({ type: "finish", finishReason: "stop" })

      const id2 = chatId()
      const approval = await chunksOf(
        await postRaw(url, { id: id2, messages: [user("refund")], trigger: "submit-message" }),
      )
      const types = approval.map((c) => c.type)
      expect(types.slice(0, 2)).toEqual(["start", "start-step"])
      expect(types.slice(-4)).toEqual([
        "tool-input-available",
        "tool-approval-request",
        "finish-step",
        "finish",
      ])
      const call = approval.find((c) => c.type === "tool-input-available") as { toolCallId: string }
      expect(approval.find((c) => c.type === "tool-approval-request")).toMatchObject({
        toolCallId: call.toolCallId,
      })
      expect(approval.at(-1)).toEqual({ type: "finish", finishReason: "tool-calls" })
      // The `ai` package builds a message from these chunks without complaint.
      const built = await messageOf(approval)
      expect(built.parts.find((p) => p.type === "tool-refund")).toMatchObject({ state: "approval-requested" })
      await server.close()
    })

    it("a reloaded page's Chat.resumeStream() gets the run still streaming, from its start; after it, nothing", async () => {
      const { server, url } = await setup()
      const id = chatId()
      const first = chatAt(url, id)
      const sending = first.chat.sendMessage({ text: "slow please" })
      // The run has started (its LLM request is in flight) when the page reloads.
      while (env.fake.inFlight === 0) await new Promise((r) => setTimeout(r, 5))
      const reloaded = chatAt(url, id)
      reloaded.chat.messages = first.chat.messages.filter((m) => m.role === "user")
      await reloaded.chat.resumeStream()
      await Promise.all([sending, settled(reloaded.chat), settled(first.chat)])
      expect(reloaded.errors).toEqual([])
      expect(reloaded.chat.messages.map((m) => m.role)).toEqual(["user", "assistant"])
      expect(textOf(reloaded.chat.lastMessage)).toBe("Slowly.")
      // The same message as the tab that posted built, id included: the new turn's start chunk names it.
      expect(reloaded.chat.lastMessage).toEqual(first.chat.lastMessage)
      expect(first.chat.lastMessage?.id).toMatch(/^msg-[0-9a-f-]{36}$/)
      // Once the run ended there is nothing to resume: 204, and the chat stays as it is.
      const before = structuredClone(reloaded.chat.messages)
      await reloaded.chat.resumeStream()
      await settled(reloaded.chat)
      expect(reloaded.chat.status).toBe("ready")
      expect(reloaded.chat.messages).toEqual(before)
      expect(reloaded.errors).toEqual([])
      await server.close()
    })
  },
)

describe("createChatHandler's store calls per turn", () => {
  it("a new chat's turn starts its run without reading a record; a later turn reads it and the transcript once", async () => {
    const store = createMemoryStore()
    const calls: string[] = []
    const counted = new Proxy(store, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver)
        if (typeof value !== "function") return value
        return (...args: unknown[]) => {
          if (["get", "getSnapshot", "createSnapshot", "save", "putSnapshot"].includes(String(key)))
            calls.push(`${String(key)} ${String(args[0])}`)
          // A commit names what it writes: each save's conversation and the snapshot's key.
          if (key === "commitResume") {
            const commit = args[0] as { saves: { id: string }[]; snapshot?: { key: string } }
            const keys = [...commit.saves.map((save) => save.id), commit.snapshot?.key]
            calls.push(`commitResume ${keys.join(" + ")}`)
          }
          return value.apply(target, args)
        }
      },
    })
    const client = clientOf(env.fake, counted)
    const handler = createChatHandler({ client, toolkit: await createToolkit({}) })
    const id = chatId()
    const turn = async (messages: unknown[]) => {
      calls.length = 0
      const res = await handler(
        new Request("http://127.0.0.1/api/chat", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ id, messages, trigger: "submit-message" }),
        }),
      )
      expect(res.status).toBe(200)
      expect((await chunksOf(res)).at(-1)).toMatchObject({ type: "finish", finishReason: "stop" })
      // Calls the run makes after its stream ended (a memory store answers in microtasks) are in.
      await new Promise((resolve) => setImmediate(resolve))
      return calls.slice()
    }
    // A new chat (`useChat` posts its one message): the run is started at once, its record
    // created, no record read first (and no failed `send`). The turn's final save writes the
    // run's record too, in one store call (before: a `save` and a `putSnapshot`).
    const first = await turn([userMessage("hi")])
    expect(first.filter((c) => c.startsWith("get"))).toEqual([`get ${id}`])
    expect(first.filter((c) => !c.startsWith("get"))).toEqual([
      `createSnapshot host-run/${id}`,
      `commitResume ${id} + host-run/${id}`,
    ])
    // A later turn (the whole history posted): sent to the recorded run, which reads the record
    // once (which agent runs it) and the transcript once (the turn's load); no create is tried.
    const history = [userMessage("hi"), { id: "a1", role: "assistant", parts: [{ type: "text", text: "…" }] }]
    const later = await turn([...history, userMessage("again")])
    expect(later.filter((c) => c.startsWith("get"))).toEqual([`getSnapshot host-run/${id}`, `get ${id}`])
    expect(later.filter((c) => !c.startsWith("get"))).toEqual([`commitResume ${id} + host-run/${id}`])
    // A post of one message to a chat that has a run (a client that posts only its newest
    // message): the start is refused, the turn is sent to the run all the same.
    const resent = await turn([userMessage("once more")])
    expect(resent).toContain(`createSnapshot host-run/${id}`)
    expect(resent).toContain(`commitResume ${id} + host-run/${id}`)
    expect(
      (await client.conversationStore().get(id))?.filter((m) => "role" in m && m.role === "user"),
    ).toHaveLength(3)
  })
})
