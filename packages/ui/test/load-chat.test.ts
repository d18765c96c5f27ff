import { type EndpointStyle, createClient, createToolkit, hostAgent } from "@toolnexus/core"
import { createMemoryStore, createStoreHost } from "@toolnexus/durable"
import { type UIMessage, lastAssistantMessageIsCompleteWithApprovalResponses } from "ai"
import { describe, expect, it } from "vitest"
import { createChatHandler, loadChat } from "../src/ai-sdk/index.js"
import {
  approvalIdOf,
  chatAt,
  clientOf,
  refundTools,
  serve,
  settled,
  textOf,
  toolPart,
  useFakeModel,
} from "./helpers.js"

const env = useFakeModel("load-chat")

let counter = 0
const chatId = () => `reload-${++counter}-${Date.now()}`

describe.each(env.stores)("loadChat after a reload (%s store)", (_name, makeStore) => {
  async function setup() {
    const client = clientOf(env.fake, makeStore())
    const store = client.conversationStore()
    const { effects, tools } = refundTools()
    const toolkit = await createToolkit({ extraTools: tools })
    const server = await serve(createChatHandler({ client, toolkit }))
    return { store, effects, server, url: server.url }
  }

  it("a chat parked on an approval loads as the live stream left it; the reloaded card's approval finishes the run", async () => {
    const { store, effects, server, url } = await setup()
    const id = chatId()
    const live = chatAt(url, id)
    await live.chat.sendMessage({ text: "refund my order" })
    await settled(live.chat)
    expect(live.errors).toEqual([])
    const streamed = live.chat.lastMessage as UIMessage

    const loaded = await loadChat({ store, chatId: id })
    expect(loaded).toHaveLength(2)
    expect(loaded[0]).toMatchObject({ role: "user", parts: [{ type: "text", text: "refund my order" }] })
    expect(loaded[1]?.role).toBe("assistant")
    // Part for part what `ai` built from the handler's stream: the same card, the same request id.
    expect(loaded[1]?.parts).toEqual(streamed.parts)
    expect(toolPart(loaded[1] as UIMessage)?.state).toBe("approval-requested")
    // Stable ids: a second load is the same list.
    expect(await loadChat({ store, chatId: id })).toEqual(loaded)

    // The reloaded page: a new chat object with the loaded messages answers the card.
    const reloaded = chatAt(url, id, {
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    })
    reloaded.chat.messages = loaded as UIMessage[]
    await reloaded.chat.addToolApprovalResponse({
      id: approvalIdOf(reloaded.chat.lastMessage),
      approved: true,
    })
    await settled(reloaded.chat)
    expect(reloaded.errors).toEqual([])
    expect(effects).toHaveLength(1)
    expect(reloaded.chat.messages).toHaveLength(2)
    expect(reloaded.chat.lastMessage?.id).toBe(loaded[1]?.id)
    expect(textOf(reloaded.chat.lastMessage)).toBe("Done: refunded 30 EUR on A1")

    // Once approved, the load is the finished transcript: the tool's output, the final text, no card.
    const finished = await loadChat({ store, chatId: id })
    expect(finished.map((m) => m.role)).toEqual(["user", "assistant"])
    expect(toolPart(finished[1] as UIMessage)).toMatchObject({
      type: "tool-refund",
      state: "output-available",
      input: { orderId: "A1", amount: 30 },
      output: "refunded 30 EUR on A1",
    })
    expect(textOf(finished[1] as UIMessage)).toBe("Done: refunded 30 EUR on A1")
    expect(finished[1]?.parts.map((p) => p.type)).toEqual(["step-start", "tool-refund", "step-start", "text"])
    await server.close()
  })

  it("a chat waiting on an input question loads its data-toolnexus-request part; an unknown chat loads []", async () => {
    const { store, server, url } = await setup()
    const id = chatId()
    const live = chatAt(url, id)
    await live.chat.sendMessage({ text: "my email please" })
    await settled(live.chat)
    const streamed = live.chat.lastMessage as UIMessage
    expect(streamed.parts.some((p) => p.type === "data-toolnexus-request")).toBe(true)
    const loaded = await loadChat({ store, chatId: id })
    expect(loaded[1]?.parts).toEqual(streamed.parts)
    expect(await loadChat({ store, chatId: chatId() })).toEqual([])
    await server.close()
  })
})

