import { createHash } from "node:crypto"
import { describe, expect, it } from "vitest"
import { AnswerInvalidError, ApprovalMismatchError } from "../src/errors.js"
import { pending } from "../src/suspension/pending.js"
import { defineTool } from "../src/tools/define-tool.js"
import { createToolkit } from "../src/tools/toolkit.js"
import type { ApprovalCall, ApprovalPolicy, ApprovalPolicyHook } from "../src/tools/approval-policy.js"
import type { Answer, Message, Request, Tool, ToolContext } from "../src/types.js"
import { transcriptProblems } from "../src/testing/index.js"
import { clientFor, useFakeServer } from "./helpers.js"

const ctx = useFakeServer()
const roundTrip = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T
const sha = (text: string) => createHash("sha256").update(text).digest("hex")
const PAY_SCHEMA = {
  type: "object",
  properties: { amount: { type: "number", minimum: 1 }, to: { type: "string" } },
  required: ["amount", "to"],
}

/** A payment tool whose body never looks at `ctx.answer`; it records every run. */
function payTool(
  opts: { needsApproval?: Parameters<typeof defineTool>[0]["needsApproval"]; editableArgs?: boolean } = {},
) {
  const runs: { args: Record<string, unknown>; ctx: ToolContext }[] = []
  const tool = defineTool({
    name: "pay",
    description: "Pay someone",
    inputSchema: PAY_SCHEMA,
    ...opts,
    run: (args, toolCtx) => {
      runs.push({ args, ctx: toolCtx })
      return `paid ${args.amount} to ${args.to}`
    },
  })
  return { tool, runs }
}

/** The model calls `pay` once with `args`, then sums up whatever the tool answered. */
function scriptPay(args: Record<string, unknown>) {
  ctx.server.enqueue({ toolCalls: [{ id: "c1", name: "pay", arguments: args }] })
  ctx.server.enqueue((req) => ({ text: `final: ${req.toolResults.map((r) => r.content).join("|")}` }))
}

/** The halted transcript with the call's arguments rewritten, as client-written history could be. */
function tampered(messages: Message[], args: Record<string, unknown>): Message[] {
  const copy = roundTrip(messages) as any[]
  for (const m of copy) for (const call of m.tool_calls ?? []) call.function.arguments = JSON.stringify(args)
  return copy as Message[]
}

