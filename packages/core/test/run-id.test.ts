import { describe, expect, it } from "vitest"
import { pending } from "../src/suspension/pending.js"
import { defineTool } from "../src/tools/define-tool.js"
import { createToolkit } from "../src/tools/toolkit.js"
import type { Request } from "../src/types.js"
import { STYLES, clientFor, useFakeServer } from "./helpers.js"
import { MemoryExecutor } from "./memory-executor.js"

const ctx = useFakeServer()

// DESIGN §20: `ctx.idempotencyKey` is unique per run. Providers that number their calls from
// zero (several always say `call_0`) gave two runs without an `id` one key, `run:call_0`: two
// different refunds became one at the payment API.

const RUN_ID = /^run-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** A refund tool that needs approval and records the key of every execution. */
function refunds() {
  const keys: { key: string | undefined; answered: boolean }[] = []
  const refund = defineTool({
    name: "refund",
    description: "Refunds an order, with approval",
    inputSchema: { type: "object", properties: { order: { type: "string" } } },
    run: ({ order }, toolCtx) => {
      keys.push({ key: toolCtx.idempotencyKey, answered: toolCtx.answer !== undefined })
      return toolCtx.answer?.ok
        ? `refunded ${order}`
        : pending({ kind: "approval", prompt: `refund ${order}?` })
    },
  })
  return { keys, refund }
}

/** The model calls `refund` as `call_0`; with `answered`, it then answers with the tool's result. */
function callZero(order: string, answered = true) {
  ctx.server.enqueue({ toolCalls: [{ id: "call_0", name: "refund", arguments: { order } }] })
  if (answered)
    ctx.server.enqueue((req) => ({ text: `final: ${req.toolResults.map((r) => r.content).join("|")}` }))
}

const roundTrip = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T

