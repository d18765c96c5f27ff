// A plain turn (no LLM hooks, no tracing, no executor) measures its request in the loop's own
// frame (`LoopConfig.meter`), a resumed turn settles synchronously when its tools do, and a
// first failed attempt retries itself: what the `then` layers and async frames they replaced
// did must hold — the metric's order and failure rules, rejections rather than throws.
import { describe, expect, it } from "vitest"
import type { MetricEvent } from "../src/client/metrics.js"
import { LLMHttpError, UnknownRequestError } from "../src/errors.js"
import { createToolkit } from "../src/tools/toolkit.js"
import { approve, clientFor, useFakeServer } from "./helpers.js"

const ctx = useFakeServer()

const kinds = (events: MetricEvent[]) =>
  events.map((ev) => `${ev.event}:${"status" in ev ? ev.status : ev.outcome}`)

describe("a plain turn's request", () => {
  it("records its llm metric before the tool's and the run's, each once", async () => {
    ctx.server.enqueue({ toolCalls: [{ name: "approve", arguments: { what: "x" } }] })
    const events: MetricEvent[] = []
    const client = clientFor("openai", ctx.server, { onMetric: (ev) => events.push(ev) })
    const toolkit = await createToolkit({ extraTools: [approve] })
    const parked = await client.run("go", { toolkit })
    expect(kinds(events)).toEqual(["llm:ok", "tool:pending", "run:pending"])
    ctx.server.enqueue({ text: "done" })
    const pending = parked.pending as NonNullable<typeof parked.pending>
    const done = await client.continueRun({
      toolkit,
      messages: parked.messages,
      pending,
      answer: { id: pending.id, ok: true },
    })
    expect(done.text).toBe("done")
    expect(kinds(events.slice(3))).toEqual(["tool:ok", "llm:ok", "run:done"])
    const llm = events.find((ev) => ev.event === "llm")
    expect(llm).toMatchObject({ model: "test-model", turn: 1 })
  })

  it("fails the run when the metric listener throws on its llm event, counted as failed", async () => {
    ctx.server.enqueue({ text: "hello" })
    const events: MetricEvent[] = []
    const client = clientFor("openai", ctx.server, {
      onMetric: (ev) => {
        events.push(ev)
        if (ev.event === "llm" && ev.status === "ok") throw new Error("listener broke")
      },
    })
    await expect(client.run("go")).rejects.toThrow("listener broke")
    expect(kinds(events)).toEqual(["llm:ok", "llm:error", "run:error"])
    expect(client.metrics()).toContain('toolnexus_llm_requests_total{model="test-model",status="error"} 1')
  })

  it("records a failed request with its HTTP status, then the failed run", async () => {
    ctx.server.enqueue({ status: 400, text: "bad request" })
    const events: MetricEvent[] = []
    const client = clientFor("openai", ctx.server, { onMetric: (ev) => events.push(ev) })
    await expect(client.run("go")).rejects.toBeInstanceOf(LLMHttpError)
    expect(kinds(events)).toEqual(["llm:error", "run:error"])
    expect(events[0]).toMatchObject({ event: "llm", httpStatus: 400, promptTokens: 0 })
  })

  it("retries a failed first attempt and records one llm event for the request", async () => {
    ctx.server.enqueue({ status: 503, text: "busy" }, { text: "after retry" })
    const events: MetricEvent[] = []
    const attempts: number[] = []
    const client = clientFor("openai", ctx.server, {
      onMetric: (ev) => events.push(ev),
      onError: (info) => {
        attempts.push(info.attempt)
        return "retry"
      },
    })
    const result = await client.run("go")
    expect(result.text).toBe("after retry")
    expect(attempts).toEqual([1])
    expect(ctx.server.requests).toHaveLength(2)
    expect(kinds(events)).toEqual(["llm:ok", "run:done"])
  })
})

describe("a resumed turn", () => {
  it("rejects, not throws, when the answer's request names no call of the halted turn", async () => {
    ctx.server.enqueue({ toolCalls: [{ name: "approve", arguments: { what: "x" } }] })
    const events: MetricEvent[] = []
    const client = clientFor("openai", ctx.server, { onMetric: (ev) => events.push(ev) })
    const toolkit = await createToolkit({ extraTools: [approve] })
    const parked = await client.run("go", { toolkit })
    const pending = parked.pending as NonNullable<typeof parked.pending>
    const stranger = { ...pending, data: { ...pending.data, callId: "no-such-call" } }
    let returned: Promise<unknown> | undefined
    expect(() => {
      returned = client.continueRun({
        toolkit,
        messages: parked.messages,
        pending: stranger,
        answer: { id: pending.id, ok: true },
      })
    }).not.toThrow()
    await expect(returned).rejects.toBeInstanceOf(UnknownRequestError)
    expect(kinds(events).at(-1)).toBe("run:error")
    expect(ctx.server.requests).toHaveLength(1)
  })

  it("leaves the caller's transcript as it was", async () => {
    ctx.server.enqueue({ toolCalls: [{ name: "approve", arguments: { what: "x" } }] }, { text: "done" })
    const client = clientFor("openai", ctx.server)
    const toolkit = await createToolkit({ extraTools: [approve] })
    const parked = await client.run("go", { toolkit })
    const before = JSON.stringify(parked.messages)
    const pending = parked.pending as NonNullable<typeof parked.pending>
    const done = await client.continueRun({
      toolkit,
      messages: parked.messages,
      pending,
      answer: { id: pending.id, ok: true },
    })
    expect(JSON.stringify(parked.messages)).toBe(before)
    expect(done.messages).toHaveLength(parked.messages.length + 1)
    expect(done.toolCalls.map((c) => c.output)).toEqual(["approved x"])
  })
})