describe("declarative approval (needsApproval)", () => {
  it("suspends before run with {tool, args, callId, argsHash}; approved, runs once with the seen args", async () => {
    const { tool, runs } = payTool({ needsApproval: true })
    scriptPay({ to: "bob", amount: 5 })
    const toolkit = await createToolkit({ extraTools: [tool] })
    const halted = await clientFor("openai", ctx.server).run("pay bob", { toolkit })

    expect(halted.status).toBe("pending")
    expect(runs).toHaveLength(0)
    const req = halted.pending as Request
    expect(req.kind).toBe("approval")
    expect(req.data).toMatchObject({ tool: "pay", args: { to: "bob", amount: 5 }, callId: "c1" })
    // Canonical JSON: keys sorted, whatever order the model wrote them in.
    expect(req.data?.argsHash).toBe(sha('{"amount":5,"to":"bob"}'))

    const saved = roundTrip({ messages: halted.messages, pending: req })
    const resumed = await clientFor("openai", ctx.server).continueRun({
      toolkit: await createToolkit({ extraTools: [tool] }),
      ...saved,
      answer: { id: req.id, ok: true },
    })
    expect(resumed.status).toBe("done")
    expect(resumed.text).toBe("final: paid 5 to bob")
    expect(runs).toHaveLength(1)
    expect(runs[0]?.args).toEqual({ to: "bob", amount: 5 })
    // The body never sees its approval.
    expect(runs[0]?.ctx.answer).toBeUndefined()
    expect(runs[0]?.ctx.request).toBeUndefined()
    expect(resumed.toolCalls[0]?.metadata?.approval).toEqual({
      decision: "approved",
      by: "human",
      requestId: req.id,
      argsHash: req.data?.argsHash,
    })
    expect(transcriptProblems(resumed.messages)).toEqual([])
  })

  it("an inline waitFor sees the request and the tool runs once after it approves", async () => {
    const { tool, runs } = payTool({ needsApproval: true })
    scriptPay({ amount: 3, to: "ann" })
    const seen: Request[] = []
    const client = clientFor("openai", ctx.server, {
      waitFor: (r) => {
        seen.push(r)
        return { id: r.id, ok: true }
      },
    })
    const result = await client.run("pay ann", { toolkit: await createToolkit({ extraTools: [tool] }) })
    expect(result.text).toBe("final: paid 3 to ann")
    expect(seen.map((r) => [r.kind, r.data?.tool, r.data?.args])).toEqual([
      ["approval", "pay", { amount: 3, to: "ann" }],
    ])
    expect(runs.map((r) => r.args)).toEqual([{ amount: 3, to: "ann" }])
  })

  it("a decline answers `declined: <prompt> (<reason>)`, as every approval path does, and nothing runs", async () => {
    const { tool, runs } = payTool({ needsApproval: true })
    scriptPay({ amount: 5, to: "bob" })
    const toolkit = await createToolkit({ extraTools: [tool] })
    const halted = await clientFor("openai", ctx.server).run("pay", { toolkit })
    const req = halted.pending as Request
    const resumed = await clientFor("openai", ctx.server).continueRun({
      toolkit,
      messages: halted.messages,
      pending: req,
      answer: { id: req.id, ok: false, reason: "too much" },
    })
    expect(resumed.text).toBe(`final: declined: ${req.prompt} (too much)`)
    expect(req.prompt).toBe('Approve pay with {"amount":5,"to":"bob"}?')
    expect(runs).toHaveLength(0)
  })

  it("the function form asks per call (sync, async, and a throw asks)", async () => {
    const cases: [Parameters<typeof defineTool>[0]["needsApproval"], number, boolean][] = [
      [({ amount }) => Number(amount) > 100, 50, false],
      [({ amount }) => Number(amount) > 100, 500, true],
      [async ({ amount }) => Number(amount) > 100, 500, true],
      [async () => false, 500, false],
      [
        () => {
          throw new Error("policy store down")
        },
        1,
        true,
      ],
    ]
    for (const [needsApproval, amount, asks] of cases) {
      const { tool, runs } = payTool({ needsApproval })
      scriptPay({ amount, to: "bob" })
      const result = await clientFor("openai", ctx.server).run("pay", {
        toolkit: await createToolkit({ extraTools: [tool] }),
      })
      expect([amount, result.status]).toEqual([amount, asks ? "pending" : "done"])
      expect(runs).toHaveLength(asks ? 0 : 1)
      ctx.server.reset()
    }
  })

  it("requireApproval on a toolkit gates a tool that declares nothing, with the MCP/builtin rule shapes", async () => {
    const policies: ApprovalPolicy[] = [
      true,
      "destructive",
      { native: ["pay"] },
      (source: string, tool: string) => source === "native" && tool === "pay",
    ]
    for (const requireApproval of policies) {
      const { tool, runs } = payTool()
      scriptPay({ amount: 5, to: "bob" })
      const toolkit = await createToolkit({ extraTools: [tool], requireApproval })
      const halted = await clientFor("openai", ctx.server).run("pay", { toolkit })
      expect(halted.status).toBe("pending")
      expect(halted.pending?.data?.argsHash).toBe(sha('{"amount":5,"to":"bob"}'))
      expect(runs).toHaveLength(0)
      const req = halted.pending as Request
      const resumed = await clientFor("openai", ctx.server).continueRun({
        toolkit,
        messages: halted.messages,
        pending: req,
        answer: { id: req.id, ok: true },
      })
      expect(resumed.text).toBe("final: paid 5 to bob")
      expect(runs).toHaveLength(1)
      ctx.server.reset()
    }
    // A record naming other tools or sources leaves the call alone.
    const { tool, runs } = payTool()
    scriptPay({ amount: 5, to: "bob" })
    const toolkit = await createToolkit({
      extraTools: [tool],
      requireApproval: { http: true, native: ["other"] },
    })
    expect((await clientFor("openai", ctx.server).run("pay", { toolkit })).status).toBe("done")
    expect(runs).toHaveLength(1)
  })

  it("an agent-source tool, re-invoked on a decline, answers `declined:` and does not run", async () => {
    let runs = 0
    const agentTool: Tool = {
      name: "helper",
      description: "a sub-agent as a tool",
      inputSchema: { type: "object" },
      source: "agent",
      execute: () => {
        runs++
        return { output: "helped", isError: false }
      },
    }
    ctx.server.enqueue({ toolCalls: [{ id: "a1", name: "helper", arguments: { q: "x" } }] })
    ctx.server.enqueue((req) => ({ text: `final: ${req.toolResults.map((r) => r.content).join("|")}` }))
    const toolkit = await createToolkit({ agents: [agentTool], requireApproval: { agent: true } })
    const halted = await clientFor("openai", ctx.server).run("help", { toolkit })
    const req = halted.pending as Request
    const resumed = await clientFor("openai", ctx.server).continueRun({
      toolkit,
      messages: halted.messages,
      pending: req,
      answer: { id: req.id, ok: false, reason: "no" },
    })
    expect(resumed.text).toBe(`final: declined: ${req.prompt} (no)`)
    expect(runs).toBe(0)
  })

  it("requireApproval is checked at construction", async () => {
    await expect(createToolkit({ requireApproval: "always" as never })).rejects.toThrow(
      /requireApproval must be/,
    )
    await expect(createToolkit({ approvalPolicy: "allow" as never })).rejects.toThrow(
      /approvalPolicy must be a function/,
    )
    expect(() => payTool({ needsApproval: "yes" as never })).toThrow(
      /"needsApproval" must be a boolean or a function/,
    )
  })

  it("approvalPrompt words the request (a throw falls back to the default)", async () => {
    const prompts: string[] = []
    for (const approvalPrompt of [
      (args: Record<string, unknown>) => `Pay ${args.amount} to ${args.to}?`,
      () => {
        throw new Error("no words")
      },
    ]) {
      const { tool } = payTool({ needsApproval: true })
      tool.approvalPrompt = approvalPrompt
      scriptPay({ amount: 5, to: "bob" })
      const halted = await clientFor("openai", ctx.server).run("pay", {
        toolkit: await createToolkit({ extraTools: [tool] }),
      })
      prompts.push(halted.pending?.prompt as string)
      ctx.server.reset()
    }
    expect(prompts).toEqual(["Pay 5 to bob?", 'Approve pay with {"amount":5,"to":"bob"}?'])
  })

  it("does not ask about a call whose arguments cannot run", async () => {
    const { tool, runs } = payTool({ needsApproval: true })
    scriptPay({ amount: 0, to: "bob" })
    const result = await clientFor("openai", ctx.server).run("pay", {
      toolkit: await createToolkit({ extraTools: [tool] }),
    })
    expect(result.status).toBe("done")
    expect(result.text).toBe("final: invalid arguments: args.amount: must be ≥ 1")
    expect(runs).toHaveLength(0)
  })
})

