import { describe, expect, it } from "vitest"
import { createInProcessClient } from "../src/client/in-process-client.js"
import { pending } from "../src/suspension/pending.js"
import { createToolkit } from "../src/tools/toolkit.js"
import type { Answer, Request, Tool, ToolContext, ToolResult } from "../src/types.js"

/** A model that calls `name` once, then answers with the tool result it saw. */
function oneCall(name: string, waitFor?: (req: Request) => Answer | Promise<Answer>) {
  return createInProcessClient({
    model: "m",
    ...(waitFor ? { waitFor } : {}),
    async generate({ messages }) {
      const last = messages.at(-1) as { role: string; content?: unknown }
      if (last.role === "tool") return { content: `saw: ${String(last.content)}` }
      return { toolCalls: [{ id: "call_1", name, arguments: {} }] }
    },
  })
}

function tool(source: Tool["source"], execute: (ctx: ToolContext) => ToolResult | Promise<ToolResult>): Tool {
  return {
    name: "t",
    description: "t",
    inputSchema: { type: "object" },
    source,
    execute: (_args, ctx = {}) => execute(ctx),
  }
}

describe("ToolContext.resolve", () => {
  it("asks the client's waitFor in the middle of the tool's work, stamped like a suspension", async () => {
    const asked: Request[] = []
    const client = oneCall("t", (req) => {
      asked.push(req)
      return { id: req.id, ok: true, data: { color: "blue" } }
    })
    const toolkit = await createToolkit({
      extraTools: [
        tool("native", async (ctx) => {
          const answer = await ctx.resolve?.({ id: "q-1", kind: "input", prompt: "Color?" })
          return { output: `color ${String(answer?.data?.color)}`, isError: false }
        }),
      ],
    })
    const result = await client.run("go", { toolkit })
    expect(result.text).toBe("saw: color blue")
    expect(asked).toEqual([
      { id: "q-1", kind: "input", prompt: "Color?", data: { callId: "call_1", tool: "t", args: {} } },
    ])
  })

  it("stamps the arguments a beforeTool hook gave the call", async () => {
    const asked: Request[] = []
    const client = createInProcessClient({
      model: "m",
      waitFor: (req) => {
        asked.push(req)
        return { id: req.id, ok: true }
      },
      hooks: { beforeTool: () => ({ args: { city: "Oslo" } }) },
      async generate({ messages }) {
        if ((messages.at(-1) as { role: string }).role === "tool") return { content: "done" }
        return { toolCalls: [{ id: "call_1", name: "t", arguments: { city: "Rome" } }] }
      },
    })
    const seen: unknown[] = []
    const toolkit = await createToolkit({
      extraTools: [
        {
          name: "t",
          description: "t",
          inputSchema: { type: "object" },
          source: "native",
          async execute(args, ctx = {}) {
            seen.push(args)
            await ctx.resolve?.({ id: "q-1", kind: "input", prompt: "Sure?" })
            return { output: "ok", isError: false }
          },
        },
      ],
    })
    await client.run("go", { toolkit })
    expect(seen).toEqual([{ city: "Oslo" }])
    expect(asked).toEqual([
      {
        id: "q-1",
        kind: "input",
        prompt: "Sure?",
        data: { callId: "call_1", tool: "t", args: { city: "Oslo" } },
      },
    ])
  })

  it("is absent when no waitFor can answer", async () => {
    let seen: unknown = "unset"
    const toolkit = await createToolkit({
      extraTools: [
        tool("native", (ctx) => {
          seen = ctx.resolve
          return { output: "ok", isError: false }
        }),
      ],
    })
    await oneCall("t").run("go", { toolkit })
    expect(seen).toBeUndefined()
  })
})

describe("a retried tool that suspends again", () => {
  const twice = (source: Tool["source"]) =>
    tool(source, (ctx) =>
      ctx.answer?.id === "second"
        ? { output: "finished", isError: false }
        : pending({
            id: ctx.answer ? "second" : "first",
            kind: "input",
            prompt: ctx.answer ? "Then?" : "First?",
          }),
    )

  it("an MCP tool parks again on the new request", async () => {
    const client = oneCall("t")
    const toolkit = await createToolkit({ extraTools: [twice("mcp")] })
    const first = await client.run("go", { toolkit })
    const second = await client.continueRun({
      toolkit,
      messages: first.messages,
      pending: first.pending,
      answer: { id: "first", ok: true },
    })
    expect(second.pending).toMatchObject({ id: "second", prompt: "Then?" })
    const done = await client.continueRun({
      toolkit,
      messages: second.messages,
      pending: second.pending,
      answer: { id: "second", ok: true },
    })
    expect(done.text).toBe("saw: finished")
  })

  it("a native tool's second suspension stays unresolved", async () => {
    const client = oneCall("t")
    const toolkit = await createToolkit({ extraTools: [twice("native")] })
    const first = await client.run("go", { toolkit })
    const second = await client.continueRun({
      toolkit,
      messages: first.messages,
      pending: first.pending,
      answer: { id: "first", ok: true },
    })
    expect(second.status).toBe("done")
    expect(second.toolCalls.at(-1)?.output).toBe("unresolved: Then?")
  })
})

describe("ToolContext.request", () => {
  it("a call retried with an answer gets the request it suspended on, data and stamps included", async () => {
    const seen: (Request | undefined)[] = []
    const toolkit = await createToolkit({
      extraTools: [
        tool("native", (ctx) => {
          seen.push(ctx.request)
          if (!ctx.answer) return pending({ id: "r-1", kind: "approval", prompt: "Go?", data: { step: 3 } })
          return { output: `resumed at step ${String(ctx.request?.data?.step)}`, isError: false }
        }),
      ],
    })
    const client = oneCall("t")
    const first = await client.run("go", { toolkit })
    expect(first.status).toBe("pending")
    const done = await client.continueRun({
      messages: first.messages,
      pending: first.pending,
      answer: { id: "r-1", ok: true },
      toolkit,
    })
    expect(done.text).toBe("saw: resumed at step 3")
    expect(seen).toEqual([
      undefined,
      {
        id: "r-1",
        kind: "approval",
        prompt: "Go?",
        // The id of the run without an id rides the request it halted on.
        data: { callId: "call_1", tool: "t", args: {}, step: 3, runId: first.runId },
      },
    ])
    expect(first.runId).toMatch(/^run-[0-9a-f-]{36}$/)
    expect(done.runId).toBe(first.runId)
  })

  it("an inline waitFor's retry gets the request it answered", async () => {
    const seen: (Request | undefined)[] = []
    const client = oneCall("t", (req) => ({ id: req.id, ok: true }))
    const toolkit = await createToolkit({
      extraTools: [
        tool("native", (ctx) => {
          seen.push(ctx.request)
          return ctx.answer
            ? { output: "ok", isError: false }
            : pending({ id: "r-2", kind: "approval", prompt: "Go?" })
        }),
      ],
    })
    expect((await client.run("go", { toolkit })).text).toBe("saw: ok")
    expect(seen.map((r) => r?.id)).toEqual([undefined, "r-2"])
  })
})
