import { HttpAgent } from "@ag-ui/client"
import { type StreamEvent, createToolkit } from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import { AgUiWriter } from "../src/ag-ui/ag-ui-writer.js"
import { createAgUiHandler } from "../src/ag-ui/index.js"
import { clientOf, refundTools, serve, useFakeModel } from "./helpers.js"

let counter = 0

const env = useFakeModel("agui")

type Seen = { type: string; [key: string]: unknown }

/** Runs the real HttpAgent (its verifier checks every event) and records the events it accepted. */
async function run(agent: HttpAgent, params: Parameters<HttpAgent["runAgent"]>[0] = {}) {
  const events: Seen[] = []
  let failure: Error | undefined
  try {
    await agent.runAgent(params, {
      onEvent: ({ event }) => {
        events.push(event)
      },
      onRunFailed: ({ error }) => {
        failure = error
      },
    })
  } catch (error) {
    failure ??= error as Error
  }
  return { events, failure, types: events.map((e) => e.type) }
}

const finishedOf = (events: Seen[]) =>
  events.find((e) => e.type === "RUN_FINISHED") as Seen & {
    outcome: {
      type: string
      interrupts?: {
        id: string
        reason: string
        toolCallId?: string
        responseSchema?: unknown
        message?: string
        metadata: { toolnexus: { kind: string } }
      }[]
      pendingToolCallIds?: string[]
    }
    result: { status: string }
  }

