import { describe, expect, it } from "vitest"
import { ConfigError } from "../errors.js"
import type { Tool } from "../types.js"
import { defineTool } from "./define-tool.js"
import { relayTool } from "./relay-tool.js"
import { createToolkit } from "./toolkit.js"

const schemaOf = (prop: string) => ({ type: "object", properties: { [prop]: { type: "string" } } })

const alpha = defineTool({
  name: "alpha",
  description: "First",
  inputSchema: schemaOf("a"),
  run: ({ a }) => `A:${a}`,
})
const beta = defineTool({
  name: "beta",
  description: "Second",
  inputSchema: schemaOf("b"),
  run: ({ b }) => `B:${b}`,
})

function custom(name: string, execute: Tool["execute"]): Tool {
  return { name, description: `custom ${name}`, inputSchema: { type: "object" }, source: "custom", execute }
}

describe("createToolkit", () => {
  it("holds its tools in order and finds them by name", async () => {
    const toolkit = await createToolkit({ extraTools: [alpha, beta] })
    expect(toolkit.tools().map((t) => t.name)).toEqual(["alpha", "beta"])
    expect(toolkit.get("beta")).toBe(beta)
    expect(toolkit.get("gamma")).toBeUndefined()
    expect((await createToolkit()).tools()).toEqual([])
  })

  it("refuses two tools with the same name, in one call or across calls", async () => {
    const alpha2 = defineTool({ name: "alpha", description: "Impostor", inputSchema: {}, run: () => "x" })
    await expect(createToolkit({ extraTools: [alpha, alpha2] })).rejects.toThrow(ConfigError)
    await expect(createToolkit({ extraTools: [alpha, alpha2] })).rejects.toThrow(
      /duplicate tool name "alpha"/,
    )
    const toolkit = await createToolkit({ extraTools: [alpha] })
    expect(() => toolkit.register(alpha2)).toThrow(ConfigError)
    expect(() => toolkit.register(beta, relayTool("beta", "relay twin"))).toThrow(ConfigError)
    // A refused registration changes nothing.
    expect(toolkit.tools().map((t) => t.name)).toEqual(["alpha"])
    expect(toolkit.get("alpha")).toBe(alpha)
  })

  it("refuses a tool with an invalid name", async () => {
    const toolkit = await createToolkit()
    expect(() => toolkit.register(custom("bad name", () => ({ output: "", isError: false })))).toThrow(
      ConfigError,
    )
    expect(toolkit.tools()).toEqual([])
  })

  it("renders the OpenAI, Anthropic and Gemini shapes", async () => {
    const toolkit = await createToolkit({ extraTools: [alpha, beta] })
    expect(toolkit.toOpenAI()).toEqual([
      { type: "function", function: { name: "alpha", description: "First", parameters: schemaOf("a") } },
      { type: "function", function: { name: "beta", description: "Second", parameters: schemaOf("b") } },
    ])
    expect(toolkit.toAnthropic()).toEqual([
      { name: "alpha", description: "First", input_schema: schemaOf("a") },
      { name: "beta", description: "Second", input_schema: schemaOf("b") },
    ])
    expect(toolkit.toGemini()).toEqual([
      {
        functionDeclarations: [
          { name: "alpha", description: "First", parameters: schemaOf("a") },
          { name: "beta", description: "Second", parameters: schemaOf("b") },
        ],
      },
    ])
  })

  it("register invalidates the cached renderings", async () => {
    const toolkit = await createToolkit({ extraTools: [alpha] })
    const names = () => ({
      openai: toolkit.toOpenAI().map((t: any) => t.function.name),
      anthropic: toolkit.toAnthropic().map((t: any) => t.name),
      gemini: (toolkit.toGemini()[0] as any).functionDeclarations.map((t: any) => t.name),
    })
    expect(names()).toEqual({ openai: ["alpha"], anthropic: ["alpha"], gemini: ["alpha"] })
    // Rendered once, then reused while nothing changes.
    expect(toolkit.toOpenAI()).toBe(toolkit.toOpenAI())
    expect(toolkit.toAnthropic()).toBe(toolkit.toAnthropic())
    toolkit.register(beta)
    expect(names()).toEqual({
      openai: ["alpha", "beta"],
      anthropic: ["alpha", "beta"],
      gemini: ["alpha", "beta"],
    })
  })

  it("executes a tool by name with its arguments and context", async () => {
    const seen: unknown[] = []
    const probe = custom("probe", (args, ctx) => {
      seen.push([args, ctx])
      return { output: "probed", isError: false }
    })
    const toolkit = await createToolkit({ extraTools: [alpha, probe] })
    expect(await toolkit.execute("alpha", { a: "x" })).toEqual({ output: "A:x", isError: false })
    expect(await toolkit.execute("probe", { k: 1 }, { callId: "c9" })).toEqual({
      output: "probed",
      isError: false,
    })
    expect(seen).toEqual([[{ k: 1 }, { callId: "c9" }]])
  })

  it("an unknown tool is an error result listing the available tools", async () => {
    const toolkit = await createToolkit({ extraTools: [alpha, beta] })
    const result = await toolkit.execute("gamma", {})
    expect(result.isError).toBe(true)
    expect(result.output).toBe('unknown tool "gamma"; available tools: alpha, beta')
    const empty = await (await createToolkit()).execute("gamma", {})
    expect(empty).toEqual({ output: 'unknown tool "gamma"; available tools: none', isError: true })
  })

  it("a tool that throws, synchronously or not, is an error result", async () => {
    const syncThrow = custom("sync_throw", () => {
      throw new Error("sync failure")
    })
    const asyncThrow = custom("async_throw", async () => {
      throw new Error("async failure")
    })
    const oddThrow = custom("odd_throw", () => {
      throw 404
    })
    const toolkit = await createToolkit({ extraTools: [syncThrow, asyncThrow, oddThrow] })
    expect(await toolkit.execute("sync_throw", {})).toEqual({ output: "sync failure", isError: true })
    expect(await toolkit.execute("async_throw", {})).toEqual({ output: "async failure", isError: true })
    expect(await toolkit.execute("odd_throw", {})).toEqual({ output: "404", isError: true })
  })

  it("close empties the toolkit", async () => {
    const toolkit = await createToolkit({ extraTools: [alpha] })
    toolkit.toOpenAI()
    await toolkit.close()
    expect(toolkit.tools()).toEqual([])
    expect(toolkit.toOpenAI()).toEqual([])
    expect(toolkit.toAnthropic()).toEqual([])
  })
})
