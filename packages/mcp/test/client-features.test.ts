import { type Request, createInProcessClient, createToolkit } from "@toolnexus/core"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { type McpConnection, type McpLogEntry, connectMcp } from "../src/index.js"
import { EVERYTHING, UNDER_LOAD } from "./paths.js"

const node = process.execPath

/** The caller's model: it answers a sampling prompt by quoting its last line. */
let generated = 0
const model = createInProcessClient({
  model: "scripted",
  async generate({ messages }) {
    generated++
    const last = messages.at(-1) as { content?: unknown }
    const text = String(last?.content ?? "")
      .split("\n")
      .at(-1)
    return { content: `sampled <${text}>` }
  },
})

describe("client features against the reference server (server-everything)", () => {
  let mcp: McpConnection
  const logs: McpLogEntry[] = []

  beforeAll(async () => {
    mcp = await connectMcp({
      ...UNDER_LOAD,
      servers: { everything: { command: node, args: [EVERYTHING] } },
      roots: [{ uri: "file:///srv/project", name: "project" }],
      sampling: { client: model },
      onLog: (entry) => void logs.push(entry),
    })
  })
  afterAll(() => mcp?.close())

  it("roots: the server lists the roots the connection offers", async () => {
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    const result = await toolkit.execute("everything__get-roots-list", {})
    expect(result.isError).toBe(false)
    expect(result.output).toContain("file:///srv/project")
    expect(result.output).toContain("project")
  })

  it("sampling: approved inline, then answered by the caller's model", async () => {
    const asked: Request[] = []
    const tool = mcp.tools().find((t) => t.name === "everything__trigger-sampling-request")
    const result = await tool?.execute(
      { prompt: "what is 2+2?" },
      {
        resolve: async (req) => {
          asked.push(req)
          return { id: req.id, ok: true }
        },
      },
    )
    expect(asked).toHaveLength(1)
    expect(asked[0]).toMatchObject({
      kind: "approval",
      data: {
        server: "everything",
        tool: "trigger-sampling-request",
        sampling: { systemPrompt: "You are a helpful test server.", maxTokens: 100 },
      },
    })
    expect(result?.isError).toBe(false)
    expect(result?.output).toContain(
      "sampled <user: Resource trigger-sampling-request context: what is 2+2?>",
    )
  })

  it("sampling: a declined approval, or nobody to ask, never reaches the model", async () => {
    const before = generated
    const tool = mcp.tools().find((t) => t.name === "everything__trigger-sampling-request")
    const declined = await tool?.execute(
      { prompt: "x" },
      { resolve: async (req) => ({ id: req.id, ok: false, reason: "declined" }) },
    )
    expect(declined?.isError).toBe(true)
    expect(declined?.output).toContain("the user declined the sampling request")
    const unasked = await tool?.execute({ prompt: "x" })
    expect(unasked?.isError).toBe(true)
    expect(unasked?.output).toContain("sampling needs the user's approval")
    expect(generated).toBe(before)
  })

  it("logging: the server's log messages reach onLog, named by server", async () => {
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    await toolkit.execute("everything__toggle-simulated-logging", {})
    try {
      await vi.waitFor(() => expect(logs.length).toBeGreaterThan(0), { timeout: 5_000 })
      expect(logs[0]).toMatchObject({ server: "everything", level: expect.any(String) })
    } finally {
      await toolkit.execute("everything__toggle-simulated-logging", {})
    }
  })

  it("progress: a long operation's progress keeps the call alive past callTimeoutMs", async () => {
    const quick = await connectMcp({
      ...UNDER_LOAD,
      servers: { everything: { command: node, args: [EVERYTHING] } },
      callTimeoutMs: 1_500,
    })
    try {
      const toolkit = await createToolkit({ extraTools: quick.tools() })
      // Twenty steps of 0.2 s: four seconds in all, each step's progress restarting the 1.5 s
      // limit. (A 0.4 s limit failed in CI: under load two progress notices came 0.4 s apart.)
      const result = await toolkit.execute("everything__trigger-long-running-operation", {
        duration: 4,
        steps: 20,
      })
      expect(result, result.output).toMatchObject({ isError: false })
      expect(result.output).toMatch(/completed/i)
    } finally {
      await quick.close()
    }
  })
})

describe("sampling: true, answered by the model of the client running the call", () => {
  it("the agent's own model answers, within maxTokens; no other model is configured", async () => {
    const prompts: string[] = []
    // One client: it calls the tool, and (nested, as the MCP server's sampling) answers the prompt.
    const agent = createInProcessClient({
      model: "own",
      waitFor: (req) => ({ id: req.id, ok: true }),
      async generate({ messages }) {
        const last = messages.at(-1) as { role: string; content?: unknown }
        const text = String(last.content ?? "")
        if (last.role === "tool") return { content: `final: ${text}` }
        if (text === "go")
          return {
            toolCalls: [{ name: "everything__trigger-sampling-request", arguments: { prompt: "2+2?" } }],
          }
        prompts.push(text)
        return { content: "four, said at some length" }
      },
    })
    for (const [sampling, reply] of [
      [true, "four, said at some length"],
      [{ maxTokens: 2 }, "four, sa"],
    ] as const) {
      prompts.length = 0
      const mcp = await connectMcp({
        ...UNDER_LOAD,
        servers: { everything: { command: node, args: [EVERYTHING] } },
        sampling,
      })
      try {
        const toolkit = await createToolkit({ extraTools: mcp.tools() })
        const result = await agent.run("go", { toolkit })
        expect(prompts).toHaveLength(1)
        expect(prompts[0]).toContain("user: Resource trigger-sampling-request context: 2+2?")
        expect(result.text).toContain(reply)
        if (sampling !== true) {
          expect(prompts[0]).toContain("(Answer in at most 2 tokens.)")
          expect(result.text).not.toContain("four, said")
        }
      } finally {
        await mcp.close()
      }
    }
  })

  it("refuses a malformed sampling option before anything starts", async () => {
    for (const sampling of ["yes", { maxTokens: 0 }, { model: {} }]) {
      await expect(connectMcp({ servers: {}, sampling: sampling as never })).rejects.toThrow(/"sampling/)
    }
  })
})

describe("features not configured are not announced", () => {
  it("without roots or sampling the server offers no tools that need them", async () => {
    const plain = await connectMcp({
      ...UNDER_LOAD,
      servers: { everything: { command: node, args: [EVERYTHING] } },
    })
    try {
      const names = plain.tools().map((t) => t.name)
      expect(names).not.toContain("everything__trigger-sampling-request")
      expect(names).toContain("everything__echo")
    } finally {
      await plain.close()
    }
  })

  it("malformed feature options are a ConfigError", async () => {
    await expect(connectMcp({ ...UNDER_LOAD, servers: {}, roots: [{ uri: "" }] })).rejects.toThrow(
      /"roots" must be an array/,
    )
    await expect(
      connectMcp({ ...UNDER_LOAD, servers: {}, sampling: { client: {} as never } }),
    ).rejects.toThrow(/"sampling.client" must be a toolnexus Client/)
  })
})
