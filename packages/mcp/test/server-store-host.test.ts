import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Client } from "@modelcontextprotocol/client"
import type { AgentDef } from "@toolnexus/agents"
import { type RunHost, createClient, createToolkit, defineTool, hostAgent, pending } from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { type DurableStore, type StoreHostAgent, createStoreHost, openStore } from "@toolnexus/durable"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createMcpServer } from "../src/server/index.js"
import { connectClient, serveFetch } from "./server-harness.js"

// The real host (createStoreHost) on one SQLite file, opened twice: two server instances, as two
// processes behind no sticky routing would be.
const KEY = "k".repeat(32)
const NEW_KEY = "n".repeat(32)
let dir: string
let llm: FakeLLMServer
const ran: string[] = []
const closing: { close(): Promise<void> }[] = []
let urls: string[] = []
const hosts: RunHost[] = []

/** The agents of one host: `deploy` (a client whose tool needs approval) and `tree` (lead → payer). */
async function agentsFor(store: DurableStore): Promise<StoreHostAgent[]> {
  const llmOpts = { baseUrl: `${llm.url}/v1`, style: "openai" as const, model: "m", apiKey: "k" }
  const deploy = defineTool({
    name: "deploy",
    description: "Deploys, with approval",
    inputSchema: { type: "object", properties: { target: { type: "string" } } },
    run: ({ target }, ctx) => {
      if (!ctx.answer?.ok) return pending({ kind: "approval", prompt: `Deploy ${String(target)}?` })
      ran.push(`deploy ${String(target)}`)
      return `deployed ${String(target)}`
    },
  })
  const refund = defineTool({
    name: "refund",
    description: "Refunds, with approval",
    inputSchema: { type: "object", properties: { amount: { type: "number" } } },
    run: ({ amount }, ctx) => {
      if (!ctx.answer?.ok) return pending({ kind: "approval", prompt: `Refund ${String(amount)} EUR?` })
      ran.push(`refund ${String(amount)}`)
      return `refunded ${String(amount)}`
    },
  })
  const payer: AgentDef = { name: "payer", does: "pays", soul: "payer", tools: [refund] }
  return [
    hostAgent({
      name: "deploy",
      client: createClient({ ...llmOpts, systemPrompt: "deployer", retryBaseMs: 1, store }),
      toolkit: await createToolkit({ extraTools: [deploy] }),
    }),
    hostAgent({
      name: "tree",
      runtime: {
        root: "lead",
        llm: llmOpts,
        registry: { lead: { name: "lead", does: "leads", soul: "lead", team: ["payer"] }, payer },
      },
    }),
  ] as StoreHostAgent[]
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tnx-mcp-server-"))
  llm = await createFakeLLMServer()
  const afterTools = (req: { toolResults: { content: string }[] }) => req.toolResults.length > 0
  llm.addRule({
    match: (req) => req.system === "deployer",
    reply: (req) =>
      afterTools(req)
        ? { text: `done: ${req.toolResults.map((r) => r.content).join("|")}` }
        : { toolCalls: [{ id: "d1", name: "deploy", arguments: { target: req.lastUserText } }] },
  })
  llm.addRule({
    match: (req) => req.system === "lead",
    reply: (req) =>
      afterTools(req)
        ? { text: `lead: ${req.toolResults[0]?.content}` }
        : { toolCalls: [{ id: "k1", name: "task", arguments: { agent: "payer", prompt: "pay 12" } }] },
  })
  llm.addRule({
    match: (req) => req.system === "payer",
    reply: (req) =>
      afterTools(req)
        ? { text: `payer: ${req.toolResults[0]?.content}` }
        : { toolCalls: [{ id: "t1", name: "refund", arguments: { amount: 12 } }] },
  })
  urls = []
  // The second instance has rotated a new key in; the third has rotated the first one out.
  for (const stateKeys of [[KEY], [NEW_KEY, KEY], [NEW_KEY]]) {
    const store = await openStore(`sqlite:${join(dir, "runs.db")}`)
    const host = createStoreHost({ store, agents: await agentsFor(store), sweepEveryMs: false })
    hosts.push(host)
    const mcp = createMcpServer({
      host,
      agents: ["deploy", "tree"],
      name: "store-host",
      version: "1.0.0",
      stateKeys,
      stateTtlMs: 60_000,
      authenticate: (req) =>
        /^Bearer (\w+)$/.exec(req.headers.get("authorization") ?? "")?.[1] ?? "anonymous",
    })
    const served = await serveFetch(mcp.fetch)
    closing.push(served, { close: () => mcp.close() }, host, store)
    urls.push(served.url)
  }
}, 60_000)

