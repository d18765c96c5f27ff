import { describe, expect, it } from "vitest"
import { type ConversationStore, MemoryStore, adoptConversationStore, createClient } from "../src/index.js"

const clientWith = (store?: ConversationStore) =>
  createClient({
    baseUrl: "http://127.0.0.1:9/v1",
    style: "openai",
    model: "m",
    apiKey: "k",
    ...(store ? { store } : {}),
  })

describe("adoptConversationStore", () => {
  it("moves a client made without a store onto the given one; the former default store forwards to it", async () => {
    const client = clientWith()
    const before = client.conversationStore()
    const next = new MemoryStore()
    expect(adoptConversationStore(client, next)).toBe(true)
    expect(client.conversationStore()).toBe(next)
    await before.save("c", [{ role: "user", content: "hi" }])
    expect(await next.get("c")).toEqual([{ role: "user", content: "hi" }])
    // Already there: nothing to do.
    expect(adoptConversationStore(client, next)).toBe(true)
    expect(adoptConversationStore(client, new MemoryStore())).toBe(false)
  })

  it("refuses a client made with a store, one whose default store holds a conversation, and a hand-made client", async () => {
    const own = new MemoryStore()
    expect(adoptConversationStore(clientWith(own), new MemoryStore())).toBe(false)
    const used = clientWith()
    await used.conversationStore().save("c", [])
    expect(adoptConversationStore(used, new MemoryStore())).toBe(false)
    const handMade = { conversationStore: () => own } as unknown as Parameters<
      typeof adoptConversationStore
    >[0]
    expect(adoptConversationStore(handMade, new MemoryStore())).toBe(false)
  })
})
