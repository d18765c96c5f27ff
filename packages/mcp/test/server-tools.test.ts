import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Client } from "@modelcontextprotocol/client"
import { ConfigError, type RunHost, type Tool, defineTool } from "@toolnexus/core"
import { createStoreHost, openStore } from "@toolnexus/durable"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createMcpServer, hostedToolAgents } from "../src/server/index.js"
import { connectClient, serveFetch } from "./server-harness.js"

// Plain tools served through the real host on one SQLite file opened by two instances: each
// call is a model-less hosted run, so an approval-gated tool parks durably like an agent.
const KEY = "t".repeat(32)
let dir: string
const ran: string[] = []
const closing: { close(): Promise<void> }[] = []
const urls: string[] = []
const hosts: RunHost[] = []

const echo = defineTool({
  name: "echo",
  description: "Echoes its text",
  inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  run: ({ text }) => `echo: ${String(text)}`,
})
const broken = defineTool({
  name: "broken",
  description: "Always fails",
  inputSchema: { type: "object", properties: {} },
  run: () => {
    throw new Error("disk on fire")
  },
})
const wipe = defineTool({
  name: "wipe",
  description: "Wipes a volume, with approval",
  inputSchema: { type: "object", properties: { volume: { type: "string" } }, required: ["volume"] },
  needsApproval: true,
  approvalPrompt: (args) => `Wipe ${String(args.volume)}?`,
  run: ({ volume }) => {
    ran.push(`wipe ${String(volume)}`)
    return `wiped ${String(volume)}`
  },
})
const tools = [echo, broken, wipe] as Tool[]

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tnx-mcp-tools-"))
  for (let i = 0; i < 2; i++) {
    const store = await openStore(`sqlite:${join(dir, "runs.db")}`)
    const host = createStoreHost({
      store,
      agents: await hostedToolAgents(tools, { store }),
      sweepEveryMs: false,
    })
    hosts.push(host)
    const mcp = createMcpServer({ host, tools, name: "tools", version: "1.0.0", stateKeys: [KEY] })
    const served = await serveFetch(mcp.fetch)
    closing.push(served, { close: () => mcp.close() }, host, store)
    urls.push(served.url)
  }
}, 60_000)

afterAll(async () => {
  for (const item of closing.reverse()) await item.close()
  rmSync(dir, { recursive: true, force: true })
})

type InputRequired = {
  resultType: string
  inputRequests: Record<string, { params: { message: string; requestedSchema: unknown } }>
  requestState: string
}

async function connect(url: string): Promise<Client> {
  const c = await connectClient(url, { elicitation: { form: {} } })
  closing.push(c)
  return c
}