describe("approvals bound to the call", () => {
  async function halt(tool: ReturnType<typeof payTool>["tool"], args = { amount: 5, to: "bob" }) {
    scriptPay(args)
    const toolkit = await createToolkit({ extraTools: [tool] })
    const halted = await clientFor("openai", ctx.server).run("pay", { toolkit })
    return { toolkit, halted, req: halted.pending as Request }
  }

  it("refuses to resume client-written history whose call arguments changed (ApprovalMismatchError), nothing runs", async () => {
    const { tool, runs } = payTool({ needsApproval: true })
    const { toolkit, halted, req } = await halt(tool)
    const forged = tampered(halted.messages, { amount: 5000, to: "mallory" })
    const before = roundTrip(forged)
    const attempt = clientFor("openai", ctx.server).continueRun({
      toolkit,
      messages: forged,
      pending: req,
      answer: { id: req.id, ok: true },
    })
    await expect(attempt).rejects.toThrow(ApprovalMismatchError)
    await expect(attempt).rejects.toThrow(/does not cover this call.*nothing was run or changed/)
    expect(runs).toHaveLength(0)
    expect(forged).toEqual(before)
    expect(ctx.server.requests).toHaveLength(1)
    // The same arguments in another key order are the same call.
    const reordered = tampered(halted.messages, { to: "bob", amount: 5 })
    const resumed = await clientFor("openai", ctx.server).continueRun({
      toolkit,
      messages: reordered,
      pending: req,
      answer: { id: req.id, ok: true },
    })
    expect(resumed.text).toBe("final: paid 5 to bob")
  })

  it("a refused resume runs none of the halted turn's other calls either", async () => {
    const { tool, runs } = payTool({ needsApproval: true })
    let asks = 0
    const ask = defineTool({
      name: "ask_card",
      description: "asks which card",
      inputSchema: { type: "object" },
      run: () => {
        asks++
        return pending({ kind: "input", prompt: "Which card?" })
      },
    })
    ctx.server.enqueue({
      toolCalls: [
        { id: "c1", name: "pay", arguments: { amount: 5, to: "bob" } },
        { id: "c2", name: "ask_card", arguments: {} },
      ],
    })
    const toolkit = await createToolkit({ extraTools: [tool, ask] })
    const halted = await clientFor("openai", ctx.server).run("pay", { toolkit })
    const req = halted.pending as Request
    expect([req.data?.callId, asks]).toEqual(["c1", 1])
    const attempt = clientFor("openai", ctx.server).continueRun({
      toolkit,
      messages: tampered(halted.messages, { amount: 5000, to: "mallory" }),
      pending: req,
      answer: { id: req.id, ok: true },
    })
    await expect(attempt).rejects.toThrow(ApprovalMismatchError)
    expect([runs.length, asks]).toEqual([0, 1])
  })

  it("a delegating call retried with a sub-agent's approval gets the answer as it is (not checked as its own)", async () => {
    // What a sub-agent's approval looks like to the parent: the leaf's tool, args and hash.
    const leafArgs = { amount: 5, to: "bob" }
    const seen: (Answer | undefined)[] = []
    const delegate = defineTool({
      name: "delegate",
      description: "hands the payment to a sub-agent",
      inputSchema: { type: "object" },
      run: (_args, toolCtx) => {
        seen.push(toolCtx.answer)
        if (toolCtx.answer?.ok) return "the sub-agent paid"
        const data = { tool: "pay", args: leafArgs, argsHash: sha('{"amount":5,"to":"bob"}') }
        return pending({ kind: "approval", prompt: "Approve pay?", data })
      },
    })
    ctx.server.enqueue({ toolCalls: [{ id: "d1", name: "delegate", arguments: { task: "pay bob" } }] })
    ctx.server.enqueue((req) => ({ text: `final: ${req.toolResults.map((r) => r.content).join("|")}` }))
    const toolkit = await createToolkit({ extraTools: [delegate] })
    const halted = await clientFor("openai", ctx.server).run("pay", { toolkit })
    const req = halted.pending as Request
    expect(req.data).toMatchObject({ tool: "pay", callId: "d1" })
    const resumed = await clientFor("openai", ctx.server).continueRun({
      toolkit,
      messages: halted.messages,
      pending: req,
      answer: { id: req.id, ok: true },
    })
    expect(resumed.text).toBe("final: the sub-agent paid")
    expect(seen[1]).toEqual({ id: req.id, ok: true })
  })

  it("applies edited arguments only where editableArgs allows, validated, and records them", async () => {
    const { tool, runs } = payTool({ needsApproval: true, editableArgs: true })
    const { toolkit, halted, req } = await halt(tool)
    expect(req.data?.editableArgs).toBe(true)
    const resumeWith = (answer: Answer) =>
      clientFor("openai", ctx.server).continueRun({
        toolkit,
        messages: halted.messages,
        pending: req,
        answer,
      })

    const invalid = resumeWith({ id: req.id, ok: true, data: { args: { amount: -1, to: "bob" } } })
    await expect(invalid).rejects.toThrow(AnswerInvalidError)
    await expect(invalid).rejects.toThrow(
      /answer\.data\.args do not fit the schema of pay: answer\.data\.args\.amount: must be ≥ 1/,
    )
    await expect(resumeWith({ id: req.id, ok: true, data: { args: "all" } })).rejects.toThrow(
      AnswerInvalidError,
    )
    expect(runs).toHaveLength(0)

    const edited = await resumeWith({ id: req.id, ok: true, data: { args: { amount: 4, to: "bob" } } })
    expect(edited.text).toBe("final: paid 4 to bob")
    expect(runs.map((r) => r.args)).toEqual([{ amount: 4, to: "bob" }])
    expect(edited.toolCalls[0]?.metadata?.approval).toMatchObject({
      decision: "approved",
      argsHash: req.data?.argsHash,
      editedArgs: { amount: 4, to: "bob" },
    })
  })

  it("refuses edited arguments for a tool that does not allow them", async () => {
    const { tool, runs } = payTool({ needsApproval: true })
    const { toolkit, halted, req } = await halt(tool)
    const attempt = clientFor("openai", ctx.server).continueRun({
      toolkit,
      messages: halted.messages,
      pending: req,
      answer: { id: req.id, ok: true, data: { args: { amount: 1, to: "bob" } } },
    })
    await expect(attempt).rejects.toThrow(AnswerInvalidError)
    await expect(attempt).rejects.toThrow(/tool pay does not take edited arguments/)
    expect(runs).toHaveLength(0)
  })

  it("an inline waitFor's edits are checked the same way", async () => {
    const { tool, runs } = payTool({ needsApproval: true, editableArgs: true })
    scriptPay({ amount: 5, to: "bob" })
    const client = clientFor("openai", ctx.server, {
      waitFor: (r) => ({ id: r.id, ok: true, data: { args: { amount: "five", to: "bob" } } }),
    })
    const run = client.run("pay", { toolkit: await createToolkit({ extraTools: [tool] }) })
    await expect(run).rejects.toThrow(AnswerInvalidError)
    expect(runs).toHaveLength(0)
  })
})

