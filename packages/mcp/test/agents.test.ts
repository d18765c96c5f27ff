import { type AgentDef, createRuntime } from "@toolnexus/agents"
import type { Request } from "@toolnexus/core"
import { type FakeLLMServer, type FakeRequestView, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest"
import { type McpConnection, connectMcp } from "../src/index.js"
import { elicitingServer } from "./elicit-server.js"
import { type ServedMcp, serveMcp } from "./http-server.js"

const log = { elicitations: 0, calls: 0 }
let served: ServedMcp
let llm: FakeLLMServer
let mcp: McpConnection

beforeAll(async () => {
  served = await serveMcp(elicitingServer(log))
  llm = await createFakeLLMServer()
  mcp = await connectMcp({ servers: { shop: { url: served.url } }, requireApproval: { shop: ["book"] } })
})
afterAll(async () => {
  await mcp?.close()
  await served?.close()
  await llm?.close()
})

const fresh = (soul: string) => (r: FakeRequestView) => r.system === soul && r.toolResults.length === 0
beforeEach(() => {
  llm.reset()
  llm.addRule({
    match: fresh("lead"),
    reply: { toolCalls: [{ name: "task", arguments: { agent: "clerk", prompt: "book" } }] },
  })
  llm.addRule({
    match: fresh("clerk"),
    reply: { toolCalls: [{ name: "shop__book", arguments: { guests: 4 } }] },
  })
  llm.addRule({
    match: (r) => r.system === "clerk",
    reply: (r) => ({ text: `clerk: ${r.toolResults.at(-1)?.content}` }),
  })
  llm.addRule({
    match: (r) => r.system === "lead",
    reply: (r) => ({ text: `lead: ${r.toolResults.at(-1)?.content}` }),
  })
})

function registry(waitFor?: AgentDef["waitFor"]): Record<string, AgentDef> {
  return {
    lead: { name: "lead", does: "delegates", soul: "lead", team: ["clerk"], ...(waitFor ? { waitFor } : {}) },
    clerk: { name: "clerk", does: "books tables", soul: "clerk", tools: mcp.tools() },
  }
}

it("an MCP tool in a sub-agent: approval and elicitation are answered by the nearest waitFor up the chain", async () => {
  const asked: Request[] = []
  const rt = createRuntime({
    registry: registry(async (req) => {
      asked.push(req)
      return req.kind === "approval"
        ? { id: req.id, ok: true }
        : { id: req.id, ok: true, data: { date: "2027-03-04" } }
    }),
    llm: { baseUrl: `${llm.url}/v1`, model: "m", apiKey: "k" },
  })
  const lead = rt.spawn(rt.root, "lead")
  rt.wake(lead, "book a table")
  const result = await rt.wait(lead)
  expect(result).toMatchObject({ status: "done", text: "lead: clerk: booked 4 for 2027-03-04" })
  expect(asked.map((r) => r.kind)).toEqual(["approval", "input"])
  expect(asked[0]?.data).toMatchObject({ server: "shop", tool: "book", args: { guests: 4 } })
  expect(asked[1]?.data).toMatchObject({ server: "shop", tool: "book", path: ["root", "lead.1", "clerk.1"] })
  await rt.close(rt.root)
})

it("with no waitFor the tree parks on each request and one answer at a time finishes it", async () => {
  const rt = createRuntime({
    registry: registry(),
    llm: { baseUrl: `${llm.url}/v1`, model: "m", apiKey: "k" },
  })
  const lead = rt.spawn(rt.root, "lead")
  rt.wake(lead, "book a table")
  const approval = await rt.wait(lead)
  expect(approval.status).toBe("pending")
  expect(approval.pending).toMatchObject({ kind: "approval", data: { path: ["root", "lead.1", "clerk.1"] } })
  const calls = log.calls

  await rt.resume({ id: (approval.pending as Request).id, ok: true })
  const input = await rt.wait(lead)
  expect(input.pending).toMatchObject({ kind: "input", prompt: "Which date?" })
  await rt.resume({ id: (input.pending as Request).id, ok: true, data: { date: "2027-05-06" } })
  expect(await rt.wait(lead)).toMatchObject({ status: "done", text: "lead: clerk: booked 4 for 2027-05-06" })
  expect(log.calls - calls).toBe(2) // cancelled for the input, then re-issued once
  await rt.close(rt.root)
})