describe.each(STYLES)("a run without an id gets its own (%s)", (style) => {
  it("two runs whose provider says call_0 both times get two keys; each run's id is in its result", async () => {
    const { keys, refund } = refunds()
    const toolkit = await createToolkit({ extraTools: [refund] })
    const client = clientFor(style, ctx.server, { waitFor: (req) => ({ id: req.id, ok: true }) })
    callZero("A-1")
    const first = await client.run("refund A-1", { toolkit })
    callZero("B-2")
    const second = await client.ask("refund B-2", { toolkit })
    expect([first.status, second.status]).toEqual(["done", "done"])
    expect(first.runId).toMatch(RUN_ID)
    expect(second.runId).toMatch(RUN_ID)
    expect(second.runId).not.toBe(first.runId)
    // Each run: the call, then its retry with the answer — under one key, the run's.
    expect(keys).toEqual([
      { key: `${first.runId}:call_0`, answered: false },
      { key: `${first.runId}:call_0`, answered: true },
      { key: `${second.runId}:call_0`, answered: false },
      { key: `${second.runId}:call_0`, answered: true },
    ])
  })

  it("a stream without an id gets one too", async () => {
    const { keys, refund } = refunds()
    const toolkit = await createToolkit({ extraTools: [refund] })
    const client = clientFor(style, ctx.server)
    const results = []
    for (const order of ["A-1", "B-2"]) {
      ctx.server.enqueue({ toolCalls: [{ id: "call_0", name: "refund", arguments: { order } }] })
      for await (const ev of client.stream(`refund ${order}`, { toolkit })) {
        if (ev.type === "done") results.push(ev.result)
      }
    }
    const [a, b] = results
    expect(a?.pending?.data?.runId).toBe(a?.runId)
    expect(b?.pending?.data?.runId).toBe(b?.runId)
    expect(new Set(keys.map((k) => k.key))).toEqual(new Set([`${a?.runId}:call_0`, `${b?.runId}:call_0`]))
    expect(a?.runId).not.toBe(b?.runId)
  })

  it("continueRun after a halt, on a fresh client from JSON, retries the call under its key; a new halt keeps the id", async () => {
    const { keys, refund } = refunds()
    callZero("A-1", false)
    const halted = await clientFor(style, ctx.server).run("refund A-1", {
      toolkit: await createToolkit({ extraTools: [refund] }),
    })
    expect(halted.status).toBe("pending")
    expect(halted.runId).toMatch(RUN_ID)
    expect(halted.pending?.data?.runId).toBe(halted.runId)
    // Another run meanwhile, with the same call id, and its own key.
    callZero("B-2", false)
    const other = await clientFor(style, ctx.server).run("refund B-2", {
      toolkit: await createToolkit({ extraTools: [refund] }),
    })
    expect(other.runId).not.toBe(halted.runId)

    // Resumed as after a restart: only the JSON of the halted result is left.
    const saved = roundTrip({ messages: halted.messages, pending: halted.pending as Request })
    ctx.server.enqueue(
      // The resumed run asks once more, and halts again on a second refund.
      { toolCalls: [{ id: "call_0", name: "refund", arguments: { order: "A-1b" } }] },
    )
    const toolkit = await createToolkit({ extraTools: [refund] })
    const answer = { id: saved.pending.id, ok: true }
    const resumed = await clientFor(style, ctx.server).continueRun({ toolkit, ...saved, answer })
    expect(resumed.status).toBe("pending")
    expect(resumed.runId).toBe(halted.runId)
    expect(resumed.pending?.data?.runId).toBe(halted.runId)
    expect(keys).toEqual([
      { key: `${halted.runId}:call_0`, answered: false },
      { key: `${other.runId}:call_0`, answered: false },
      { key: `${halted.runId}:call_0`, answered: true },
      { key: `${halted.runId}:call_0`, answered: false },
    ])
  })

  it("a run with an id keeps it: a stored conversation's, an executor's; no id is stamped on their requests", async () => {
    const { keys, refund } = refunds()
    const toolkit = await createToolkit({ extraTools: [refund] })
    const client = clientFor(style, ctx.server)
    callZero("A-1", false)
    const stored = await client.ask("refund A-1", { toolkit, id: "order-42" })
    expect(stored.runId).toBe("order-42")
    expect(stored.pending?.data).not.toHaveProperty("runId")
    ctx.server.enqueue({ text: "resumed" })
    const answer = { id: stored.pending?.id as string, ok: true }
    const resumed = await client.continueRun({ toolkit, id: "order-42", answer })
    expect(resumed.runId).toBe("order-42")

    callZero("B-2")
    const executor = new MemoryExecutor({ id: "wf-7", answer: (req) => ({ id: req.id, ok: true }) })
    const journaled = await client.run("refund B-2", { toolkit, executor })
    expect(journaled.runId).toBe("wf-7")
    expect(keys.map((k) => k.key)).toEqual([
      "order-42:call_0",
      "order-42:call_0",
      "wf-7:call_0",
      "wf-7:call_0",
    ])
  })

  it("a request halted before runs had ids (no data.runId) resumes under the key it had, run:<call id>", async () => {
    const { keys, refund } = refunds()
    ctx.server.enqueue(
      { toolCalls: [{ id: "call_0", name: "refund", arguments: { order: "A-1" } }] },
      { text: "done" },
    )
    const toolkit = await createToolkit({ extraTools: [refund] })
    const halted = await clientFor(style, ctx.server).run("refund A-1", { toolkit })
    const { runId: _dropped, ...older } = halted.pending?.data ?? {}
    const pendingBefore = { ...(halted.pending as Request), data: older }
    const answer = { id: pendingBefore.id, ok: true }
    const resumed = await clientFor(style, ctx.server).continueRun({
      toolkit,
      messages: halted.messages,
      pending: pendingBefore,
      answer,
    })
    expect(resumed.status).toBe("done")
    expect(resumed.runId).toBe("run")
    expect(keys.at(-1)).toEqual({ key: "run:call_0", answered: true })
  })
})