describe("approvalPolicy", () => {
  async function withPolicy(approvalPolicy: ApprovalPolicyHook, id = "conv-1") {
    const { tool, runs } = payTool({ needsApproval: true })
    scriptPay({ amount: 5, to: "bob" })
    const toolkit = await createToolkit({ extraTools: [tool], approvalPolicy })
    const result = await clientFor("openai", ctx.server).ask("pay", { toolkit, id })
    return { result, runs }
  }

  it("allow runs without asking, recorded as allowed by policy; it sees tool, args, path and conversation", async () => {
    const calls: ApprovalCall[] = []
    const { result, runs } = await withPolicy((call) => {
      calls.push(call)
      return "allow"
    })
    expect(result.status).toBe("done")
    expect(result.text).toBe("final: paid 5 to bob")
    expect(runs).toHaveLength(1)
    expect(calls).toEqual([
      { tool: "pay", args: { amount: 5, to: "bob" }, path: [], conversationId: "conv-1" },
    ])
    expect(result.toolCalls[0]?.metadata?.approval).toEqual({ decision: "allowed", by: "policy" })
  })

  it("deny answers `declined: denied by policy` and nothing runs", async () => {
    const { result, runs } = await withPolicy(async () => "deny" as const)
    expect(result.text).toBe("final: declined: denied by policy")
    expect(runs).toHaveLength(0)
  })

  it("ask, a throw, a rejection and any other value ask a human", async () => {
    const policies: ApprovalPolicyHook[] = [
      () => "ask",
      () => {
        throw new Error("opa down")
      },
      () => Promise.reject(new Error("opa down")),
      () => "yes" as never,
      () => undefined as never,
      () => ({ verdict: "allow" }) as never,
    ]
    for (const [i, policy] of policies.entries()) {
      const { result, runs } = await withPolicy(policy, `conv-${i}`)
      expect([i, result.status, result.pending?.kind]).toEqual([i, "pending", "approval"])
      expect(runs).toHaveLength(0)
      ctx.server.reset()
    }
  })

  it("is asked only about calls that need approval", async () => {
    const asked: string[] = []
    const { tool, runs } = payTool()
    scriptPay({ amount: 5, to: "bob" })
    const toolkit = await createToolkit({
      extraTools: [tool],
      approvalPolicy: (call) => {
        asked.push(call.tool)
        return "deny"
      },
    })
    const result = await clientFor("openai", ctx.server).run("pay", { toolkit })
    expect(result.text).toBe("final: paid 5 to bob")
    expect(asked).toEqual([])
    expect(runs).toHaveLength(1)
  })
})

describe("pending() stays the way to ask for other input", () => {
  it("a tool with needsApproval off still suspends on its own request", async () => {
    const question = defineTool({
      name: "pay",
      description: "asks",
      inputSchema: { type: "object" },
      run: (_args, toolCtx) =>
        toolCtx.answer?.ok
          ? `got ${toolCtx.answer.data?.text}`
          : pending({ kind: "input", prompt: "Which card?" }),
    })
    scriptPay({})
    const client = clientFor("openai", ctx.server, {
      waitFor: (r) => ({ id: r.id, ok: true, data: { text: "visa" } }),
    })
    const result = await client.run("pay", { toolkit: await createToolkit({ extraTools: [question] }) })
    expect(result.text).toBe("final: got visa")
  })
})
