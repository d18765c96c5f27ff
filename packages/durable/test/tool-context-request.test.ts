import { mkdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type AgentDef, createRuntime } from "@toolnexus/agents"
import {
  type Request,
  type ToolContext,
  createClient,
  createToolkit,
  defineTool,
  pending,
} from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { deliverAnswer } from "../src/resume/deliver-answer.js"
import { saveRuntime } from "../src/resume/runtime-persistence.js"
import { SqliteStore } from "../src/sqlite/index.js"

// §3: after a restart (a new store handle on the same SQLite file, a new client and toolkit)
// the resumed tool gets `ctx.request` — what it put in the request's data when it parked.

let server: FakeLLMServer
let dir: string
beforeAll(async () => {
  server = await createFakeLLMServer()
  dir = join(tmpdir(), `tnx-ctx-request-${process.pid}-${Date.now()}`)
  mkdirSync(dir, { recursive: true })
})
beforeEach(() => server.reset())
afterAll(async () => {
  await server.close()
  rmSync(dir, { recursive: true, force: true })
})

function remoteTool(seen: ToolContext[]) {
  return defineTool({
    name: "remote",
    description: "asks a remote agent",
    inputSchema: { type: "object" },
    run: (_args, ctx) => {
      seen.push(ctx)
      if (!ctx.answer) return pending({ kind: "input", prompt: "Which seat?", data: { taskId: "t-7" } })
      return `continued ${String(ctx.request?.data?.taskId)}`
    },
  })
}
const llm = () => ({ baseUrl: `${server.url}/v1`, model: "m", apiKey: "k" })

describe("ToolContext.request after a restart", () => {
  it("a conversation parked on SQLite, answered through deliverAnswer by a new process", async () => {
    const path = join(dir, "conv.db")
    server.addRule({
      match: (r) => r.toolResults.length === 0,
      reply: { toolCalls: [{ name: "remote", arguments: {} }] },
    })
    server.addRule({ match: () => true, reply: (r) => ({ text: `final: ${r.toolResults[0]?.content}` }) })
    const before: ToolContext[] = []
    {
      const store = new SqliteStore({ path })
      const client = createClient({ ...llm(), style: "openai", store })
      const halted = await client.ask("go", {
        id: "c-1",
        toolkit: await createToolkit({ extraTools: [remoteTool(before)] }),
      })
      expect(halted.status).toBe("pending")
      await store.close()
    }
    const store = new SqliteStore({ path })
    const [entry] = await store.listPending()
    const request = entry?.request as Request
    const after: ToolContext[] = []
    const client = createClient({ ...llm(), style: "openai", store })
    const toolkit = await createToolkit({ extraTools: [remoteTool(after)] })
    const delivered = await deliverAnswer(store, { id: request.id, ok: true }, { client, toolkit })
    expect(delivered).toMatchObject({ kind: "conversation", result: { text: "final: continued t-7" } })
    expect(after).toHaveLength(1)
    expect(after[0]?.request).toEqual(request)
    await store.close()
  })

  it("a saved runtime parked on SQLite, answered through deliverAnswer by a new process", async () => {
    const path = join(dir, "rt.db")
    const before: ToolContext[] = []
    const after: ToolContext[] = []
    const seen = { current: before }
    const tool = defineTool({
      name: "remote",
      description: "asks a remote agent",
      inputSchema: { type: "object" },
      run: (args, ctx) => remoteTool(seen.current).execute(args, ctx),
    })
    const registry: Record<string, AgentDef> = {
      asker: { name: "asker", does: "asks", soul: "asker", tools: [tool] },
    }
    server.addRule({
      match: (r) => r.toolResults.length === 0,
      reply: { toolCalls: [{ name: "remote", arguments: {} }] },
    })
    server.addRule({ match: () => true, reply: (r) => ({ text: `asker: ${r.toolResults[0]?.content}` }) })
    {
      const store = new SqliteStore({ path })
      const rt = createRuntime({ registry, llm: { ...llm(), style: "openai" }, store })
      const h = rt.spawn(rt.root, "asker")
      rt.wake(h, "go")
      expect((await rt.wait(h)).status).toBe("pending")
      await saveRuntime(store, "rt-1", rt)
      await store.close()
    }
    seen.current = after
    const store = new SqliteStore({ path })
    const [entry] = await store.listPending()
    const request = entry?.request as Request
    const delivered = await deliverAnswer(
      store,
      { id: request.id, ok: true },
      { runtime: { registry, llm: { ...llm(), style: "openai" } } },
    )
    expect(delivered).toMatchObject({ kind: "runtime", result: { text: "asker: continued t-7" } })
    expect(after).toHaveLength(1)
    expect(after[0]?.request).toMatchObject({ id: request.id, data: { taskId: "t-7" } })
    await store.close()
  })
})
