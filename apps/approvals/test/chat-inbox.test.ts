import { createStoreHost } from "@toolnexus/durable"
import { createChatHandler } from "@toolnexus/ui/ai-sdk"
import { describe, expect, it } from "vitest"
import { AGENT, approvalsAgents } from "../src/host-inbox.js"
import type { ToolEffect } from "../src/tools.js"
import { type Instance, getJson, instance, json, postJson, useFakeModel } from "./support.js"

// The inbox and a chat (@toolnexus/ui's AI SDK handler) on one store: the chat's pending
// approval is the inbox's, answered in either place once.

const { files, fake } = useFakeModel()

/** A post of the AI SDK's `DefaultChatTransport`. */
const chatPost = (body: unknown) =>
  new Request("http://chat.test/api/chat", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  })

/** A chat handler on a host of the inbox's agent, over the inbox's store and tools. */
function chatOn(inbox: Instance) {
  const agents = approvalsAgents({ client: inbox.client, toolkit: inbox.toolkit })
  const host = createStoreHost({ store: inbox.store, agents, sweepEveryMs: false })
  return createChatHandler({ host, agent: AGENT })
}

/** The fields of a UI message chunk these tests read. */
interface Chunk {
  type: string
  approvalId?: string
  delta?: string
}

/** The chunks of a UI message stream body (`data: <json>` frames, then `[DONE]`). */
async function chunksOf(res: Response): Promise<Chunk[]> {
  const frames = (await res.text()).split("\n\n").filter((f) => f.startsWith("data: "))
  expect(frames.at(-1)).toBe("data: [DONE]")
  return frames.slice(0, -1).map((f) => JSON.parse(f.slice("data: ".length)))
}

describe("the inbox sees a chat's pending approval when they share the store", () => {
  it("lists it under the chat's conversation; approving it in the inbox finishes the chat's run once", async () => {
    const effects: ToolEffect[] = []
    const inbox = await instance(fake(), files.store(), { effects })
    // The chat runs the inbox's agent on a host over the inbox's store (§17: doors share hosts).
    const chat = chatOn(inbox)
    const user = { id: "u1", role: "user", parts: [{ type: "text", text: "Please refund order A-7 $25" }] }
    const card = await chunksOf(
      await chat(chatPost({ id: "support-7", messages: [user], trigger: "submit-message" })),
    )
    const approvalId = card.find((c) => c.type === "tool-approval-request")?.approvalId as string
    expect(approvalId).toMatch(/^pnd-/)

    const listed = await getJson(inbox.app, "/requests")
    expect(listed.requests).toHaveLength(1)
    expect(listed.requests[0]).toMatchObject({
      conversationId: "support-7",
      request: { id: approvalId, kind: "approval", prompt: "Refund $25.00 on order A-7?" },
    })

    const answered = await postJson(inbox.app, `/requests/${approvalId}/answer`, { ok: true })
    expect(answered.status).toBe(200)
    expect(await json(answered)).toMatchObject({ status: "done" })
    expect(effects).toHaveLength(1)
    expect(effects[0]).toMatchObject({ tool: "refund_order", answer: { id: approvalId, ok: true } })
    // The chat's transcript has the final text; the inbox is empty.
    const stored = (await inbox.store.get("support-7")) ?? []
    expect(JSON.stringify(stored.at(-1))).toMatch(/Done: Refunded \$25\.00 on order A-7/)
    expect((await getJson(inbox.app, "/requests")).requests).toEqual([])

    // The card in the page, clicked late: settled, 409 with the inbox's decision; nothing runs.
    const late = await chat(
      chatPost({
        id: "support-7",
        messages: [user],
        trigger: "submit-message",
        answer: { id: approvalId, ok: false, reason: "changed my mind" },
      }),
    )
    expect(late.status).toBe(409)
    expect(((await late.json()) as { error: unknown }).error).toMatchObject({
      code: "TNX_ANSWER_CONFLICT",
      decision: { ok: true },
    })
    expect(effects).toHaveLength(1)
    // The chat goes on: a new turn streams, the earlier turn is in its history.
    const next = await chunksOf(
      await chat(
        chatPost({
          id: "support-7",
          messages: [{ id: "u2", role: "user", parts: [{ type: "text", text: "thanks" }] }],
          trigger: "submit-message",
        }),
      ),
    )
    expect(next.at(-1)).toEqual({ type: "finish", finishReason: "stop" })
  })

  it("approving in the chat settles the inbox's entry: it is gone, and the inbox's late answer is a 409", async () => {
    const effects: ToolEffect[] = []
    const inbox = await instance(fake(), files.store(), { effects })
    const chat = chatOn(inbox)
    const user = { id: "u1", role: "user", parts: [{ type: "text", text: "Please refund order B-2 $5" }] }
    const card = await chunksOf(
      await chat(chatPost({ id: "support-8", messages: [user], trigger: "submit-message" })),
    )
    const approvalId = card.find((c) => c.type === "tool-approval-request")?.approvalId as string
    expect(
      (await getJson(inbox.app, "/requests")).requests.map((r: { request: { id: string } }) => r.request.id),
    ).toEqual([approvalId])
    const done = await chunksOf(
      await chat(
        chatPost({
          id: "support-8",
          messages: [],
          trigger: "submit-message",
          answer: { id: approvalId, ok: true },
        }),
      ),
    )
    const text = done
      .filter((c) => c.type === "text-delta")
      .map((c) => c.delta)
      .join("")
    expect(text).toMatch(/^Done: Refunded \$5\.00 on order B-2/)
    expect((await getJson(inbox.app, "/requests")).requests).toEqual([])
    const late = await postJson(inbox.app, `/requests/${approvalId}/answer`, { ok: false })
    expect(late.status).toBe(409)
    expect(effects).toHaveLength(1)
  })
})