afterAll(async () => {
  for (const item of closing.reverse()) await item.close()
  await llm?.close()
  rmSync(dir, { recursive: true, force: true })
})

type InputRequired = { inputRequests: Record<string, { params: { message: string } }>; requestState: string }

async function connect(url: string, token = "alice"): Promise<Client> {
  const c = await connectClient(url, { elicitation: { form: {} }, token })
  closing.push(c)
  return c
}

describe("createMcpServer over createStoreHost on SQLite", () => {
  it("an approval asked by one instance is answered through the other; the tool runs once, a replay decides nothing", async () => {
    const [a, b] = [await connect(urls[0] as string), await connect(urls[1] as string)]
    const first = (await a.callTool(
      { name: "deploy", arguments: { prompt: "prod" } },
      { allowInputRequired: true },
    )) as unknown as InputRequired
    const [id, request] = Object.entries(first.inputRequests)[0] ?? []
    expect(request?.params.message).toBe("Deploy prod?")
    const retry = (approved: boolean) =>
      b.callTool(
        {
          name: "deploy",
          arguments: { prompt: "prod" },
          inputResponses: { [id as string]: { action: "accept", content: { approved } } },
          requestState: first.requestState,
        } as never,
        { allowInputRequired: true },
      )
    expect(await retry(true)).toMatchObject({ content: [{ text: "done: deployed prod" }], isError: false })
    // The response was lost, the client retries — even with another answer: the first decision stands.
    expect(await retry(false)).toMatchObject({ content: [{ text: "done: deployed prod" }] })
    expect(ran.filter((r) => r === "deploy prod")).toHaveLength(1)
  }, 30_000)

  it("a sub-agent's request deep in a tree surfaces as input_required and one answer finishes the tree", async () => {
    const c = await connect(urls[0] as string)
    const first = (await c.callTool(
      { name: "tree", arguments: { prompt: "refund" } },
      { allowInputRequired: true },
    )) as unknown as InputRequired
    const [id, request] = Object.entries(first.inputRequests)[0] ?? []
    expect(request?.params.message).toBe("Refund 12 EUR?")
    const other = await connect(urls[1] as string)
    const done = await other.callTool(
      {
        name: "tree",
        arguments: { prompt: "refund" },
        inputResponses: { [id as string]: { action: "accept", content: { approved: true } } },
        requestState: first.requestState,
      } as never,
      { allowInputRequired: true },
    )
    expect(done).toMatchObject({ content: [{ text: "lead: payer: refunded 12" }], isError: false })
    expect(ran.filter((r) => r === "refund 12")).toHaveLength(1)
  }, 30_000)

  it("tampered, cross-principal and unkeyed states are refused by every instance with nothing decided", async () => {
    const alice = await connect(urls[0] as string)
    const first = (await alice.callTool(
      { name: "deploy", arguments: { prompt: "staging" } },
      { allowInputRequired: true },
    )) as unknown as InputRequired
    const id = Object.keys(first.inputRequests)[0] as string
    const approve = (c: Client, requestState: string) =>
      c.callTool(
        {
          name: "deploy",
          arguments: { prompt: "staging" },
          inputResponses: { [id]: { action: "accept", content: { approved: true } } },
          requestState,
        } as never,
        { allowInputRequired: true },
      )
    const at = first.requestState.length - 5
    const tampered = `${first.requestState.slice(0, at)}${first.requestState[at] === "x" ? "y" : "x"}${first.requestState.slice(at + 1)}`
    const refused = { code: -32602 }
    await expect(approve(alice, tampered)).rejects.toMatchObject(refused)
    await expect(
      approve(await connect(urls[1] as string, "mallory"), first.requestState),
    ).rejects.toMatchObject(refused)
    await expect(approve(await connect(urls[2] as string), first.requestState)).rejects.toMatchObject(refused)
    expect(await hosts[0]?.getDecision(id)).toBeUndefined()
    expect(await hosts[0]?.findRequest(id)).toMatchObject({ state: "open" })
    expect(ran.filter((r) => r === "deploy staging")).toHaveLength(0)
    // The instance with the key rotated in takes it; the tool runs once.
    expect(await approve(await connect(urls[1] as string), first.requestState)).toMatchObject({
      content: [{ text: "done: deployed staging" }],
    })
    expect(ran.filter((r) => r === "deploy staging")).toHaveLength(1)
  }, 30_000)
})
