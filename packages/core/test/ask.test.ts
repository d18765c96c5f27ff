import { describe, expect, it } from "vitest"
import { ConversationPendingError } from "../src/errors.js"
import { MemoryStore } from "../src/store/conversation-store.js"
import { pending } from "../src/suspension/pending.js"
import { defineTool } from "../src/tools/define-tool.js"
import { createToolkit } from "../src/tools/toolkit.js"
import type { Request } from "../src/types.js"
import { STYLES, clientFor, useFakeServer } from "./helpers.js"

const ctx = useFakeServer()

const approve = defineTool({
  name: "approve_me",
  description: "needs approval",
  inputSchema: { type: "object" },
  run: (_args, toolCtx) => (toolCtx.answer?.ok ? "approved" : pending({ kind: "approval", prompt: "OK?" })),
})

describe.each(STYLES)("ask on a waiting conversation (%s)", (style) => {
  it("refuses a new prompt with ConversationPendingError and keeps the request", async () => {
    const { server } = ctx
    const store = new MemoryStore()
    const client = clientFor(style, server, { store })
    const toolkit = await createToolkit({ extraTools: [approve] })
    server.enqueue({ toolCalls: [{ name: "approve_me", arguments: {} }] })
    const halted = await client.ask("start", { id: "c1", toolkit })
    const before = await store.get("c1")

    const again = client.ask("something else", { id: "c1", toolkit })
    await expect(again).rejects.toThrow(ConversationPendingError)
    await expect(again).rejects.toThrow(/waits on request pnd-.*answer it/)
    expect(await store.getPending("c1")).toEqual(halted.pending)
    expect(await store.get("c1")).toEqual(before)
    expect(server.requests).toHaveLength(1)

    // Once answered and saved, the conversation takes new prompts again.
    server.enqueue({ text: "done" }, { text: "next" })
    const req = halted.pending as Request
    const resumed = await client.continueRun({
      toolkit,
      messages: before ?? [],
      pending: req,
      answer: { id: req.id, ok: true },
      id: "c1",
    })
    await store.save("c1", resumed.messages, { pending: null })
    expect((await client.ask("and then?", { id: "c1", toolkit })).text).toBe("next")
  })
})
