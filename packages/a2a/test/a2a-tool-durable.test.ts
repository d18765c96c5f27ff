import { mkdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type AgentDef, createRuntime } from "@toolnexus/agents"
import { AnswerConflictError, type Request, createToolkit } from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { deliverAnswer, saveRuntime } from "@toolnexus/durable"
import { SqliteStore } from "@toolnexus/durable/sqlite"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { a2aTool } from "../src/a2a-tool.js"
import { scriptedClient } from "./helpers.js"
import { type Emit, type RemoteAgent, TaskState, startRemoteAgent } from "./remote-agent.js"

// A remote agent's question parked in a SQLite file and answered after a "restart": a new
// store handle, client, toolkit and tool on the same file. The remote task gets exactly one
// follow-up; a redelivery is refused by the claims before the tool runs.

let dir: string
beforeAll(() => {
  dir = join(tmpdir(), `tnx-a2a-durable-${process.pid}-${Date.now()}`)
  mkdirSync(dir, { recursive: true })
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const remotes: RemoteAgent[] = []
afterEach(async () => {
  for (const r of remotes.splice(0)) await r.close()
})

function seatScript() {
  const turns = new Map<string, number>()
  return (e: Emit) => {
    const turn = (turns.get(e.taskId) ?? 0) + 1
    turns.set(e.taskId, turn)
    if (turn === 1) return e.status(TaskState.TASK_STATE_INPUT_REQUIRED, "Which seat?")
    e.artifact(`booked ${e.text}`, { lastChunk: true })
    e.status(TaskState.TASK_STATE_COMPLETED)
  }
}

/** "A process": its own store handle on the file, its own client, toolkit and a2aTool. */
async function processOn(path: string, url: string) {
  const store = new SqliteStore({ path })
  const tool = await a2aTool({ url, name: "travel", pollIntervalMs: 5 })
  const toolkit = await createToolkit({ extraTools: [tool] })
  const client = scriptedClient("travel", "book a seat", { store })
  return { store, toolkit, client }
}

describe.each([false, true])("a2aTool parked durably on SQLite (streaming %s)", (streaming) => {
  it("answered after a restart ⇒ one follow-up on the same task; a redelivery is refused before the tool runs", async () => {
    const r = await startRemoteAgent({ streaming })
    remotes.push(r)
    r.setScript(seatScript())
    const path = join(dir, `conv-${streaming}.db`)
    const first = await processOn(path, r.url)
    const halted = await first.client.ask("go", { id: "trip-1", toolkit: first.toolkit })
    expect(halted.status).toBe("pending")
    await first.store.close()

    const second = await processOn(path, r.url)
    const [entry] = await second.store.listPending()
    const request = entry?.request as Request
    expect(request).toMatchObject({ kind: "input", prompt: "Which seat?", data: { agent: "travel" } })
    const answer = { id: request.id, ok: true, data: { text: "12A" } }
    const delivered = await deliverAnswer(second.store, answer, {
      client: second.client,
      toolkit: second.toolkit,
    })
    expect(delivered).toMatchObject({
      kind: "conversation",
      id: "trip-1",
      result: { text: "final: booked 12A" },
    })
    expect(r.received).toHaveLength(2)
    expect(r.received[1]).toMatchObject({ taskId: request.data?.taskId, messageId: request.id })

    const third = await processOn(path, r.url)
    await expect(
      deliverAnswer(third.store, answer, { client: third.client, toolkit: third.toolkit }),
    ).rejects.toBeInstanceOf(AnswerConflictError)
    expect(r.received).toHaveLength(2)
    await second.store.close()
    await third.store.close()
  })

  it("two processes answering at once ⇒ one resumes, one conflict, the remote gets one follow-up", async () => {
    const r = await startRemoteAgent({ streaming })
    remotes.push(r)
    r.setScript(seatScript())
    const path = join(dir, `race-${streaming}.db`)
    const first = await processOn(path, r.url)
    const halted = await first.client.ask("go", { id: "trip-2", toolkit: first.toolkit })
    const request = halted.pending as Request
    await first.store.close()
    const a = await processOn(path, r.url)
    const b = await processOn(path, r.url)
    const answer = { id: request.id, ok: true, data: { text: "3C" } }
    const outcomes = await Promise.allSettled([
      deliverAnswer(a.store, answer, { client: a.client, toolkit: a.toolkit }),
      deliverAnswer(b.store, answer, { client: b.client, toolkit: b.toolkit }),
    ])
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1)
    const refused = outcomes.find((o) => o.status === "rejected") as PromiseRejectedResult
    expect(AnswerConflictError.isInstance(refused.reason)).toBe(true)
    expect(r.received).toHaveLength(2)
    await a.store.close()
    await b.store.close()
  })
})

describe("a2aTool in a tree", () => {
  const registry = (tool: Awaited<ReturnType<typeof a2aTool>>): Record<string, AgentDef> => ({
    planner: { name: "planner", does: "plans trips", soul: "planner", tools: [tool] },
  })
  // The planner's model (the scripted fake LLM server) calls the remote agent once, then
  // reports what it said.
  let llmServer: FakeLLMServer
  beforeAll(async () => {
    llmServer = await createFakeLLMServer()
    llmServer.addRule({
      match: (req) => req.toolResults.length === 0,
      reply: { toolCalls: [{ name: "travel", arguments: { prompt: "book" } }] },
    })
    llmServer.addRule({
      match: () => true,
      reply: (req) => ({ text: `planner: ${req.toolResults[0]?.content}` }),
    })
  })
  afterAll(() => llmServer.close())
  const llm = () => ({ baseUrl: `${llmServer.url}/v1`, style: "openai" as const, model: "m", apiKey: "k" })

  it("a def's remote tool parks with data.path, the runtime is saved, and a new process answers it once", async () => {
    const r = await startRemoteAgent({ streaming: true })
    remotes.push(r)
    r.setScript(seatScript())
    const path = join(dir, "tree.db")
    {
      const store = new SqliteStore({ path })
      const tool = await a2aTool({ url: r.url, name: "travel" })
      const rt = createRuntime({ registry: registry(tool), llm: llm(), store })
      const h = rt.spawn(rt.root, "planner")
      rt.wake(h, "plan")
      const parked = await rt.wait(h)
      expect(parked.pending).toMatchObject({
        kind: "input",
        data: { agent: "travel", path: ["root", "planner.1"] },
      })
      await saveRuntime(store, "trip-tree", rt)
      await store.close()
    }
    const store = new SqliteStore({ path })
    const [entry] = await store.listPending()
    expect(entry).toMatchObject({ runtimeKey: "trip-tree" })
    const request = entry?.request as Request
    const tool = await a2aTool({ url: r.url, name: "travel" })
    const runtime = { registry: registry(tool), llm: llm() }
    const answer = { id: request.id, ok: true, data: { text: "1F" } }
    const delivered = await deliverAnswer(store, answer, { runtime })
    expect(delivered).toMatchObject({
      kind: "runtime",
      result: { status: "done", text: "planner: booked 1F" },
    })
    await expect(deliverAnswer(store, answer, { runtime })).rejects.toBeInstanceOf(AnswerConflictError)
    expect(r.received).toHaveLength(2)
    await store.close()
  })

  it("answered inline by the nearest def's waitFor through ctx.resolve", async () => {
    const r = await startRemoteAgent()
    remotes.push(r)
    r.setScript(seatScript())
    const tool = await a2aTool({ url: r.url, name: "travel", pollIntervalMs: 5 })
    const asked: Request[] = []
    const defs = registry(tool)
    defs.planner = {
      ...defs.planner,
      waitFor: (req) => {
        asked.push(req)
        return { id: req.id, ok: true, data: { text: "2B" } }
      },
    } as AgentDef
    const rt = createRuntime({ registry: defs, llm: llm() })
    const h = rt.spawn(rt.root, "planner")
    rt.wake(h, "plan")
    const result = await rt.wait(h)
    expect(result).toMatchObject({ status: "done", text: "planner: booked 2B" })
    expect(asked).toHaveLength(1)
    expect(asked[0]).toMatchObject({ prompt: "Which seat?", data: { agent: "travel" } })
    expect(r.received).toHaveLength(2)
  })
})
