import { readFileSync, writeFileSync } from "node:fs"
import { MemoryStore, type Request, createClient, createToolkit, defineTool, pending } from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { agent } from "../src/agent.js"
import { createVirtualClock } from "../src/clock.js"

// `asTool`'s `data.agentRun` is a stored format (DESIGN §17): a caller's store keeps it in the
// pending request for as long as the request waits. Every version this code reads has a golden
// file under fixtures/agent-run/, saved once by the release that wrote it and read here
// forever. A change to what the tool writes fails the last test until it gets a new version
// (and a new file); an old file is never edited.

let server: FakeLLMServer
beforeAll(async () => {
  server = await createFakeLLMServer()
})
beforeEach(() => server.reset())
afterAll(() => server.close())

const llm = () => ({ baseUrl: `${server.url}/v1`, model: "m", apiKey: "k" })
const fixture = (version: number) => new URL(`./fixtures/agent-run/v${version}.json`, import.meta.url)
const golden = (version: number) => JSON.parse(readFileSync(fixture(version), "utf8")) as { request: Request }

/** The helper agent asks for approval of `deploy`, then reports; the caller delegates to it once. */
function helperAgent() {
  const runs: (boolean | undefined)[] = []
  const deploy = defineTool({
    name: "deploy",
    description: "deploys",
    inputSchema: { type: "object" },
    run: (_args, ctx) => {
      runs.push(ctx.answer?.ok)
      return ctx.answer ? "deploy done" : pending({ kind: "approval", prompt: "deploy?" })
    },
  })
  const toolResults = (r: { body: { messages: { role: string; content: string }[] } }) =>
    r.body.messages.filter((m) => m.role === "tool").map((m) => m.content)
  server.addRule({
    match: (r) => r.system === "helper" && toolResults(r).length === 0,
    reply: { toolCalls: [{ name: "deploy", arguments: {} }] },
  })
  server.addRule({
    match: (r) => r.system === "helper",
    reply: (r) => ({ text: `helper: ${toolResults(r).join(" | ")}` }),
  })
  const helper = agent("helper", { does: "needs approval", soul: "helper", tools: [deploy] })
  return { runs, tool: helper.asTool({ llm: llm(), clock: createVirtualClock(0) }) }
}

/** What differs between runs (generated ids: request and call ids, the runtime's namespace) replaced by placeholders in order of first appearance. */
function normalized(value: unknown): unknown {
  const names = new Map<string, string>()
  const walk = (v: unknown): unknown => {
    if (typeof v === "string")
      return v.replace(
        /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|pnd-[\w-]+|call_[\w-]+/g,
        (id) => {
          if (!names.has(id)) names.set(id, `<id-${names.size + 1}>`)
          return names.get(id) as string
        },
      )
    if (Array.isArray(v)) return v.map(walk)
    if (typeof v === "object" && v !== null)
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]))
    return v
  }
  return walk(value)
}

describe("asTool's data.agentRun format", () => {
  it.each([1])("v%i: the request alone brings the agent back and the answer resumes it", async (version) => {
    const { request } = golden(version)
    expect(request.data?.agentRun).toMatchObject({ v: version })
    const { runs, tool } = helperAgent()
    const result = await tool.execute(
      { prompt: "do it" },
      { answer: { id: request.id, ok: true }, request, callId: request.data?.callId as string },
    )
    expect(result).toMatchObject({ output: "helper: deploy done", isError: false })
    expect(runs).toEqual([true]) // the approved call ran once; nothing before it ran again
    expect(server.requests.filter((r) => r.system === "helper")).toHaveLength(1)
  })

  it("state of a version this code does not read is refused with SchemaVersionError", async () => {
    const { request } = golden(1)
    const { tool } = helperAgent()
    const agentRun = { ...(request.data?.agentRun as object), v: 2 }
    await expect(
      tool.execute(
        { prompt: "do it" },
        {
          answer: { id: request.id, ok: true },
          request: { ...request, data: { ...request.data, agentRun } },
        },
      ),
    ).rejects.toMatchObject({
      code: "TNX_SCHEMA_VERSION",
      found: 2,
      supported: [1],
      message: expect.stringContaining("the agent state (data.agentRun)"),
    })
    expect(server.requests).toHaveLength(0)
  })

  it("the tool writes version 1 exactly as its golden file holds it", async () => {
    const { tool } = helperAgent()
    server.addRule({
      match: (r) => r.system === "caller",
      reply: { toolCalls: [{ name: "helper", arguments: { prompt: "do it" } }] },
    })
    const client = createClient({
      ...llm(),
      style: "openai",
      store: new MemoryStore(),
      systemPrompt: "caller",
    })
    const first = await client.ask("go", { id: "c1", toolkit: await createToolkit({ extraTools: [tool] }) })
    expect(first.status).toBe("pending")
    const request = JSON.parse(JSON.stringify(first.pending)) as Request
    // Writing a new version's file, once: TOOLNEXUS_WRITE_GOLDEN=1 (never for an existing one).
    if (process.env.TOOLNEXUS_WRITE_GOLDEN === "1")
      writeFileSync(fixture(1), `${JSON.stringify({ request }, null, 2)}\n`, { flag: "wx" })
    expect(normalized({ request })).toEqual(normalized(golden(1)))
  })
})
