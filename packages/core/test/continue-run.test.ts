import { describe, expect, it } from "vitest"
import { AnswerExpiredError, AnswerMismatchError, ConfigError, UnknownRequestError } from "../src/errors.js"
import { pending } from "../src/suspension/pending.js"
import { relayAnswer, relayCallsOf } from "../src/suspension/relay.js"
import { defineTool } from "../src/tools/define-tool.js"
import { relayTool } from "../src/tools/relay-tool.js"
import { createToolkit } from "../src/tools/toolkit.js"
import type { Message, Request, ToolContext } from "../src/types.js"
import { transcriptProblems, userTurns } from "../src/testing/index.js"
import { STYLES, clientFor, useFakeServer } from "./helpers.js"

const ctx = useFakeServer()

/** Tools that count their executions and record each context they saw. */
function countingTools() {
  const runs = { pay: [] as ToolContext[], ship: [] as ToolContext[], echo: [] as ToolContext[] }
  const approvalTool = (name: "pay" | "ship") =>
    defineTool({
      name,
      description: `${name} something`,
      inputSchema: { type: "object", properties: { n: { type: "number" } } },
      run: ({ n }, toolCtx) => {
        runs[name].push(toolCtx)
        return toolCtx.answer?.ok
          ? `${name} ${n} done`
          : pending({ kind: "approval", prompt: `${name} ${n}?` })
      },
    })
  const echo = defineTool({
    name: "echo",
    description: "echo",
    inputSchema: { type: "object", properties: { text: { type: "string" } } },
    run: ({ text }, toolCtx) => {
      runs.echo.push(toolCtx)
      return `echo ${text}`
    },
  })
  return { runs, tools: [approvalTool("pay"), approvalTool("ship"), echo] }
}

const roundTrip = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T