describe.each(env.cases)(
  "createAgUiHandler with the real @ag-ui/client HttpAgent (%s store, %s)",
  (_name, edge, makeStore) => {
    async function setup() {
      const client = clientOf(env.fake, makeStore())
      const { effects, tools } = refundTools()
      const toolkit = await createToolkit({ extraTools: tools })
      const server = await serve(createAgUiHandler({ client, toolkit }), edge)
      const agent = (threadId: string) => new HttpAgent({ url: `${server.url}/agent`, threadId })
      return { effects, server, agent }
    }

    it("a turn: RUN_STARTED, the text message, RUN_FINISHED with result and usage; the verifier accepts it", async () => {
      const { server, agent } = await setup()
      const a = agent(`t-${++counter}`)
      a.addMessage({ id: "u1", role: "user", content: "hi" })
      const { events, failure, types } = await run(a)
      expect(failure).toBeUndefined()
      expect(types[0]).toBe("RUN_STARTED")
      expect(types.at(-1)).toBe("RUN_FINISHED")
      expect(types).toContain("TEXT_MESSAGE_START")
      expect(types).toContain("TEXT_MESSAGE_END")
      const finished = finishedOf(events)
      expect(finished.result).toMatchObject({ status: "done", finishReason: "stop" })
      expect(finished.outcome).toEqual({ type: "success" })
      expect(finished.usage).toEqual([{ inputTokens: 10, outputTokens: 5, totalTokens: 15 }])
      expect(a.messages.at(-1)).toMatchObject({ role: "assistant", content: "Hello there." })
      await server.close()
    })

    it("an approval is a tool_call interrupt; resume {approved:true} runs the tool once and answers the original call", async () => {
      const { server, agent, effects } = await setup()
      const a = agent(`t-${++counter}`)
      a.addMessage({ id: "u1", role: "user", content: "refund please" })
      const first = await run(a)
      expect(first.failure).toBeUndefined()
      const interrupt = finishedOf(first.events).outcome.interrupts?.[0]
      const start = first.events.find((e) => e.type === "TOOL_CALL_START") as Seen & {
        toolCallId: string
        toolCallName: string
      }
      expect(start.toolCallName).toBe("refund")
      expect(first.types.filter((t) => t.startsWith("TOOL_CALL_"))).toEqual([
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
      ])
      expect(interrupt).toMatchObject({
        reason: "tool_call",
        toolCallId: start.toolCallId,
        message: "Refund 30 EUR on order A1?",
      })
      expect(interrupt?.responseSchema).toMatchObject({ properties: { approved: { type: "boolean" } } })
      expect(interrupt?.metadata.toolnexus).toMatchObject({ id: interrupt?.id, kind: "approval" })
      expect(a.pendingInterrupts.map((i) => i.id)).toEqual([interrupt?.id])
      expect(effects).toEqual([])

      const second = await run(a, {
        resume: [{ interruptId: interrupt!.id, status: "resolved", payload: { approved: true } }],
      })
      expect(second.failure).toBeUndefined()
      expect(effects).toHaveLength(1)
      // The original call is answered; its TOOL_CALL_START is not repeated.
      expect(second.types).not.toContain("TOOL_CALL_START")
      expect(second.events.find((e) => e.type === "TOOL_CALL_RESULT")).toMatchObject({
        toolCallId: start.toolCallId,
        content: "refunded 30 EUR on A1",
      })
      expect(finishedOf(second.events).outcome).toEqual({ type: "success" })
      expect(a.messages.at(-1)).toMatchObject({ role: "assistant", content: "Done: refunded 30 EUR on A1" })
      await server.close()
    })

    it("resume {approved:false, reason} declines; cancelled cancels; the tool never runs", async () => {
      const { server, agent, effects } = await setup()
      for (const [resume, said] of [
        [{ status: "resolved", payload: { approved: false, reason: "no way" } }, /declined: .*no way/],
        [{ status: "cancelled" }, /declined: .*cancelled/],
      ] as const) {
        const a = agent(`t-${++counter}`)
        a.addMessage({ id: "u1", role: "user", content: "refund please" })
        const first = await run(a)
        const id = finishedOf(first.events).outcome.interrupts![0]!.id
        const second = await run(a, { resume: [{ interruptId: id, ...resume }] })
        expect(second.failure).toBeUndefined()
        expect(String(a.messages.at(-1)?.content)).toMatch(said)
      }
      expect(effects).toEqual([])
      await server.close()
    })

    it("an input request is an input_required interrupt with the schema; the payload is the answer's data", async () => {
      const { server, agent } = await setup()
      const a = agent(`t-${++counter}`)
      a.addMessage({ id: "u1", role: "user", content: "what is my email" })
      const first = await run(a)
      const interrupt = finishedOf(first.events).outcome.interrupts![0]!
      expect(interrupt).toMatchObject({
        reason: "input_required",
        responseSchema: { properties: { email: { type: "string" } } },
      })
      const second = await run(a, {
        resume: [{ interruptId: interrupt.id, status: "resolved", payload: { email: "x@y.z" } }],
      })
      expect(second.failure).toBeUndefined()
      expect(a.messages.at(-1)).toMatchObject({ role: "assistant", content: "Done: email: x@y.z" })
      await server.close()
    })

    it("a frontend tool is a relay tool: pendingToolCallIds, then the client's tool message resumes the run", async () => {
      const { server, agent } = await setup()
      const a = agent(`t-${++counter}`)
      a.addMessage({ id: "u1", role: "user", content: "where am I" })
      const tools = [
        {
          name: "locate",
          description: "Where the browser is",
          parameters: { type: "object", properties: {} },
        },
      ]
      const first = await run(a, { tools })
      expect(first.failure).toBeUndefined()
      const outcome = finishedOf(first.events).outcome
      expect(outcome.type).toBe("success")
      const [callId] = outcome.pendingToolCallIds ?? []
      expect(callId).toBeDefined()
      a.addMessage({ id: "tool-1", role: "tool", toolCallId: callId!, content: "Berlin" })
      const second = await run(a, { tools })
      expect(second.failure).toBeUndefined()
      // The client's own result is not streamed back to it.
      expect(second.types).not.toContain("TOOL_CALL_RESULT")
      expect(a.messages.at(-1)).toMatchObject({ role: "assistant", content: "Done: Berlin" })
      await server.close()
    })

    it("bad input inside a valid RunAgentInput is one RUN_ERROR the verifier accepts; a malformed one is 400", async () => {
      const { server, agent } = await setup()
      const a = agent(`t-${++counter}`)
      a.addMessage({ id: "u1", role: "user", content: "refund please" })
      const first = await run(a)
      const id = finishedOf(first.events).outcome.interrupts![0]!.id
      // A new user turn while the thread waits (a raw post: HttpAgent itself refuses to send it).
      const raw = (body: unknown) =>
        fetch(`${server.url}/agent`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        })
      const pendingTurn = await raw({
        threadId: a.threadId,
        runId: "r2",
        messages: [{ id: "u2", role: "user", content: "hello" }],
        tools: [],
        context: [],
      })
      expect(pendingTurn.status).toBe(200)
      const text = await pendingTurn.text()
      const event = JSON.parse(text.replace(/^data: /, "").trim())
      expect(event).toMatchObject({ type: "RUN_ERROR", code: "TNX_CONVERSATION_PENDING" })
      expect(event.metadata.toolnexus.request.id).toBe(id)
      // An unknown interrupt through the real client: one RUN_ERROR, accepted by its verifier.
      const other = agent(`t-${++counter}`)
      const unknown = await run(other, {
        resume: [{ interruptId: "pnd-unknown", status: "resolved", payload: {} }],
      })
      expect(unknown.types).toEqual(["RUN_ERROR"])
      expect(unknown.events[0]).toMatchObject({ code: "TNX_UNKNOWN_REQUEST" })
      // The answer is applied once; a replay of it is a conflict with the first decision.
      await run(a, { resume: [{ interruptId: id, status: "resolved", payload: { approved: true } }] })
      const replay = await raw({
        threadId: a.threadId,
        runId: "r4",
        messages: [],
        tools: [],
        context: [],
        resume: [{ interruptId: id, status: "cancelled" }],
      })
      const replayed = JSON.parse((await replay.text()).replace(/^data: /, "").trim())
      expect(replayed).toMatchObject({
        type: "RUN_ERROR",
        code: "TNX_ANSWER_CONFLICT",
        metadata: { toolnexus: { decision: { ok: true } } },
      })
      const malformed = await raw({ threadId: 7, messages: [] })
      expect(malformed.status).toBe(400)
      expect(((await malformed.json()) as { error: { code: string } }).error.code).toBe("TNX_BAD_REQUEST")
      await server.close()
    })

    it("an approval after expiresAt and an input that asks nothing are one RUN_ERROR each (TNX_ANSWER_EXPIRED, TNX_BAD_REQUEST)", async () => {
      const { server, agent, effects } = await setup()
      const a = agent(`t-${++counter}`)
      a.addMessage({ id: "u1", role: "user", content: "quote please" })
      const first = await run(a)
      const interrupt = finishedOf(first.events).outcome.interrupts![0]!
      expect(interrupt).toMatchObject({ reason: "tool_call", expiresAt: "2000-01-01T00:00:00Z" })
      // The HttpAgent itself refuses to send it (it checks expiresAt too): a raw post, as a
      // client with a slow clock would send it.
      const late = await fetch(`${server.url}/agent`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          threadId: a.threadId,
          runId: "r2",
          messages: [],
          tools: [],
          context: [],
          resume: [{ interruptId: interrupt.id, status: "resolved", payload: { approved: true } }],
        }),
      })
      expect(late.status).toBe(200)
      expect(JSON.parse((await late.text()).replace(/^data: /, "").trim())).toMatchObject({
        type: "RUN_ERROR",
        code: "TNX_ANSWER_EXPIRED",
        metadata: { toolnexus: { requestId: interrupt.id, expiresAt: "2000-01-01T00:00:00Z" } },
      })
      // Closing it (cancelled ⇒ ok:false) is still accepted, and the tool never ran.
      const closed = await run(a, { resume: [{ interruptId: interrupt.id, status: "cancelled" }] })
      expect(closed.failure).toBeUndefined()
      expect(finishedOf(closed.events).result.status).toBe("done")
      expect(effects).toEqual([])
      // A valid input with no resume entry, no tool result and no new user message.
      const nothing = await fetch(`${server.url}/agent`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          threadId: `t-${++counter}`,
          runId: "r1",
          messages: [{ id: "a1", role: "assistant", content: "hi" }],
          tools: [],
          context: [],
        }),
      })
      expect(nothing.status).toBe(200)
      const event = JSON.parse((await nothing.text()).replace(/^data: /, "").trim())
      expect(event).toMatchObject({ type: "RUN_ERROR", code: "TNX_BAD_REQUEST" })
      expect(event.message).toMatch(/asks nothing/)
      await server.close()
    })

    it("a failed run ends with one RUN_ERROR carrying the code, never the key", async () => {
      const { server, agent } = await setup()
      env.fake.reset()
      env.fake.addRule({ match: /.*/, reply: { status: 401, text: "bad key sk-test-secret-key-123" } })
      const a = agent(`t-${++counter}`)
      a.addMessage({ id: "u1", role: "user", content: "hi" })
      const { events, types } = await run(a)
      expect(types).toEqual(["RUN_STARTED", "RUN_ERROR"])
      expect(events[1]).toMatchObject({ code: "TNX_LLM_HTTP" })
      expect(JSON.stringify(events[1])).not.toContain("sk-test-secret-key-123")
      await server.close()
    })
  },
)

