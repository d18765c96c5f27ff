import { join } from "node:path"
import { createToolkit } from "@toolnexus/core"
import { SqliteStore } from "@toolnexus/durable/sqlite"
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from "ai"
import { expect, it } from "vitest"
import { createChatHandler } from "../src/ai-sdk/index.js"
import {
  TestChat,
  approvalIdOf,
  clientOf,
  refundTools,
  serve,
  settled,
  textOf,
  toolPart,
  useFakeModel,
} from "./helpers.js"

const env = useFakeModel("restart")

/** One "process": a store on the file, a client, a toolkit, a handler and an HTTP server. */
async function boot(path: string) {
  const store = new SqliteStore({ path })
  const client = clientOf(env.fake, store)
  const { effects, tools } = refundTools()
  const toolkit = await createToolkit({ extraTools: tools })
  const server = await serve(createChatHandler({ client, toolkit, store }))
  return {
    store,
    effects,
    url: server.url,
    stop: async () => {
      await server.close()
      await store.close()
    },
  }
}

it("the server restarts between the approval card and the click: a new handler on the same SQLite file applies it once", async () => {
  const path = join(env.dir, "chat.db")
  let current = await boot(path)
  // The page stays open across the restart; its transport follows the server to its new port.
  const chat = new TestChat({
    id: "order-chat",
    transport: new DefaultChatTransport({
      api: "/api/chat",
      fetch: (input, init) => fetch(`${current.url}${String(input)}`, init),
    }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  })
  await chat.sendMessage({ text: "refund my order" })
  await settled(chat)
  const approvalId = approvalIdOf(chat.lastMessage)
  const first = current.effects

  await current.stop()
  current = await boot(path)
  // The approvals inbox reads the same store: it lists this very request, held by the chat.
  const open = await current.store.listPending()
  expect(open.map((e) => [e.request.id, e.conversationId])).toEqual([[approvalId, "order-chat"]])

  const llmBefore = env.fake.requests.length
  await chat.addToolApprovalResponse({ id: approvalId, approved: true })
  await settled(chat)
  expect(chat.status).toBe("ready")
  expect(first).toEqual([])
  expect(current.effects).toHaveLength(1)
  expect(toolPart(chat.lastMessage)).toMatchObject({
    state: "output-available",
    output: "refunded 30 EUR on A1",
  })
  expect(textOf(chat.lastMessage)).toBe("Done: refunded 30 EUR on A1")
  // The resume made only the new LLM request (the recorded turn was not re-asked).
  expect(env.fake.requests.length - llmBefore).toBe(1)
  expect(await current.store.listPending()).toEqual([])
  expect(await current.store.getDecision(approvalId)).toEqual({ ok: true })
  await current.stop()
})
