import { randomBytes } from "node:crypto"
import { HttpAgent } from "@ag-ui/client"
import { lastAssistantMessageIsCompleteWithApprovalResponses } from "ai"
import { describe, expect, it } from "vitest"
import { createAgUiHandler } from "../src/ag-ui/index.js"
import { createChatHandler } from "../src/ai-sdk/index.js"
import { doorEngines, useEngine } from "./engine-kit.js"
import { approvalIdOf, chatAt, postRaw, serve, settled, textOf } from "./helpers.js"

// §17 "Doors take a host", on the engines: the chat handler (driven by the AI SDK's own Chat)
// and the AG-UI handler (by @ag-ui/client's HttpAgent) over connectRestate and connectDbos. The
// worker is SIGKILLed between the approval request reaching the client and the answer; a new
// worker runs the approved tool once (counted in the test's tool log), and a second answer gets
// the door's conflict contract.

/** A conversation id of its own for each attempt: a retried test must not meet its first try's run. */
const freshId = (prefix: string) => `${prefix}-${randomBytes(4).toString("hex")}`

describe.each(doorEngines)("the ui doors over $name", (engine) => {
  const opened = useEngine(engine, "the ui doors")

  it.skipIf(engine.skip !== undefined)(
    "useChat: the approval survives a worker SIGKILL; approved, the tool runs once; a second answer is 409",
    async () => {
      const { host, refunds, restart } = opened()
      const server = await serve(createChatHandler({ host, agent: "refunds" }))
      const id = freshId("chat")
      const { chat, errors } = chatAt(server.url, id, {
        sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
      })
      await chat.sendMessage({ text: "refund order 42" })
      await settled(chat)
      expect(errors).toEqual([])
      const requestId = approvalIdOf(chat.lastMessage)
      expect((await host.findRequest(requestId))?.conversationId).toBe(id)

      await restart()
      await chat.addToolApprovalResponse({ id: requestId, approved: true })
      await settled(chat)
      expect(errors).toEqual([])
      expect(textOf(chat.lastMessage)).toBe("done: refunded 30")
      expect(refunds(id)).toHaveLength(1)
      expect(await host.getDecision(requestId)).toEqual({ ok: true })

      const again = await postRaw(server.url, {
        id,
        messages: [],
        trigger: "submit-message",
        answer: { id: requestId, ok: false, reason: "changed my mind" },
      })
      expect(again.status).toBe(409)
      expect(((await again.json()) as { error: unknown }).error).toMatchObject({
        code: "TNX_ANSWER_CONFLICT",
        requestId,
        decision: { ok: true },
      })
      expect(refunds(id)).toHaveLength(1)
      await server.close()
    },
    90_000,
  )

  it.skipIf(engine.skip !== undefined)(
    "AG-UI: the interrupt survives a worker SIGKILL; resumed, the tool runs once; resumed again, one RUN_ERROR TNX_ANSWER_CONFLICT",
    async () => {
      const { host, refunds, restart } = opened()
      const server = await serve(createAgUiHandler({ host, agent: "refunds" }))
      const threadId = freshId("agui")
      const agent = new HttpAgent({ url: `${server.url}/agent`, threadId })
      agent.addMessage({ id: "u1", role: "user", content: "refund order 42" })
      const events: { type: string; [key: string]: unknown }[] = []
      await agent.runAgent({}, { onEvent: ({ event }) => void events.push(event) })
      const finished = events.find((e) => e.type === "RUN_FINISHED") as unknown as {
        outcome: { interrupts: { id: string; reason: string }[] }
      }
      const interrupt = finished.outcome.interrupts[0]
      expect(interrupt?.reason).toBe("tool_call")

      await restart()
      const resume = [{ interruptId: interrupt!.id, status: "resolved", payload: { approved: true } }]
      const resumed: { type: string; [key: string]: unknown }[] = []
      await agent.runAgent({ resume } as never, { onEvent: ({ event }) => void resumed.push(event) })
      expect(
        resumed.find((e) => e.type === "TOOL_CALL_RESULT"),
        JSON.stringify(resumed),
      ).toMatchObject({ content: "refunded 30" })
      expect(resumed.at(-1)?.type).toBe("RUN_FINISHED")
      expect(refunds(threadId)).toHaveLength(1)

      const replay = await fetch(`${server.url}/agent`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ threadId, runId: "replayed", messages: [], tools: [], context: [], resume }),
      })
      const frames = (await replay.text())
        .split("\n\n")
        .filter((f) => f.startsWith("data: "))
        .map((f) => JSON.parse(f.slice(6)) as { type: string; code?: string })
      expect(frames).toMatchObject([{ type: "RUN_ERROR", code: "TNX_ANSWER_CONFLICT" }])
      expect(refunds(threadId)).toHaveLength(1)
      await server.close()
    },
    90_000,
  )
})
