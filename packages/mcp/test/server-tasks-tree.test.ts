import type { AgentDef } from "@toolnexus/agents"
import { defineTool, hostAgent, pending } from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { type StoreHostAgent, createMemoryStore, createStoreHost } from "@toolnexus/durable"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createMcpServer } from "../src/server/index.js"
import { type Served, serveFetch } from "./server-harness.js"

// Two requests open at once: an agent tree whose lead starts two sub-agents in one turn, each
// waiting on its own input. As a task (SEP-2663), tasks/update may answer them one at a time.
const TASKS = "io.modelcontextprotocol/tasks"
const ran: string[] = []
const closing: { close(): Promise<void> }[] = []
let llm: FakeLLMServer
let served: Served

beforeAll(async () => {
  llm = await createFakeLLMServer()
  const afterTools = (req: { toolResults: { content: string }[] }) => req.toolResults.length > 0
  llm.addRule({
    match: (req) => req.system === "lead",
    reply: (req) =>
      afterTools(req)
        ? { text: `lead: ${req.toolResults.map((r) => r.content).join(" | ")}` }
        : {
            toolCalls: [
              { id: "k1", name: "task", arguments: { agent: "asker", prompt: "first" } },
              { id: "k2", name: "task", arguments: { agent: "asker", prompt: "second" } },
            ],
          },
  })
  llm.addRule({
    match: (req) => req.system === "asker",
    reply: (req) =>
      afterTools(req)
        ? { text: `asker: ${req.toolResults[0]?.content}` }
        : { toolCalls: [{ id: "a1", name: "ask_name", arguments: { label: req.lastUserText } }] },
  })
  const askName = defineTool({
    name: "ask_name",
    description: "Asks a name",
    inputSchema: { type: "object", properties: { label: { type: "string" } }, required: ["label"] },
    run: ({ label }, ctx) => {
      const name = (ctx.answer?.data as { name?: string } | undefined)?.name
      if (!ctx.answer?.ok || name === undefined)
        return pending({
          kind: "input",
          prompt: `Name for ${String(label)}?`,
          data: { schema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] } },
        })
      ran.push(`${String(label)}=${name}`)
      return `${String(label)}=${name}`
    },
  })
  const store = createMemoryStore()
  const llmOpts = { baseUrl: `${llm.url}/v1`, style: "openai" as const, model: "m", apiKey: "k" }
  const asker: AgentDef = { name: "asker", does: "asks", soul: "asker", tools: [askName] }
  const pair = hostAgent({
    name: "pair",
    runtime: {
      root: "lead",
      llm: llmOpts,
      registry: { lead: { name: "lead", does: "leads", soul: "lead", team: ["asker"] }, asker },
    },
  }) as StoreHostAgent
  const host = createStoreHost({ store, agents: [pair], sweepEveryMs: false })
  // taskAfterMs 0: the call is a task before the first model reply comes back.
  const mcp = createMcpServer({
    host,
    agents: ["pair"],
    name: "tree",
    version: "1.0.0",
    stateKeys: ["t".repeat(32)],
    taskAfterMs: 0,
  })
  served = await serveFetch(mcp.fetch)
  closing.push(served, { close: () => mcp.close() }, host)
}, 60_000)

afterAll(async () => {
  for (const item of closing.reverse()) await item.close()
  await llm?.close()
})

let nextId = 1
async function rpc(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
  const res = await fetch(served.url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": method,
      "mcp-name": String(params.name ?? params.taskId),
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: nextId++,
      method,
      params: {
        ...params,
        _meta: {
          "io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
          "io.modelcontextprotocol/clientCapabilities": {
            elicitation: { form: {} },
            extensions: { [TASKS]: {} },
          },
        },
      },
    }),
  })
  const text = await res.text()
  const json = text.startsWith("{") ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? "{}")
  return (JSON.parse(json) as { result: Record<string, unknown> }).result
}

/** tasks/get until `until` holds (the run works between the looks). */
async function taskWhere(
  taskId: string,
  until: (task: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>> {
  for (;;) {
    const task = await rpc("tasks/get", { taskId })
    if (until(task)) return task
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

type Asks = Record<string, { params: { message: string } }>
const asks = (task: Record<string, unknown>) => Object.entries((task.inputRequests ?? {}) as Asks)

describe("a task whose run waits on two requests at once", () => {
  it("lists both; tasks/update answering one leaves only the other; answering it completes the task", async () => {
    const created = await rpc("tools/call", { name: "pair", arguments: { prompt: "go" } })
    expect(created).toMatchObject({ resultType: "task", status: "working" })
    const taskId = created.taskId as string
    const both = await taskWhere(taskId, (t) => asks(t).length === 2)
    expect(both.status).toBe("input_required")
    expect(
      asks(both)
        .map(([, r]) => r.params.message)
        .sort(),
    ).toEqual(["Name for first?", "Name for second?"])
    const [[firstKey, firstAsk], [secondKey]] = asks(both) as [[string, Asks[string]], [string, Asks[string]]]
    const ack = await rpc("tasks/update", {
      taskId,
      inputResponses: { [firstKey]: { action: "accept", content: { name: "Ada" } } },
    })
    expect(ack).toMatchObject({ resultType: "complete" })
    const one = await rpc("tasks/get", { taskId })
    expect(one.status).toBe("input_required")
    expect(asks(one).map(([key]) => key)).toEqual([secondKey])
    await rpc("tasks/update", {
      taskId,
      inputResponses: { [secondKey]: { action: "accept", content: { name: "Bo" } } },
    })
    const done = await taskWhere(taskId, (t) => t.status !== "working" && t.status !== "input_required")
    expect(done.status).toBe("completed")
    const label = firstAsk.params.message === "Name for first?" ? "first" : "second"
    expect(ran).toContain(`${label}=Ada`)
    expect(ran).toHaveLength(2)
  }, 30_000)
})