describe("createMcpServer({ tools })", () => {
  it("lists each tool with its own schema and runs it through the host", async () => {
    const c = await connect(urls[0] as string)
    const { tools: listed } = await c.listTools()
    expect(listed.find((t) => t.name === "echo")).toMatchObject({
      description: "Echoes its text",
      inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    })
    expect(await c.callTool({ name: "echo", arguments: { text: "hi" } })).toMatchObject({
      content: [{ type: "text", text: "echo: hi" }],
      isError: false,
    })
    // A call that failed is an error result, as the tool's own error text (no stack).
    const failed = (await c.callTool({ name: "broken", arguments: {} })) as {
      content: { text: string }[]
      isError: boolean
    }
    expect(failed.isError).toBe(true)
    expect(failed.content[0]?.text).toContain("disk on fire")
    expect(failed.content[0]?.text).not.toMatch(/\bat .*\.(ts|js):\d+/)
  }, 30_000)

  it("an approval-gated tool answers input_required; another instance's retry runs it once; a replay decides nothing", async () => {
    const [a, b] = [await connect(urls[0] as string), await connect(urls[1] as string)]
    const first = (await a.callTool(
      { name: "wipe", arguments: { volume: "scratch" } },
      { allowInputRequired: true },
    )) as unknown as InputRequired
    expect(first.resultType).toBe("input_required")
    const [id, request] = Object.entries(first.inputRequests)[0] ?? []
    expect(request?.params.message).toBe("Wipe scratch?")
    expect(request?.params.requestedSchema).toMatchObject({ required: ["approved"] })
    expect(ran).not.toContain("wipe scratch")
    expect(await hosts[0]?.findRequest(id as string)).toMatchObject({
      state: "open",
      request: { kind: "approval" },
    })
    const retry = (approved: boolean) =>
      b.callTool(
        {
          name: "wipe",
          arguments: { volume: "scratch" },
          inputResponses: { [id as string]: { action: "accept", content: { approved } } },
          requestState: first.requestState,
        } as never,
        { allowInputRequired: true },
      )
    expect(await retry(true)).toMatchObject({ content: [{ text: "wiped scratch" }], isError: false })
    expect(await retry(false)).toMatchObject({ content: [{ text: "wiped scratch" }], isError: false })
    expect(ran.filter((r) => r === "wipe scratch")).toHaveLength(1)
  }, 30_000)

  it("a declined approval is an error result naming the decline; the tool never runs", async () => {
    const c = await connect(urls[0] as string)
    const first = (await c.callTool(
      { name: "wipe", arguments: { volume: "home" } },
      { allowInputRequired: true },
    )) as unknown as InputRequired
    const id = Object.keys(first.inputRequests)[0] as string
    const done = (await c.callTool(
      {
        name: "wipe",
        arguments: { volume: "home" },
        inputResponses: { [id]: { action: "accept", content: { approved: false, reason: "not today" } } },
        requestState: first.requestState,
      } as never,
      { allowInputRequired: true },
    )) as { content: { text: string }[]; isError: boolean }
    expect(done.isError).toBe(true)
    expect(done.content[0]?.text).toContain("not today")
    expect(ran).not.toContain("wipe home")
  }, 30_000)

  it("a client without elicitation gets an error result naming the open request, answerable from another door", async () => {
    const c = await connectClient(urls[0] as string)
    closing.push(c)
    const done = (await c.callTool({ name: "wipe", arguments: { volume: "logs" } })) as {
      content: { text: string }[]
      isError: boolean
    }
    expect(done.isError).toBe(true)
    const open = (await hosts[0]?.listPending())?.find((e) => e.request.prompt === "Wipe logs?")
    expect(open).toBeDefined()
    expect(done.content[0]?.text).toContain(open?.request.id)
    expect(done.content[0]?.text).toContain("no elicitation support")
    await hosts[1]?.deliverAnswer({ id: open?.request.id as string, ok: true })
    expect(ran.filter((r) => r === "wipe logs")).toHaveLength(1)
  }, 30_000)

  it("a host that does not serve the tool's agent gets an error result saying so", async () => {
    const store = await openStore(`sqlite:${join(dir, "bare.db")}`)
    const host = createStoreHost({ store, agents: [], sweepEveryMs: false })
    const mcp = createMcpServer({ host, tools: [echo], name: "bare", version: "1.0.0", stateKeys: [KEY] })
    const served = await serveFetch(mcp.fetch)
    closing.push(served, { close: () => mcp.close() }, host, store)
    const c = await connect(served.url)
    const done = (await c.callTool({ name: "echo", arguments: { text: "x" } })) as {
      content: { text: string }[]
      isError: boolean
    }
    expect(done).toMatchObject({ isError: true })
    expect(done.content[0]?.text).toContain("hostedToolAgents")
  }, 30_000)

  it("the tool's run events become progress notifications when the call carries a progress token", async () => {
    const c = await connect(urls[0] as string)
    const progress: unknown[] = []
    const done = await c.callTool(
      { name: "echo", arguments: { text: "p" } },
      { onprogress: (p) => progress.push(p) },
    )
    expect(done).toMatchObject({ content: [{ text: "echo: p" }] })
    expect(progress).toContainEqual(expect.objectContaining({ message: "calling echo" }))
  }, 30_000)

  it("refuses a tool listed twice, one named like an agent, and a name too long for its agent", async () => {
    const host = hosts[0] as RunHost
    const base = { host, name: "x", version: "1", stateKeys: [KEY] }
    expect(() => createMcpServer({ ...base, tools: [echo, echo] })).toThrow(ConfigError)
    expect(() => createMcpServer({ ...base, agents: ["echo"], tools: [echo] })).toThrow(/both as an agent/)
    const long = defineTool({ name: "l".repeat(60), description: "d", inputSchema: {}, run: () => "" })
    expect(() => createMcpServer({ ...base, tools: [long] })).toThrow(/too long/)
    await expect(hostedToolAgents([long])).rejects.toThrow(/too long/)
  })
})
