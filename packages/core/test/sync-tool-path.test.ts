// The synchronous path of a tool call (no promise for a synchronous tool without hooks) must
// keep what the async path did: a custom Toolkit's own `execute`, the hook order, and a
// throwing hook or metric listener failing the run rather than escaping the loop.
import { describe, expect, it } from "vitest"
import { defineTool } from "../src/tools/define-tool.js"
import { type Toolkit, createToolkit } from "../src/tools/toolkit.js"
import { clientFor, useFakeServer } from "./helpers.js"

const ctx = useFakeServer()

const echo = defineTool({
  name: "echo",
  description: "Echo text",
  inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  run: ({ text }) => `echo: ${text}`,
})

function oneCall(): void {
  ctx.server.enqueue({ toolCalls: [{ name: "echo", arguments: { text: "hi" } }] }, (req) => ({
    text: `got ${req.toolResults[0]?.content}`,
  }))
}

describe("a synchronous tool call", () => {
  it("goes through a custom Toolkit's own execute", async () => {
    oneCall()
    const inner = await createToolkit({ extraTools: [echo] })
    const executed: string[] = []
    const custom: Toolkit = {
      ...inner,
      tools: () => inner.tools(),
      get: (name) => inner.get(name),
      async execute(name, args, toolCtx) {
        executed.push(name)
        const result = await inner.execute(name, args, toolCtx)
        return { ...result, output: `wrapped ${result.output}` }
      },
    }
    const result = await clientFor("openai", ctx.server).run("go", { toolkit: custom })
    expect(executed).toEqual(["echo"])
    expect(result.text).toBe("got wrapped echo: hi")
  })

  it("keeps the order beforeTool, tool, afterTool, metric", async () => {
    oneCall()
    const order: string[] = []
    const tool = defineTool({
      name: "echo",
      description: "Echo text",
      inputSchema: { type: "object", properties: { text: { type: "string" } } },
      run: ({ text }) => {
        order.push("tool")
        return `echo: ${text}`
      },
    })
    const client = clientFor("openai", ctx.server, {
      hooks: {
        beforeTool: () => {
          order.push("beforeTool")
          return undefined
        },
        afterTool: ({ result }) => {
          order.push("afterTool")
          return { result: { ...result, output: `${result.output}!` } }
        },
      },
      onMetric: (ev) => {
        if (ev.event === "tool") order.push("metric")
      },
    })
    const result = await client.run("go", { toolkit: await createToolkit({ extraTools: [tool] }) })
    expect(order).toEqual(["beforeTool", "tool", "afterTool", "metric"])
    expect(result.text).toBe("got echo: hi!")
  })

  it("rejects the run when afterTool throws synchronously, and still runs the turn's other calls", async () => {
    ctx.server.enqueue({
      toolCalls: [
        { name: "echo", arguments: { text: "a" } },
        { name: "echo", arguments: { text: "b" } },
      ],
    })
    const ran: string[] = []
    const tool = defineTool({
      name: "echo",
      description: "Echo text",
      inputSchema: { type: "object", properties: { text: { type: "string" } } },
      run: ({ text }) => {
        ran.push(String(text))
        return `echo: ${text}`
      },
    })
    const client = clientFor("openai", ctx.server, {
      hooks: {
        afterTool: () => {
          throw new Error("hook broke")
        },
      },
    })
    await expect(client.run("go", { toolkit: await createToolkit({ extraTools: [tool] }) })).rejects.toThrow(
      "hook broke",
    )
    expect(ran).toEqual(["a", "b"])
  })
})
