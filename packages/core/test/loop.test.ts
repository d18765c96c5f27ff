import { describe, expect, it } from "vitest"
import { defineTool } from "../src/tools/define-tool.js"
import { relayTool } from "../src/tools/relay-tool.js"
import { createToolkit } from "../src/tools/toolkit.js"
import { pending, pendingOf } from "../src/suspension/pending.js"
import { relayCallsOf } from "../src/suspension/relay.js"
import type { Answer, Request, ToolContext } from "../src/types.js"
import { STYLES, clientFor, useFakeServer } from "./helpers.js"

const ctx = useFakeServer()

/** A payment tool that suspends for approval and pays when retried with an ok answer. */
function paymentTool(seen: ToolContext[] = []) {
  return defineTool({
    name: "pay",
    description: "Pay an amount",
    inputSchema: { type: "object", properties: { amount: { type: "number" } }, required: ["amount"] },
    run: ({ amount }, toolCtx) => {
      seen.push(toolCtx)
      if (toolCtx.answer?.ok) return `paid ${amount}`
      return pending({ kind: "approval", prompt: `Pay ${amount}?` })
    },
  })
}

const echo = defineTool({
  name: "echo",
  description: "Echo text",
  inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  run: ({ text }) => `echo: ${text}`,
})

describe.each(STYLES)("the loop (%s)", (style) => {
  it("runs a plain tool loop and sums usage over turns", async () => {
    const { server } = ctx
    server.enqueue(
      {
        toolCalls: [{ name: "echo", arguments: { text: "hi" } }],
        usage: { promptTokens: 11, completionTokens: 3 },
      },
      (req) => ({
        text: `got ${req.toolResults[0]?.content}`,
        usage: { promptTokens: 20, completionTokens: 4 },
      }),
    )
    const toolkit = await createToolkit({ extraTools: [echo] })
    const result = await clientFor(style, server).run("say hi", { toolkit })
    expect(result.status).toBe("done")
    expect(result.text).toBe("got echo: hi")
    expect(result.turns).toBe(2)
    expect(result.usage).toEqual({ promptTokens: 31, completionTokens: 7, totalTokens: 38 })
    expect(result.toolCalls).toEqual([
      { id: expect.any(String), name: "echo", args: { text: "hi" }, output: "echo: hi", isError: false },
    ])
    expect(result.toolCallCount).toBe(1)
    expect(server.requests.map((r) => r.model)).toEqual(["test-model", "test-model"])
    expect(server.requests[0]?.toolNames).toEqual(["echo"])
  })

  it("approval flow: waitFor approves and the retried tool sees ctx.answer", async () => {
    const { server } = ctx
    server.enqueue({ toolCalls: [{ id: "call_pay", name: "pay", arguments: { amount: 5 } }] }, (req) => ({
      text: `done: ${req.toolResults[0]?.content}`,
    }))
    const seen: ToolContext[] = []
    const asked: Request[] = []
    const toolkit = await createToolkit({ extraTools: [paymentTool(seen)] })
    const client = clientFor(style, server, {
      waitFor: (req) => {
        asked.push(req)
        return { id: req.id, ok: true }
      },
    })
    const result = await client.run("pay 5", { toolkit })
    expect(result.status).toBe("done")
    expect(result.text).toBe("done: paid 5")
    expect(asked).toHaveLength(1)
    expect(asked[0]).toMatchObject({ kind: "approval", prompt: "Pay 5?", data: { callId: "call_pay" } })
    expect(seen).toHaveLength(2)
    expect(seen[0]?.answer).toBeUndefined()
    expect(seen[1]?.answer).toEqual({ id: asked[0]?.id, ok: true })
    expect(seen[1]?.callId).toBe("call_pay")
    expect(seen[1]?.idempotencyKey).toBe(seen[0]?.idempotencyKey)
    expect(server.requests).toHaveLength(2)
  })

  it("a declined answer becomes a `declined:` result and the model decides", async () => {
    const { server } = ctx
    server.enqueue({ toolCalls: [{ name: "pay", arguments: { amount: 9 } }] }, (req) => ({
      text: `model saw: ${req.toolResults[0]?.content} (error=${req.toolResults[0]?.isError})`,
    }))
    const toolkit = await createToolkit({ extraTools: [paymentTool()] })
    const client = clientFor(style, server, {
      waitFor: (req) => ({ id: req.id, ok: false, reason: "too much" }),
    })
    const result = await client.run("pay 9", { toolkit })
    expect(result.status).toBe("done")
    expect(result.toolCalls[0]).toMatchObject({ output: "declined: Pay 9? (too much)", isError: true })
    const expectedError = style === "anthropic" ? "true" : "false" // openai has no error flag on the wire
    expect(result.text).toBe(`model saw: declined: Pay 9? (too much) (error=${expectedError})`)
  })

  it("a second suspension of the retried call is `unresolved:`", async () => {
    const { server } = ctx
    server.enqueue({ toolCalls: [{ name: "stubborn", arguments: {} }] }, { text: "ok" })
    const stubborn = defineTool({
      name: "stubborn",
      description: "always suspends",
      inputSchema: { type: "object" },
      run: () => pending({ kind: "input", prompt: "Need more" }),
    })
    const toolkit = await createToolkit({ extraTools: [stubborn] })
    const result = await clientFor(style, server, { waitFor: (r) => ({ id: r.id, ok: true }) }).run("x", {
      toolkit,
    })
    expect(result.toolCalls[0]).toMatchObject({ output: "unresolved: Need more", isError: true })
    expect(server.requests[1]?.toolResults[0]?.content).toBe("unresolved: Need more")
  })

  it("halts without waitFor: status pending, callId stamped, JSON round-trip intact", async () => {
    const { server } = ctx
    server.enqueue({
      text: "checking",
      toolCalls: [
        { id: "c1", name: "echo", arguments: { text: "a" } },
        { id: "c2", name: "pay", arguments: { amount: 1 } },
        { id: "c3", name: "pay", arguments: { amount: 2 } },
      ],
    })
    const toolkit = await createToolkit({ extraTools: [echo, paymentTool()] })
    const result = await clientFor(style, server).run("go", { toolkit })
    expect(result.status).toBe("pending")
    expect(result.pending).toMatchObject({ kind: "approval", prompt: "Pay 1?", data: { callId: "c2" } })
    expect(result.pending?.id).toMatch(/^pnd-/)
    // The echo result is kept, c2 gets its placeholder, c3 (also suspended) gets nothing.
    expect(result.toolCalls.map((c) => [c.id, c.output])).toEqual([
      ["c1", "echo: a"],
      ["c2", "Pay 1?"],
    ])
    expect(pendingOf(result.toolCalls[1] as never)).toEqual(result.pending)
    expect(server.requests).toHaveLength(1)
    expect(JSON.parse(JSON.stringify(result))).toEqual(result)
    const last = result.messages.at(-1) as Record<string, unknown>
    if (style === "anthropic") {
      expect(last).toEqual({
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "c1", content: "echo: a" },
          { type: "tool_result", tool_use_id: "c2", content: "Pay 1?", is_error: true },
        ],
      })
    } else if (style === "openai-responses") {
      expect(result.messages.slice(-2)).toEqual([
        { type: "function_call_output", call_id: "c1", output: "echo: a" },
        { type: "function_call_output", call_id: "c2", output: "Pay 1?" },
      ])
    } else {
      expect(result.messages.slice(-2)).toEqual([
        { role: "tool", tool_call_id: "c1", content: "echo: a" },
        { role: "tool", tool_call_id: "c2", content: "Pay 1?" },
      ])
    }
  })

  it("relay: three relay calls of one turn ride one request, in call order", async () => {
    const { server } = ctx
    server.enqueue({
      toolCalls: [
        { id: "r1", name: "read_file", arguments: { path: "a" } },
        { id: "e1", name: "echo", arguments: { text: "x" } },
        { id: "r2", name: "read_file", arguments: { path: "b" } },
        { id: "r3", name: "list_dir", arguments: '{"dir": "/"}' },
      ],
    })
    const toolkit = await createToolkit({
      extraTools: [echo, relayTool("read_file", "Read a file"), relayTool("list_dir", "List a directory")],
    })
    const result = await clientFor(style, server).run("read", { toolkit })
    expect(result.status).toBe("pending")
    const req = result.pending as Request
    expect(req.kind).toBe("tool_call")
    expect(req.data?.callId).toBe("r1")
    expect(relayCallsOf(req)).toEqual([
      { id: "r1", name: "read_file", input: { path: "a" }, arguments: expect.any(String) },
      { id: "r2", name: "read_file", input: { path: "b" }, arguments: expect.any(String) },
      { id: "r3", name: "list_dir", input: { dir: "/" }, arguments: expect.any(String) },
    ])
    if (style === "openai") expect(relayCallsOf(req)[2]?.arguments).toBe('{"dir": "/"}')
    expect(result.toolCalls.map((c) => c.id)).toEqual(["r1", "e1"])
  })

  it("relay with waitFor resolves every relay call inline from one answer", async () => {
    const { server } = ctx
    server.enqueue(
      {
        toolCalls: [
          { id: "r1", name: "read_file", arguments: { path: "a" } },
          { id: "r2", name: "read_file", arguments: { path: "b" } },
        ],
      },
      (req) => ({ text: req.toolResults.map((r) => `${r.id}=${r.content}/${r.isError}`).join(",") }),
    )
    const asked: Request[] = []
    const toolkit = await createToolkit({ extraTools: [relayTool("read_file", "Read a file")] })
    const client = clientFor(style, server, {
      waitFor: (req): Answer => {
        asked.push(req)
        return { id: req.id, ok: true, data: { results: [{ id: "r1", output: "A" }] } }
      },
    })
    const result = await client.run("read", { toolkit })
    expect(asked).toHaveLength(1)
    expect(result.toolCalls.map((c) => [c.id, c.output, c.isError])).toEqual([
      ["r1", "A", false],
      ["r2", "no result was supplied for relay call r2 (read_file)", true],
    ])
  })

  it("runs the tool calls of one turn concurrently and records results in call order", async () => {
    const { server } = ctx
    let running = 0
    let maxRunning = 0
    let release = () => {}
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    const slow = defineTool({
      name: "slow",
      description: "waits for its siblings",
      inputSchema: { type: "object", properties: { n: { type: "number" } } },
      run: async ({ n }) => {
        running++
        maxRunning = Math.max(maxRunning, running)
        if (running === 3) release()
        await gate
        running--
        return `n=${n}`
      },
    })
    server.enqueue(
      { toolCalls: [1, 2, 3].map((n) => ({ id: `s${n}`, name: "slow", arguments: { n } })) },
      { text: "ok" },
    )
    const toolkit = await createToolkit({ extraTools: [slow] })
    const result = await clientFor(style, server).run("go", { toolkit })
    expect(maxRunning).toBe(3)
    expect(result.toolCalls.map((c) => c.output)).toEqual(["n=1", "n=2", "n=3"])
    expect(server.requests[1]?.toolResults.map((r) => r.id)).toEqual(["s1", "s2", "s3"])
  })

  it("bad tool arguments, schema failures and unknown tools become error results; the run goes on", async () => {
    const { server } = ctx
    server.enqueue(
      {
        toolCalls: [
          { id: "b1", name: "echo", arguments: "{not json" },
          { id: "b2", name: "echo", arguments: { text: 42 } },
          { id: "b3", name: "nope", arguments: {} },
        ],
      },
      { text: "recovered" },
    )
    const toolkit = await createToolkit({ extraTools: [echo] })
    const result = await clientFor(style, server, { requestParams: {} }).run("go", { toolkit })
    expect(result.status).toBe("done")
    const outputs = result.toolCalls.map((c) => c.output)
    if (style === "openai")
      expect(outputs[0]).toMatch(/^invalid arguments for echo: the arguments are not valid JSON/)
    expect(outputs[1]).toBe("invalid arguments: args.text: must be string, got number")
    expect(outputs[2]).toBe('unknown tool "nope"; available tools: echo')
    expect(result.toolCalls.every((c) => c.isError)).toBe(true)
  })

  it("maxTurns reached gives incomplete with limit, never done", async () => {
    const { server } = ctx
    server.addRule({
      match: () => true,
      reply: { toolCalls: [{ name: "echo", arguments: { text: "again" } }] },
    })
    const toolkit = await createToolkit({ extraTools: [echo] })
    const result = await clientFor(style, server, { maxTurns: 3 }).run("loop", { toolkit })
    expect(result.status).toBe("incomplete")
    expect(result.limit).toBe("maxTurns")
    expect(result.turns).toBe(3)
    expect(server.requests).toHaveLength(3)
  })

  it("sends the system prompt, omits tools when there are none, and applies requestParams and bodyTransform", async () => {
    const { server } = ctx
    server.enqueue({ text: "a" }, { text: "b" })
    const client = clientFor(style, server, {
      systemPrompt: "Be brief.",
      requestParams: { temperature: 0.2, tool_choice: "auto" },
      bodyTransform: (body) => ({ ...body, metadata: { tag: "t1" } }),
    })
    await client.run("one")
    const body = server.requests[0]?.body
    expect(server.requests[0]?.system).toBe("Be brief.")
    expect(body.temperature).toBe(0.2)
    expect(body.metadata).toEqual({ tag: "t1" })
    expect("tools" in body).toBe(false)
    expect("tool_choice" in body).toBe(false)
    const toolkit = await createToolkit({ extraTools: [echo] })
    await client.run("two", { toolkit })
    expect(server.requests[1]?.body.tool_choice).toBe("auto")
    expect(server.requests[1]?.toolNames).toEqual(["echo"])
  })

  it("hooks can rewrite requests and tool calls; suspensions reach metrics as pending", async () => {
    const { server } = ctx
    server.enqueue({
      toolCalls: [
        { id: "h1", name: "echo", arguments: { text: "raw" } },
        { id: "h2", name: "echo", arguments: { text: "skip" } },
        { id: "h3", name: "pay", arguments: { amount: 3 } },
      ],
    })
    const toolkit = await createToolkit({ extraTools: [echo, paymentTool()] })
    const seenTools: string[][] = []
    const metrics: string[] = []
    const client = clientFor(style, server, {
      onMetric: (ev) => {
        if (ev.event === "tool") metrics.push(`${ev.tool}:${ev.outcome}`)
      },
      hooks: {
        beforeLLM: ({ tools }) => {
          seenTools.push(tools.map((t) => t.name))
          return {
            tools: tools.filter((t) => t.name !== "pay").concat(tools.filter((t) => t.name === "pay")),
          }
        },
        beforeTool: ({ id, args }) =>
          id === "h2"
            ? { result: { output: "short-circuit", isError: false } }
            : { args: { ...args, text: `${args.text}!` } },
        afterTool: ({ id, result }) =>
          id === "h1" ? { result: { ...result, output: result.output.toUpperCase() } } : undefined,
      },
    })
    const result = await client.run("go", { toolkit })
    expect(seenTools).toEqual([["echo", "pay"]])
    expect(result.toolCalls.map((c) => c.output)).toEqual(["ECHO: RAW!", "short-circuit", "Pay 3?"])
    expect(metrics.sort()).toEqual(["echo:ok", "echo:ok", "pay:pending"])
    const text = client.metrics()
    expect(text).toContain('toolnexus_tool_calls_total{tool="pay",source="native",is_error="false"} 1')
    expect(text).toContain('toolnexus_tool_suspensions_total{tool="pay",source="native"} 1')
    expect(text).toContain('toolnexus_llm_requests_total{model="test-model",status="ok"} 1')
  })
})
