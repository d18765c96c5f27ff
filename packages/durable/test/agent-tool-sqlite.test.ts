import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type AgentDef, agent, createRuntime } from "@toolnexus/agents"
import {
  type Answer,
  type Request,
  type Tool,
  createClient,
  createToolkit,
  defineTool,
  pending,
} from "@toolnexus/core"
import { type FakeLLMServer, type FakeRequestView, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { askWithAnswer } from "../src/resume/ask-with-answer.js"
import { deliverAnswer } from "../src/resume/deliver-answer.js"
import { saveRuntime } from "../src/resume/runtime-persistence.js"
import { SqliteStore } from "../src/sqlite/index.js"

// agent().asTool() with a durable store: in a saved runtime the agent is a child handle of
// the caller; in a plain conversation its state rides the pending request. Either way a new
// process (a new store instance on the same file) resumes it once, asking nothing again.

const dir = mkdtempSync(join(tmpdir(), "tnx-agent-tool-"))
let server: FakeLLMServer
let n = 0
beforeAll(async () => {
  server = await createFakeLLMServer()
})
beforeEach(() => server.reset())
afterAll(async () => {
  await server.close()
  rmSync(dir, { recursive: true, force: true })
})

const llm = () => ({ baseUrl: `${server.url}/v1`, model: "m", apiKey: "k" })
const dbPath = () => join(dir, `db-${++n}.sqlite`)
const results = (req: FakeRequestView): string[] =>
  req.body.messages
    .filter((m: { role: string }) => m.role === "tool")
    .map((m: { content: string }) => m.content)
const asked = (soul: string) =>
  server.requests.filter((r) => r.system === soul && results(r).length === 0).length

function approvals() {
  const seen: (Answer | undefined)[] = []
  const make = (name: string): Tool =>
    defineTool({
      name,
      description: name,
      inputSchema: { type: "object" },
      run: (_args, ctx) => {
        seen.push(ctx.answer)
        return ctx.answer?.ok ? `${name} done` : pending({ kind: "approval", prompt: `${name}?` })
      },
    })
  return { seen, make }
}

function script(soul: string, calls: { name: string; arguments: Record<string, unknown> }[], prefix: string) {
  for (const [i, call] of calls.entries()) {
    server.addRule({
      match: (r) => r.system === soul && results(r).length === i,
      reply: { toolCalls: [call] },
    })
  }
  server.addRule({
    match: (r) => r.system === soul && results(r).length === calls.length,
    reply: (r) => ({ text: `${prefix}: ${results(r).join(" | ")}` }),
  })
}

describe("asTool in a saved runtime on SQLite", () => {
  it("parks with the caller, survives a restart, and a second suspension parks it again", async () => {
    const a = approvals()
    const helper = agent("helper", { does: "asks", soul: "helper", tools: [a.make("build"), a.make("ship")] })
    const registry: Record<string, AgentDef> = {
      boss: { name: "boss", does: "delegates", soul: "boss", tools: [helper.asTool()] },
    }
    script(
      "helper",
      [
        { name: "build", arguments: {} },
        { name: "ship", arguments: {} },
      ],
      "helper",
    )
    script("boss", [{ name: "helper", arguments: { prompt: "go" } }], "boss")
    const path = dbPath()
    const store = new SqliteStore({ path })
    const rt = createRuntime({ registry, llm: llm(), store, namespace: "t1" })
    const boss = rt.spawn(rt.root, "boss")
    rt.wake(boss, "go")
    const first = (await rt.wait(boss)).pending as Request
    await saveRuntime(store, "t1", rt)
    await store.close()

    // A new process: one entry for the request (the deepest holder), found by id.
    const again = new SqliteStore({ path })
    const entry = await again.findRequest(first.id)
    expect(entry).toMatchObject({ runtimeKey: "t1", path: ["root", "boss.1", "helper.1"] })
    const opts = { runtime: { registry, llm: llm() } }
    const second = await deliverAnswer(again, { id: first.id, ok: true }, opts)
    expect(second).toMatchObject({ kind: "runtime", key: "t1", result: { status: "pending" } })
    const next = (second.result as { pending: Request }).pending
    expect(next.data?.tool).toBe("ship")
    await again.close()

    const third = new SqliteStore({ path })
    const done = await deliverAnswer(third, { id: next.id, ok: true }, opts)
    expect(done).toMatchObject({
      kind: "runtime",
      result: { status: "done", text: "boss: helper: build done | ship done" },
    })
    expect([asked("boss"), asked("helper")]).toEqual([1, 1])
    expect(a.seen.map((x) => x?.ok)).toEqual([undefined, true, undefined, true])
    await expect(deliverAnswer(third, { id: next.id, ok: true }, opts)).rejects.toMatchObject({
      name: "AnswerConflictError",
    })
    await third.close()
  })
})

describe("asTool in a plain conversation on SQLite", () => {
  const clientOf = (store: SqliteStore) =>
    createClient({ ...llm(), style: "openai", store, systemPrompt: "caller" })

  it("approve after a restart through askWithAnswer", async () => {
    const a = approvals()
    const helper = agent("helper", { does: "asks", soul: "helper", tools: [a.make("ship")] })
    script("helper", [{ name: "ship", arguments: {} }], "helper")
    script("caller", [{ name: "helper", arguments: { prompt: "go" } }], "caller")
    const path = dbPath()
    const store = new SqliteStore({ path })
    const toolkit = await createToolkit({ extraTools: [helper.asTool({ llm: llm() })] })
    const first = (await clientOf(store).ask("go", { id: "c1", toolkit })).pending as Request
    await store.close()

    const again = new SqliteStore({ path })
    const fresh = await createToolkit({ extraTools: [helper.asTool({ llm: llm() })] })
    const done = await askWithAnswer(clientOf(again), {
      id: "c1",
      toolkit: fresh,
      answer: { id: first.id, ok: true },
    })
    expect(done).toMatchObject({ status: "done", text: "caller: helper: ship done" })
    expect([asked("caller"), asked("helper")]).toEqual([1, 1])
    expect(a.seen.map((x) => x?.ok)).toEqual([undefined, true])
    expect(await again.getPending("c1")).toBeUndefined()
    await again.close()
  })

  it("decline with a reason through deliverAnswer, two levels deep", async () => {
    const a = approvals()
    const leaf = agent("leaf", { does: "asks", soul: "leaf", tools: [a.make("ship")] })
    const mid = agent("mid", { does: "delegates", soul: "mid", tools: [leaf.asTool()] })
    script("leaf", [{ name: "ship", arguments: {} }], "leaf")
    script("mid", [{ name: "leaf", arguments: { prompt: "go" } }], "mid")
    script("caller", [{ name: "mid", arguments: { prompt: "go" } }], "caller")
    const path = dbPath()
    const store = new SqliteStore({ path })
    const toolkit = await createToolkit({ extraTools: [mid.asTool({ llm: llm() })] })
    const first = (await clientOf(store).ask("go", { id: "c2", toolkit })).pending as Request
    expect(first.data?.path).toEqual(["root", "mid.1", "leaf.1"])
    await store.close()

    const again = new SqliteStore({ path })
    const delivered = await deliverAnswer(
      again,
      { id: first.id, ok: false, reason: "not today" },
      { client: clientOf(again), toolkit },
    )
    expect(delivered).toMatchObject({
      kind: "conversation",
      id: "c2",
      result: { status: "done", text: "caller: mid: leaf: declined: ship? (not today)" },
    })
    expect([asked("caller"), asked("mid"), asked("leaf")]).toEqual([1, 1, 1])
    expect(a.seen).toHaveLength(1)
    await again.close()
  })
})