it("the harness is sound: the HttpAgent's verifier rejects a stream that breaks the protocol", async () => {
  const server = await serve(async () => {
    const body = [
      { type: "RUN_STARTED", threadId: "t", runId: "r" },
      { type: "TEXT_MESSAGE_CONTENT", messageId: "never-started", delta: "x" },
      { type: "RUN_FINISHED", threadId: "t", runId: "r" },
    ]
      .map((e) => `data: ${JSON.stringify(e)}\n\n`)
      .join("")
    return new Response(body, { headers: { "content-type": "text/event-stream" } })
  })
  const { failure } = await run(new HttpAgent({ url: `${server.url}/agent`, threadId: "t" }))
  expect(failure?.message).toMatch(/No active text message/)
  await server.close()
})

it("reasoning, text and two tool turns as the writer streams them pass the HttpAgent's verifier", async () => {
  const events: unknown[] = []
  const writer = new AgUiWriter((ev) => events.push(ev), { threadId: "t-r", runId: "r-1" })
  writer.start()
  const script: StreamEvent[] = [
    { type: "reasoning", delta: "Thinking " },
    { type: "reasoning", delta: "hard." },
    { type: "text", delta: "Let me look." },
    { type: "turn", turn: 1, finishReason: "tool_calls" },
    { type: "tool_call", id: "c1", name: "lookup", args: { q: "x" } },
    { type: "tool_result", id: "c1", name: "lookup", output: "found", isError: false },
    { type: "turn", turn: 2, finishReason: "tool_calls" },
    { type: "tool_call", id: "c2", name: "lookup", args: { q: "y" } },
    { type: "tool_result", id: "c2", name: "lookup", output: "found too", isError: false },
    { type: "reasoning", delta: "Done." },
    { type: "text", delta: "Both found." },
    { type: "turn", turn: 3, finishReason: "stop" },
  ]
  for (const ev of script) writer.event(ev)
  writer.end({
    status: "done",
    finishReason: "stop",
    usage: { promptTokens: 3, completionTokens: 4, totalTokens: 7 },
  })
  const starts = events.filter((e) => (e as { type: string }).type === "TOOL_CALL_START") as {
    parentMessageId?: string
  }[]
  const firstText = events.find((e) => (e as { type: string }).type === "TEXT_MESSAGE_START") as {
    messageId: string
  }
  // The first call hangs under the turn's text; the second turn had no text, so no parent.
  expect(starts.map((s) => s.parentMessageId)).toEqual([firstText.messageId, undefined])
  const server = await serve(async () => {
    const body = events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("")
    return new Response(body, { headers: { "content-type": "text/event-stream" } })
  })
  const seen = await run(new HttpAgent({ url: `${server.url}/agent`, threadId: "t-r" }))
  expect(seen.failure).toBeUndefined()
  expect(seen.types.filter((t) => t.startsWith("REASONING"))).toEqual([
    "REASONING_START",
    "REASONING_MESSAGE_START",
    "REASONING_MESSAGE_CONTENT",
    "REASONING_MESSAGE_CONTENT",
    "REASONING_MESSAGE_END",
    "REASONING_END",
    "REASONING_START",
    "REASONING_MESSAGE_START",
    "REASONING_MESSAGE_CONTENT",
    "REASONING_MESSAGE_END",
    "REASONING_END",
  ])
  await server.close()
})
