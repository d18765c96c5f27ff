import { describe, expect, it } from "vitest"
import { createInProcessClient } from "../src/client/in-process-client.js"
import { MemoryStore } from "../src/store/conversation-store.js"
import { pending } from "../src/suspension/pending.js"
import { createToolkit } from "../src/tools/toolkit.js"
import type { Answer, Request, Tool, ToolContext } from "../src/types.js"

/** A model that calls `remote` once with `{q: "x"}`, then replies with the tool result it saw. */
function oneCall(waitFor?: (req: Request) => Answer | Promise<Answer>, store?: MemoryStore) {
  return createInProcessClient({
    model: "m",
    ...(waitFor ? { waitFor } : {}),
    ...(store ? { store } : {}),
    async generate({ messages }) {
      const last = messages.at(-1) as { role: string; content?: unknown }
      if (last.role === "tool") return { content: `saw: ${String(last.content)}` }
      return { toolCalls: [{ id: "call_1", name: "remote", arguments: { q: "x" } }] }
    },
  })
}

/**
 * A tool that suspends with a task id in `data` and, on the retry, finishes from what
 * `ctx.request` carries back, recording every context it saw.
 */
function remoteTool(seen: ToolContext[], rounds = 1, source: Tool["source"] = "custom"): Tool {
  return {
    name: "remote",
    description: "asks a remote party",
    inputSchema: { type: "object" },
    source,
    execute: (_args, ctx = {}) => {
      seen.push(ctx)
      const answered = Number(ctx.request?.data?.round ?? 0)
      if (ctx.answer && answered >= rounds)
        return { output: `task ${String(ctx.request?.data?.taskId)} round ${answered}`, isError: false }
      const round = answered + 1
      return pending({
        id: `req-${round}`,
        kind: "input",
        prompt: `round ${round}?`,
        data: { taskId: "t-9", round },
      })
    },
  }
}

describe("ToolContext.request", () => {
  it("is absent on a first call and set with the answer on an inline waitFor retry", async () => {
    const seen: ToolContext[] = []
    const client = oneCall((req) => ({ id: req.id, ok: true, data: { text: "yes" } }))
    const toolkit = await createToolkit({ extraTools: [remoteTool(seen)] })
    const result = await client.run("go", { toolkit })
    expect(result.text).toBe("saw: task t-9 round 1")
    expect(seen).toHaveLength(2)
    expect(seen[0]?.request).toBeUndefined()
    expect(seen[0]?.answer).toBeUndefined()
    // The request as the waitFor saw it: the tool's data with the loop's stamps.
    expect(seen[1]?.request).toEqual({
      id: "req-1",
      kind: "input",
      prompt: "round 1?",
      data: { callId: "call_1", tool: "remote", args: { q: "x" }, taskId: "t-9", round: 1 },
    })
    expect(seen[1]?.answer).toEqual({ id: "req-1", ok: true, data: { text: "yes" } })
  })

  it("is set on continueRun from a JSON transcript (a fresh client, as after a restart)", async () => {
    const seen: ToolContext[] = []
    const halted = await oneCall().run("go", {
      toolkit: await createToolkit({ extraTools: [remoteTool(seen)] }),
    })
    expect(halted.status).toBe("pending")
    const saved = JSON.parse(JSON.stringify({ messages: halted.messages, pending: halted.pending })) as {
      messages: typeof halted.messages
      pending: Request
    }
    const again: ToolContext[] = []
    const resumed = await oneCall().continueRun({
      toolkit: await createToolkit({ extraTools: [remoteTool(again)] }),
      ...saved,
      answer: { id: "req-1", ok: true },
    })
    expect(resumed.text).toBe("saw: task t-9 round 1")
    expect(again).toHaveLength(1)
    expect(again[0]?.request).toEqual(saved.pending)
    expect(again[0]?.answer).toEqual({ id: "req-1", ok: true })
  })

  it("is set on a stored continueRun (by id), and each round's retry sees its own request (an a2a tool may park again)", async () => {
    const store = new MemoryStore()
    const seen: ToolContext[] = []
    const toolkit = await createToolkit({ extraTools: [remoteTool(seen, 2, "a2a")] })
    const client = oneCall(undefined, store)
    const first = await client.ask("go", { id: "conv-1", toolkit })
    expect(first.pending?.id).toBe("req-1")
    const second = await client.continueRun({ id: "conv-1", toolkit, answer: { id: "req-1", ok: true } })
    expect(second.pending?.id).toBe("req-2")
    expect(seen[1]?.request?.id).toBe("req-1")
    const done = await client.continueRun({ id: "conv-1", toolkit, answer: { id: "req-2", ok: true } })
    expect(done.text).toBe("saw: task t-9 round 2")
    expect(seen[2]?.request).toMatchObject({
      id: "req-2",
      data: { taskId: "t-9", round: 2, callId: "call_1" },
    })
  })

  it("is not set on a declined answer (the tool does not run) nor on calls that did not suspend", async () => {
    const seen: ToolContext[] = []
    const client = oneCall((req) => ({ id: req.id, ok: false, reason: "declined" }))
    const result = await client.run("go", {
      toolkit: await createToolkit({ extraTools: [remoteTool(seen)] }),
    })
    expect(result.text).toBe("saw: declined: round 1? (declined)")
    expect(seen).toHaveLength(1)
    expect(seen[0]?.request).toBeUndefined()
  })

  it("an MCP tool hears its decline, inline and on a resume (it polls or cancels a task), with the request", async () => {
    const seen: ToolContext[] = []
    const decline = (req: Request): Answer => ({ id: req.id, ok: false, reason: "expired" })
    const inline = await oneCall(decline).run("go", {
      toolkit: await createToolkit({ extraTools: [remoteTool(seen, 1, "mcp")] }),
    })
    // The tool ran again with the declined answer and its request (not the loop's `declined:`).
    expect(seen).toHaveLength(2)
    expect(seen[1]?.answer).toEqual({ id: "req-1", ok: false, reason: "expired" })
    expect(seen[1]?.request).toMatchObject({ id: "req-1", data: { taskId: "t-9" } })
    expect(inline.text).toBe("saw: task t-9 round 1")

    const halted = await oneCall().run("go", {
      toolkit: await createToolkit({ extraTools: [remoteTool([], 1, "mcp")] }),
    })
    const again: ToolContext[] = []
    await oneCall().continueRun({
      toolkit: await createToolkit({ extraTools: [remoteTool(again, 1, "mcp")] }),
      messages: halted.messages,
      pending: halted.pending,
      answer: { id: "req-1", ok: false, reason: "expired" },
    })
    expect(again[0]?.answer).toEqual({ id: "req-1", ok: false, reason: "expired" })
    expect(again[0]?.request?.id).toBe("req-1")
  })

  it("ctx.client is the client running the call, on a first call and on a resume", async () => {
    const seen: ToolContext[] = []
    const client = oneCall()
    const toolkit = await createToolkit({ extraTools: [remoteTool(seen)] })
    const halted = await client.run("go", { toolkit })
    await client.continueRun({
      toolkit,
      messages: halted.messages,
      pending: halted.pending,
      answer: { id: "req-1", ok: true },
    })
    expect(seen).toHaveLength(2)
    for (const ctx of seen) expect(ctx.client).toBe(client)
  })
})