describe("loadChat over a RunHost", () => {
  it("loads a run parked on an approval, its card included, the same as from the store", async () => {
    const store = createMemoryStore()
    const client = clientOf(env.fake, store)
    const { tools } = refundTools()
    const toolkit = await createToolkit({ extraTools: tools })
    const host = createStoreHost({
      store,
      agents: [hostAgent({ name: "chat", client, toolkit })],
      sweepEveryMs: false,
    })
    const id = chatId()
    await host.start("chat", id, "refund my order")
    const result = await host.result(id)
    expect((result as { status: string }).status).toBe("pending")
    const loaded = await loadChat({ host, chatId: id })
    expect(loaded.map((m) => m.role)).toEqual(["user", "assistant"])
    expect(toolPart(loaded[1] as UIMessage)).toMatchObject({
      state: "approval-requested",
      approval: { id: (result as { pending: { id: string } }).pending.id },
    })
    expect(await loadChat({ store, chatId: id })).toEqual(loaded)
    await host.close()
  })

  it("refuses options naming neither a host nor a store, and a bad chat id, with ConfigError", async () => {
    await expect(loadChat({ chatId: "x" } as never)).rejects.toMatchObject({ code: "TNX_CONFIG" })
    await expect(loadChat({ store: createMemoryStore(), chatId: "" })).rejects.toMatchObject({
      code: "TNX_CONFIG",
    })
  })
})

// Each endpoint style stores its transcript in its own shape; the load reads all three.
describe.each(["openai", "anthropic", "openai-responses"] as EndpointStyle[])(
  "loadChat of a %s transcript",
  (style) => {
    it("parked on an approval: the card as streamed; approved after the reload: the finished transcript", async () => {
      const client = createClient({
        baseUrl: style === "anthropic" ? env.fake.url : `${env.fake.url}/v1`,
        style,
        model: "test-model",
        apiKey: "sk-test",
        retries: 0,
        store: createMemoryStore(),
      })
      const store = client.conversationStore()
      const { effects, tools } = refundTools()
      const toolkit = await createToolkit({ extraTools: tools })
      const server = await serve(createChatHandler({ client, toolkit }))
      const id = chatId()
      const live = chatAt(server.url, id)
      await live.chat.sendMessage({ text: "hi" })
      await settled(live.chat)
      await live.chat.sendMessage({ text: "refund my order" })
      await settled(live.chat)
      expect(live.errors).toEqual([])

      // The transcript is in the style's own shape.
      const call = { openai: '"tool_calls"', anthropic: '"tool_use"', "openai-responses": '"function_call"' }
      expect(JSON.stringify(await store.get(id))).toContain(call[style])
      const loaded = await loadChat({ store, chatId: id })
      expect(loaded.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"])
      expect(loaded.map((m) => m.parts)).toEqual(live.chat.messages.map((m) => m.parts))

      const reloaded = chatAt(server.url, id, {
        sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
      })
      reloaded.chat.messages = loaded as UIMessage[]
      await reloaded.chat.addToolApprovalResponse({
        id: approvalIdOf(reloaded.chat.lastMessage),
        approved: true,
      })
      await settled(reloaded.chat)
      expect(reloaded.errors).toEqual([])
      expect(effects).toHaveLength(1)
      const finished = await loadChat({ store, chatId: id })
      expect(textOf(finished[1] as UIMessage)).toBe("Hello there.")
      expect(toolPart(finished[3] as UIMessage)).toMatchObject({
        state: "output-available",
        output: "refunded 30 EUR on A1",
      })
      expect(textOf(finished[3] as UIMessage)).toBe("Done: refunded 30 EUR on A1")
      await server.close()
    })
  },
)