describe.each(STYLES)("continueRun resumes a halted turn (%s)", (style) => {
  it("retries the halted call with ctx.answer on a fresh client; no new user turn; balanced", async () => {
    const { server } = ctx
    const { runs, tools } = countingTools()
    server.enqueue({ toolCalls: [{ id: "p1", name: "pay", arguments: { n: 7 } }] })
    const halted = await clientFor(style, server).run("pay 7", {
      toolkit: await createToolkit({ extraTools: tools }),
    })
    expect(halted.status).toBe("pending")

    // A brand-new client and toolkit, fed only JSON, as after a restart.
    const saved = roundTrip({ messages: halted.messages, pending: halted.pending as Request })
    server.enqueue((req) => ({ text: `final: ${req.toolResults.map((r) => r.content).join("|")}` }))
    const toolkit = await createToolkit({ extraTools: tools })
    const answer = { id: saved.pending.id, ok: true }
    const resumed = await clientFor(style, server).continueRun({ toolkit, ...saved, answer })

    expect(resumed.status).toBe("done")
    expect(resumed.text).toBe("final: pay 7 done")
    expect(runs.pay).toHaveLength(2)
    expect(runs.pay[1]?.answer).toEqual(answer)
    expect(runs.pay[1]?.idempotencyKey).toBe(runs.pay[0]?.idempotencyKey)
    expect(server.requests).toHaveLength(2)
    // The placeholder was replaced, not kept beside the real result.
    expect(server.requests[1]?.toolResults).toEqual([{ id: "p1", content: "pay 7 done", isError: false }])
    expect(transcriptProblems(resumed.messages)).toEqual([])
    expect(userTurns(resumed.messages)).toBe(1)
    expect(resumed.turns).toBe(1)
    expect(resumed.toolCalls.map((c) => [c.id, c.output])).toEqual([["p1", "pay 7 done"]])
  })

  it("refuses an answer that does not echo the pending id and changes nothing", async () => {
    const { server } = ctx
    const { runs, tools } = countingTools()
    server.enqueue({ toolCalls: [{ id: "p1", name: "pay", arguments: { n: 1 } }] })
    const toolkit = await createToolkit({ extraTools: tools })
    const halted = await clientFor(style, server).run("pay", { toolkit })
    const before = roundTrip(halted.messages)
    const client = clientFor(style, server)
    const attempt = client.continueRun({
      toolkit,
      messages: halted.messages,
      pending: halted.pending,
      answer: { id: "pnd-someone-else", ok: true },
    })
    await expect(attempt).rejects.toThrow(AnswerMismatchError)
    await expect(attempt).rejects.toThrow(/does not echo the pending request id/)
    expect(halted.messages).toEqual(before)
    expect(runs.pay).toHaveLength(1)
    expect(server.requests).toHaveLength(1)

    // The same transcript still resumes with the right answer afterwards.
    server.enqueue({ text: "ok" })
    const ok = await client.continueRun({
      toolkit,
      messages: halted.messages,
      pending: halted.pending,
      answer: { id: (halted.pending as Request).id, ok: true },
    })
    expect(ok.status).toBe("done")
  })

  it("a declined answer gives `declined:` with the reason and the model continues", async () => {
    const { server } = ctx
    const { runs, tools } = countingTools()
    server.enqueue({ toolCalls: [{ id: "p1", name: "pay", arguments: { n: 2 } }] }, { text: "understood" })
    const toolkit = await createToolkit({ extraTools: tools })
    const halted = await clientFor(style, server).run("pay", { toolkit })
    const req = halted.pending as Request
    const resumed = await clientFor(style, server).continueRun({
      toolkit,
      messages: halted.messages,
      pending: req,
      answer: { id: req.id, ok: false, reason: "declined" },
    })
    expect(resumed.status).toBe("done")
    expect(runs.pay).toHaveLength(1)
    expect(server.requests[1]?.toolResults[0]?.content).toBe("declined: pay 2? (declined)")
    expect(transcriptProblems(resumed.messages)).toEqual([])
  })

  it("two suspensions in one turn: the second runs on resume, suspends again, then both finish balanced", async () => {
    const { server } = ctx
    const { runs, tools } = countingTools()
    server.enqueue({
      toolCalls: [
        { id: "e1", name: "echo", arguments: { text: "x" } },
        { id: "p1", name: "pay", arguments: { n: 1 } },
        { id: "s1", name: "ship", arguments: { n: 2 } },
      ],
    })
    const toolkit = await createToolkit({ extraTools: tools })
    const first = await clientFor(style, server).run("go", { toolkit })
    expect(first.pending?.data?.callId).toBe("p1")

    const client = clientFor(style, server)
    const p1 = first.pending as Request
    const second = await client.continueRun({
      toolkit,
      messages: first.messages,
      pending: p1,
      answer: { id: p1.id, ok: true },
    })
    expect(second.status).toBe("pending")
    expect(second.pending).toMatchObject({ prompt: "ship 2?", data: { callId: "s1" } })
    expect(server.requests).toHaveLength(1) // no LLM request while the turn is still open
    expect(runs.echo).toHaveLength(1) // the recorded echo result is kept, not re-run

    server.enqueue((req) => ({ text: req.toolResults.map((r) => `${r.id}:${r.content}`).join(",") }))
    const s1 = second.pending as Request
    const done = await client.continueRun({
      toolkit,
      messages: roundTrip(second.messages),
      pending: s1,
      answer: { id: s1.id, ok: true },
    })
    expect(done.status).toBe("done")
    expect(done.text).toBe("e1:echo x,p1:pay 1 done,s1:ship 2 done")
    // pay ran, then its retry; ship ran in turn 1, again on the first resume (it was
    // outstanding), then its retry with the answer; echo's recorded result was kept.
    expect(runs.pay).toHaveLength(2)
    expect(runs.ship).toHaveLength(3)
    expect(runs.ship[2]?.answer).toEqual({ id: s1.id, ok: true })
    expect(runs.echo).toHaveLength(1)
    expect(transcriptProblems(done.messages)).toEqual([])
    expect(userTurns(done.messages)).toBe(1)
  })

  it("relay: results from data.results, a missing one is an explicit error, normal calls kept", async () => {
    const { server } = ctx
    const { runs, tools } = countingTools()
    server.enqueue({
      toolCalls: [
        { id: "r1", name: "read", arguments: { path: "a" } },
        { id: "e1", name: "echo", arguments: { text: "y" } },
        { id: "r2", name: "read", arguments: { path: "b" } },
        { id: "r3", name: "read", arguments: { path: "c" } },
      ],
    })
    const toolkit = await createToolkit({ extraTools: [...tools, relayTool("read", "read a file")] })
    const halted = await clientFor(style, server).run("read", { toolkit })
    const req = halted.pending as Request
    expect(relayCallsOf(req).map((c) => c.id)).toEqual(["r1", "r2", "r3"])

    server.enqueue((r) => ({ text: r.toolResults.map((t) => `${t.id}=${t.content}`).join(";") }))
    const answer = relayAnswer(req.id, [
      { id: "r2", output: "B" },
      { id: "r1", output: "A", isError: false },
    ])
    const resumed = await clientFor(style, server).continueRun({
      toolkit,
      messages: halted.messages,
      pending: req,
      answer,
    })
    expect(resumed.text).toBe("r1=A;e1=echo y;r2=B;r3=no result was supplied for relay call r3 (read)")
    expect(runs.echo).toHaveLength(1)
    expect(transcriptProblems(resumed.messages)).toEqual([])
  })

  it("relay: a single call takes the data.output shorthand", async () => {
    const { server } = ctx
    server.enqueue({ toolCalls: [{ id: "r1", name: "read", arguments: { path: "a" } }] })
    const toolkit = await createToolkit({ extraTools: [relayTool("read", "read a file")] })
    const halted = await clientFor(style, server).run("read", { toolkit })
    const req = halted.pending as Request
    server.enqueue((r) => ({ text: `${r.toolResults[0]?.content}/${r.toolResults[0]?.isError}` }))
    const resumed = await clientFor(style, server).continueRun({
      toolkit,
      messages: halted.messages,
      pending: req,
      answer: { id: req.id, ok: true, data: { output: "no such file", isError: true } },
    })
    expect(resumed.text).toBe(`no such file/${style === "anthropic"}`)
    expect(resumed.toolCalls[0]).toMatchObject({ id: "r1", output: "no such file", isError: true })
  })

  it("mixed: a normal suspension surfaced first, then the turn's relay calls suspend on resume", async () => {
    const { server } = ctx
    const { tools } = countingTools()
    server.enqueue({
      toolCalls: [
        { id: "p1", name: "pay", arguments: { n: 3 } },
        { id: "r1", name: "read", arguments: { path: "a" } },
      ],
    })
    const toolkit = await createToolkit({ extraTools: [...tools, relayTool("read", "read a file")] })
    const client = clientFor(style, server)
    const first = await client.run("go", { toolkit })
    expect(first.pending?.kind).toBe("approval")
    const p1 = first.pending as Request
    const second = await client.continueRun({
      toolkit,
      messages: first.messages,
      pending: p1,
      answer: { id: p1.id, ok: true },
    })
    expect(second.status).toBe("pending")
    expect(second.pending?.kind).toBe("tool_call")
    const r = second.pending as Request
    server.enqueue({ text: "all done" })
    const done = await client.continueRun({
      toolkit,
      messages: second.messages,
      pending: r,
      answer: relayAnswer(r.id, [{ id: "r1", output: "A" }]),
    })
    expect(done.status).toBe("done")
    expect(server.requests[1]?.toolResults.map((t) => t.content)).toEqual(["pay 3 done", "A"])
    expect(transcriptProblems(done.messages)).toEqual([])
  })

  it("expiry: ok after expiresAt is refused; an `expired` decline still resumes", async () => {
    const { server } = ctx
    const expiring = defineTool({
      name: "pay",
      description: "pay",
      inputSchema: { type: "object" },
      run: (_args, toolCtx) =>
        toolCtx.answer
          ? "paid"
          : pending({ kind: "approval", prompt: "Pay?", expiresAt: "2020-01-01T00:00:00Z" }),
    })
    server.enqueue({ toolCalls: [{ id: "p1", name: "pay", arguments: {} }] }, { text: "fine" })
    const toolkit = await createToolkit({ extraTools: [expiring] })
    const client = clientFor(style, server)
    const halted = await client.run("pay", { toolkit })
    const req = halted.pending as Request
    const late = client.continueRun({
      toolkit,
      messages: halted.messages,
      pending: req,
      answer: { id: req.id, ok: true },
    })
    await expect(late).rejects.toThrow(AnswerExpiredError)
    const resumed = await client.continueRun({
      toolkit,
      messages: halted.messages,
      pending: req,
      answer: { id: req.id, ok: false, reason: "expired" },
    })
    expect(resumed.status).toBe("done")
    expect(server.requests[1]?.toolResults[0]?.content).toBe("declined: Pay? (expired)")
  })

  it("a stored resume under a claim's context is not judged for expiry again; without it, it is", async () => {
    const { server } = ctx
    const expiring = defineTool({
      name: "pay",
      description: "pay",
      inputSchema: { type: "object" },
      run: (_args, toolCtx) =>
        toolCtx.answer
          ? "paid"
          : pending({ kind: "approval", prompt: "Pay?", expiresAt: "2020-01-01T00:00:00Z" }),
    })
    server.enqueue({ toolCalls: [{ id: "p1", name: "pay", arguments: {} }] }, { text: "fine" })
    const toolkit = await createToolkit({ extraTools: [expiring] })
    const client = clientFor(style, server)
    const halted = await client.ask("pay", { toolkit, id: "claimed" })
    const req = halted.pending as Request
    const answer = { id: req.id, ok: true }
    await expect(client.continueRun({ toolkit, id: "claimed", answer })).rejects.toThrow(AnswerExpiredError)
    // The claim was granted in time (the store judged it once): the resume honours it.
    const resumed = await client.continueRun({ toolkit, id: "claimed", answer, resume: {} })
    expect(resumed.status).toBe("done")
    expect(server.requests[1]?.toolResults[0]?.content).toBe("paid")
    // Still an answer to this request, and a stored continue only.
    await expect(
      client.continueRun({
        toolkit,
        id: "claimed",
        pending: req,
        answer: { id: "other", ok: true },
        resume: {},
      }),
    ).rejects.toThrow(AnswerMismatchError)
    await expect(client.continueRun({ messages: halted.messages, resume: {} })).rejects.toThrow(ConfigError)
  })

  it("the claim's context carries the signal: aborting it aborts the resume", async () => {
    const { server } = ctx
    server.enqueue({ toolCalls: [{ id: "p1", name: "pay", arguments: {} }] }, { text: "fine" })
    const tool = defineTool({
      name: "pay",
      description: "pay",
      inputSchema: { type: "object" },
      run: (_args, toolCtx) => (toolCtx.answer ? "paid" : pending({ kind: "approval", prompt: "Pay?" })),
    })
    const toolkit = await createToolkit({ extraTools: [tool] })
    const client = clientFor(style, server)
    const halted = await client.ask("pay", { toolkit, id: "aborted" })
    const answer = { id: (halted.pending as Request).id, ok: true }
    const lost = new AbortController()
    lost.abort(new Error("claim lost"))
    await expect(
      client.continueRun({ toolkit, id: "aborted", answer, resume: { signal: lost.signal } }),
    ).rejects.toThrow()
    expect(server.requests).toHaveLength(1)
  })

  it("continues a transcript without pending, and refuses half a resume", async () => {
    const { server } = ctx
    server.enqueue({ text: "first" }, (req) => ({ text: `again after ${req.lastUserText}` }))
    const client = clientFor(style, server)
    const first = await client.run("hello")
    const more = await client.continueRun({ messages: first.messages })
    expect(more.text).toBe("again after hello")
    expect(userTurns(more.messages)).toBe(1)
    await expect(
      client.continueRun({ messages: first.messages, answer: { id: "x", ok: true } }),
    ).rejects.toThrow(ConfigError)
  })

  it("a pending request whose call is not in the last assistant turn is an UnknownRequestError", async () => {
    const { server } = ctx
    server.enqueue({ text: "plain" })
    const client = clientFor(style, server)
    const first = await client.run("hello")
    const stray: Request = { id: "pnd-x", kind: "approval", prompt: "?", data: { callId: "nope" } }
    const messages: Message[] = first.messages
    await expect(
      client.continueRun({ messages, pending: stray, answer: { id: "pnd-x", ok: true } }),
    ).rejects.toThrow(UnknownRequestError)
  })
})
