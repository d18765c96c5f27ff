import { type Request, type ToolContext, defineTool, pending } from "@toolnexus/core"
import { type FakeLLMServer, type FakeRequestView, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { createRuntime, restoreRuntime } from "../src/runtime.js"
import type { AgentDef } from "../src/types.js"

// §3: `ctx.request` is set with `ctx.answer` when a runtime resumes a parked handle, so the
// halted tool reads back what it put in the request's data (here a remote task id).

let server: FakeLLMServer
beforeAll(async () => {
  server = await createFakeLLMServer()
})
beforeEach(() => server.reset())
afterAll(() => server.close())

const seen: ToolContext[] = []
const remote = defineTool({
  name: "remote",
  description: "asks a remote agent",
  inputSchema: { type: "object" },
  run: (_args, ctx) => {
    seen.push(ctx)
    if (!ctx.answer)
      return pending({ id: "req-remote", kind: "input", prompt: "Which seat?", data: { taskId: "t-1" } })
    return `continued ${String(ctx.request?.data?.taskId)} with ${String(ctx.answer.data?.text)}`
  },
})
const registry: Record<string, AgentDef> = {
  lead: { name: "lead", does: "delegates", soul: "lead", team: ["asker"] },
  asker: { name: "asker", does: "asks", soul: "asker", tools: [remote] },
}
const fresh = (soul: string) => (r: FakeRequestView) => r.system === soul && r.toolResults.length === 0

function script(): void {
  server.addRule({
    match: fresh("lead"),
    reply: { toolCalls: [{ name: "task", arguments: { agent: "asker", prompt: "ask" } }] },
  })
  server.addRule({ match: fresh("asker"), reply: { toolCalls: [{ name: "remote", arguments: {} }] } })
  server.addRule({ match: () => true, reply: (r) => ({ text: `${r.system}: ${r.toolResults[0]?.content}` }) })
}

async function park() {
  script()
  seen.length = 0
  const llm = { baseUrl: `${server.url}/v1`, style: "openai" as const, model: "m", apiKey: "k" }
  const rt = createRuntime({ registry, llm })
  const lead = rt.spawn(rt.root, "lead")
  rt.wake(lead, "go")
  const parked = await rt.wait(lead)
  expect(parked.status).toBe("pending")
  return { rt, lead, llm, request: parked.pending as Request }
}

describe("ToolContext.request on a runtime resume", () => {
  it("the resumed leaf tool gets the request it parked on, with its own data", async () => {
    const { rt, lead, request } = await park()
    expect(seen[0]?.request).toBeUndefined()
    await rt.resume({ id: request.id, ok: true, data: { text: "12A" } })
    const result = await rt.wait(lead)
    expect(result.text).toBe("lead: asker: continued t-1 with 12A")
    expect(seen).toHaveLength(2)
    expect(seen[1]?.answer).toEqual({ id: "req-remote", ok: true, data: { text: "12A" } })
    expect(seen[1]?.request).toMatchObject({
      id: "req-remote",
      kind: "input",
      data: { taskId: "t-1", tool: "remote" },
    })
  })

  it("after restoreRuntime from a JSON snapshot (a new process)", async () => {
    const { rt, llm, request } = await park()
    const snapshot = JSON.parse(JSON.stringify(rt.snapshot()))
    const restored = restoreRuntime(snapshot, { registry, llm, store: rt.store })
    await restored.resume({ id: request.id, ok: true, data: { text: "3C" } })
    const lead = restored.list().find((h) => h.id === "root/lead.1")
    expect(lead).toBeDefined()
    expect(seen.at(-1)?.request).toMatchObject({ id: "req-remote", data: { taskId: "t-1" } })
    expect(seen.at(-1)?.answer?.data).toEqual({ text: "3C" })
  })
})
