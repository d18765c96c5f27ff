import {
  type Answer,
  type DurableExecutor,
  type Request,
  createClient,
  createToolkit,
  defineTool,
  pending,
} from "@toolnexus/core"
import { type FakeLLMServer, type FakeRequestView, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest"
import { agent } from "../src/agent.js"
import { createVirtualClock } from "../src/clock.js"
import { createRuntime } from "../src/runtime.js"
import type { AgentDef, RuntimeOptions } from "../src/types.js"

let server: FakeLLMServer
beforeAll(async () => {
  server = await createFakeLLMServer()
})
beforeEach(() => server.reset())
afterAll(() => server.close())

/**
 * A journal kept in memory, as an engine keeps it; `waits` records the engine waits asked.
 * Without `answer` the worker dies in its first wait: from then on every step and wait fails,
 * as in a process that is gone (a child's failure must not let an ancestor journal more).
 */
function memoryExecutor(id: string, journal: Map<string, string>, answer?: (req: Request) => Answer) {
  const executed: string[] = []
  const waits: Request[] = []
  let dead = false
  const executor: DurableExecutor = {
    id,
    async step(name, fn) {
      if (dead) throw new Error("worker died")
      const journaled = journal.get(name)
      if (journaled !== undefined) return JSON.parse(journaled)
      executed.push(name)
      const value = await fn()
      journal.set(name, JSON.stringify(value))
      return JSON.parse(JSON.stringify(value))
    },
    async wait(request) {
      const journaled = journal.get(`wait:${request.id}`)
      if (journaled !== undefined) return JSON.parse(journaled)
      waits.push(request)
      if (!answer) {
        dead = true
        throw new Error("worker died while waiting")
      }
      const decided = answer(request)
      journal.set(`wait:${request.id}`, JSON.stringify(decided))
      return decided
    },
  }
  return { executor, executed, waits }
}

const bySoul = (soul: string) => (req: FakeRequestView) => req.system === soul

function tree(runs: Answer[]) {
  const transfer = defineTool({
    name: "transfer",
    description: "move money",
    inputSchema: { type: "object", properties: { amount: { type: "number" } } },
    run: ({ amount }, ctx) => {
      if (ctx.answer) runs.push(ctx.answer)
      return ctx.answer?.ok ? `moved ${amount}` : pending({ kind: "approval", prompt: `Move ${amount}?` })
    },
  })
  const registry: Record<string, AgentDef> = {
    lead: { name: "lead", does: "leads", soul: "lead", team: ["payer"] },
    payer: { name: "payer", does: "pays", soul: "payer", tools: [transfer] },
  }
  return registry
}

function script() {
  server.addRule({
    match: (req) => bySoul("lead")(req) && req.toolResults.length === 0,
    reply: { toolCalls: [{ id: "k1", name: "task", arguments: { agent: "payer", prompt: "move 10" } }] },
  })
  server.addRule({
    match: (req) => bySoul("lead")(req) && req.toolResults.length > 0,
    reply: (req) => ({ text: `lead: ${req.toolResults[0]?.content}` }),
  })
  server.addRule({
    match: (req) => bySoul("payer")(req) && req.toolResults.length === 0,
    reply: { toolCalls: [{ id: "t1", name: "transfer", arguments: { amount: 10 } }] },
  })
  server.addRule({
    match: (req) => bySoul("payer")(req) && req.toolResults.length > 0,
    reply: (req) => ({ text: `payer: ${req.toolResults[0]?.content}` }),
  })
}

function options(registry: Record<string, AgentDef>, executor: DurableExecutor): RuntimeOptions {
  return {
    registry,
    llm: { baseUrl: `${server.url}/v1`, style: "openai", model: "m", apiKey: "k" },
    executor,
  }
}

it("a two-level tree under an executor: one wait for the deepest handle, answered inline; a replay asks nothing again", async () => {
  script()
  const runs: Answer[] = []
  const journal = new Map<string, string>()
  const first = memoryExecutor("run-tree", journal) // dies while waiting
  const rt = createRuntime(options(tree(runs), first.executor))
  const lead = rt.spawn(rt.root, "lead")
  rt.wake(lead, "pay 10")
  const failed = await rt.wait(lead)
  expect(failed.status).toBe("error")
  expect(first.waits).toHaveLength(1)
  const request = first.waits[0] as Request
  expect(request.data).toMatchObject({ callId: "t1", tool: "transfer", path: ["root", "lead.1", "payer.1"] })
  expect(first.executed).toEqual([
    "root/lead.1/llm:1",
    "root/lead.1/payer.1/llm:1",
    "root/lead.1/payer.1/tool:1:t1",
  ])
  const asked = server.requests.length

  // A new worker replays the tree from the journal and gets the answer.
  const second = memoryExecutor("run-tree", journal, (req) => ({ id: req.id, ok: true }))
  const rt2 = createRuntime(options(tree(runs), second.executor))
  const lead2 = rt2.spawn(rt2.root, "lead")
  rt2.wake(lead2, "pay 10")
  const done = await rt2.wait(lead2)
  expect(done).toMatchObject({ status: "done", text: "lead: payer: moved 10" })
  expect(second.waits.map((r) => r.id)).toEqual([request.id])
  expect(second.executed).toEqual([
    "root/lead.1/payer.1/tool:1:t1:answer",
    "root/lead.1/payer.1/llm:2",
    "root/lead.1/llm:2",
  ])
  // Only the two new LLM requests: no ancestor turn ran again.
  expect(server.requests.length - asked).toBe(2)
  expect(runs).toEqual([{ id: request.id, ok: true }])
})

it("a handle woken twice journals each run under its own prefix", async () => {
  server.addRule({ match: bySoul("payer"), reply: (req) => ({ text: `hi ${req.lastUserText}` }) })
  const journal = new Map<string, string>()
  const { executor, executed } = memoryExecutor("run-twice", journal)
  const rt = createRuntime(options(tree([]), executor))
  const h = rt.spawn(rt.root, "payer")
  rt.wake(h, "one")
  expect(await rt.wait(h)).toMatchObject({ text: "hi one" })
  rt.wake(h, "two")
  expect(await rt.wait(h)).toMatchObject({ text: "hi two" })
  expect(executed).toEqual(["root/payer.1/llm:1", "root/payer.1@2/llm:1"])
})

it("maxWallMs is decided in a journaled step: a replay after the wall passed decides the journaled turns as before", async () => {
  server.addRule({
    match: (req) => bySoul("payer")(req) && req.toolResults.length === 0,
    reply: { toolCalls: [{ id: "t1", name: "transfer", arguments: { amount: 10 } }] },
  })
  server.addRule({ match: bySoul("payer"), reply: { text: "payer: done" } })
  const registry = tree([])
  registry.payer = { ...(registry.payer as AgentDef), budget: { maxWallMs: 1_000 } }
  const journal = new Map<string, string>()
  const clock = createVirtualClock(10_000)
  const first = memoryExecutor("run-wall", journal) // dies while waiting
  const rt = createRuntime({ ...options(registry, first.executor), clock })
  const h = rt.spawn(rt.root, "payer")
  rt.wake(h, "move 10")
  expect(await rt.wait(h)).toMatchObject({ status: "error" })
  expect(first.executed).toEqual([
    "root/payer.1/spawned",
    "root/payer.1/wall:1",
    "root/payer.1/llm:1",
    "root/payer.1/tool:1:t1",
  ])
  expect(JSON.parse(journal.get("root/payer.1/spawned") as string)).toBe(10_000)

  // The answer comes 5 s later, past the 1 s wall: turn 1 replays as decided, turn 2 is stopped.
  clock.advance(5_000)
  const asked = server.requests.length
  const second = memoryExecutor("run-wall", journal, (req) => ({ id: req.id, ok: true }))
  const rt2 = createRuntime({ ...options(registry, second.executor), clock })
  const h2 = rt2.spawn(rt2.root, "payer")
  rt2.wake(h2, "move 10")
  const stopped = await rt2.wait(h2)
  expect(stopped).toMatchObject({ status: "incomplete", limit: "maxWallMs" })
  expect(second.executed).toEqual(["root/payer.1/tool:1:t1:answer", "root/payer.1/wall:2"])
  expect(server.requests.length).toBe(asked)

  // A third worker, later still, decides nothing anew and ends the same.
  clock.advance(60_000)
  const third = memoryExecutor("run-wall", journal, (req) => ({ id: req.id, ok: true }))
  const rt3 = createRuntime({ ...options(registry, third.executor), clock })
  const h3 = rt3.spawn(rt3.root, "payer")
  rt3.wake(h3, "move 10")
  expect(await rt3.wait(h3)).toEqual(stopped)
  expect(third.executed).toEqual([])
})

it("an asTool agent in a plain client's toolkit runs on its own runtime under the executor: its turns and calls are steps, a replay asks nothing again", async () => {
  script()
  server.addRule({
    match: (req) => bySoul("boss")(req) && req.toolResults.length === 0,
    reply: { toolCalls: [{ id: "a1", name: "payer", arguments: { prompt: "move 10" } }] },
  })
  server.addRule({
    match: bySoul("boss"),
    reply: (req) => ({ text: `boss: ${req.toolResults[0]?.content}` }),
  })
  const runs: Answer[] = []
  const payer = agent("payer", { ...(tree(runs).payer as AgentDef), model: "m" })
  const llm = { baseUrl: `${server.url}/v1`, style: "openai" as const, model: "m", apiKey: "k" }
  const boss = () => createClient({ ...llm, systemPrompt: "boss" })
  const toolkit = await createToolkit({ extraTools: [payer.asTool({ llm })] })
  const journal = new Map<string, string>()
  const first = memoryExecutor("run-as-tool", journal) // dies while waiting
  await expect(boss().run("pay", { toolkit, executor: first.executor })).rejects.toThrow(/worker died/)
  expect(first.executed).toEqual([
    "llm:1",
    "tool:1:a1/root/payer.1/llm:1",
    "tool:1:a1/root/payer.1/tool:1:t1",
  ])
  expect(first.waits[0]?.data).toMatchObject({ tool: "transfer", path: ["root", "payer.1"] })
  const asked = server.requests.length

  const second = memoryExecutor("run-as-tool", journal, (req) => ({ id: req.id, ok: true }))
  const result = await boss().run("pay", { toolkit, executor: second.executor })
  expect(result).toMatchObject({ status: "done", text: "boss: payer: moved 10" })
  expect(second.executed).toEqual([
    "tool:1:a1/root/payer.1/tool:1:t1:answer",
    "tool:1:a1/root/payer.1/llm:2",
    "llm:2",
  ])
  expect(server.requests.length - asked).toBe(2)
  expect(runs).toHaveLength(1)

  const third = memoryExecutor("run-as-tool", journal, (req) => ({ id: req.id, ok: true }))
  expect(await boss().run("pay", { toolkit, executor: third.executor })).toEqual(result)
  expect(third.executed).toEqual([])
})
