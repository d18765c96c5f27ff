import {
  type Answer,
  MemoryStore,
  type Request,
  type RunResult,
  type Toolkit,
  createClient,
  createToolkit,
  defineTool,
  pending,
} from "@toolnexus/core"
import { type FakeLLMServer, type FakeRequestView, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { agent } from "../src/agent.js"
import { createRuntime, restoreRuntime } from "../src/runtime.js"
import type { AgentDef, RuntimeOptions } from "../src/types.js"

let server: FakeLLMServer
beforeAll(async () => {
  server = await createFakeLLMServer()
})
beforeEach(() => server.reset())
afterAll(() => server.close())

const llm = () => ({ baseUrl: `${server.url}/v1`, model: "m", apiKey: "k" })
/** Every tool result in the request's transcript (OpenAI style), not only the last turn's. */
const results = (req: FakeRequestView): string[] =>
  req.body.messages
    .filter((m: { role: string }) => m.role === "tool")
    .map((m: { content: string }) => m.content)
const bySoul = (soul: string, fresh?: boolean) => (req: FakeRequestView) =>
  req.system === soul && (fresh === undefined || (results(req).length === 0) === fresh)
/** Requests each soul's model was sent, to prove nothing was asked twice. */
const asked = (soul: string, fresh: boolean) =>
  server.requests.filter((r) => r.system === soul && (results(r).length === 0) === fresh).length

/** A tool that needs approval once per name; counts its runs and keeps the answers it saw. */
function approvals() {
  const seen: { name: string; answer: Answer | undefined }[] = []
  const make = (name: string) =>
    defineTool({
      name,
      description: name,
      inputSchema: { type: "object" },
      run: (_args, ctx) => {
        seen.push({ name, answer: ctx.answer })
        if (!ctx.answer) return pending({ kind: "approval", prompt: `${name}?` })
        return ctx.answer.ok ? `${name} done` : `${name} refused: ${ctx.answer.reason ?? ""}`
      },
    })
  return { seen, make }
}

/** The helper asks `tools` one after the other (one per turn), then says what it got. */
function helperScript(soul: string, tools: string[]) {
  for (const [i, name] of tools.entries()) {
    server.addRule({
      match: (r) => r.system === soul && results(r).length === i,
      reply: { toolCalls: [{ name, arguments: {} }] },
    })
  }
  server.addRule({
    match: (r) => r.system === soul && results(r).length === tools.length,
    reply: (r) => ({ text: `helper: ${results(r).join(" | ")}` }),
  })
}

/** A caller whose model calls agent tool `tool` once, then repeats what it returned. */
function callerScript(soul: string, tool: string, prompt = "do it") {
  server.addRule({ match: bySoul(soul, true), reply: { toolCalls: [{ name: tool, arguments: { prompt } }] } })
  server.addRule({
    match: bySoul(soul, false),
    reply: (r) => ({ text: `caller got: ${results(r).join(" | ")}` }),
  })
}

describe("agent().asTool() in a runtime: a child handle on the caller's chain", () => {
  const setup = (tools: string[]) => {
    const a = approvals()
    const helper = agent("helper", { does: "needs approval", soul: "helper", tools: tools.map(a.make) })
    const registry: Record<string, AgentDef> = {
      boss: { name: "boss", does: "delegates", soul: "boss", tools: [helper.asTool()] },
    }
    helperScript("helper", tools)
    callerScript("boss", "helper")
    return { a, registry }
  }
  const options = (registry: Record<string, AgentDef>, extra: Partial<RuntimeOptions> = {}) => ({
    registry,
    llm: llm(),
    ...extra,
  })

  it("approve: the child parks the caller like task, and the answer resumes it without re-asking", async () => {
    const { a, registry } = setup(["deploy"])
    const rt = createRuntime(options(registry))
    const boss = rt.spawn(rt.root, "boss")
    rt.wake(boss, "go")
    const parked = await rt.wait(boss)
    expect(parked.status).toBe("pending")
    expect(parked.pending?.data).toMatchObject({ tool: "deploy", path: ["root", "boss.1", "helper.1"] })
    expect(rt.list().map((v) => [v.id, v.state])).toEqual([
      ["root/boss.1", "suspended"],
      ["root/boss.1/helper.1", "suspended"],
    ])
    await rt.resume({ id: parked.pending?.id as string, ok: true })
    const done = await rt.wait(boss)
    expect(done).toMatchObject({ status: "done", text: "caller got: helper: deploy done" })
    expect(rt.trace()).toContain("root/boss.1: task replay → REATTACH to root/boss.1/helper.1")
    // One child, closed once it settled; each model asked the first question once.
    expect(rt.inspect(boss).children).toEqual(["root/boss.1/helper.1"])
    expect(rt.stateOf({ id: "root/boss.1/helper.1" })).toBe("closed")
    expect([asked("boss", true), asked("helper", true)]).toEqual([1, 1])
    expect(a.seen.map((s) => s.answer?.ok)).toEqual([undefined, true])
    // The child's turns roll up to the caller.
    expect(done.totalTurns).toBe(done.turns + 2)
  })

  it("decline with a reason: the child sees the reason, the caller gets the child's answer", async () => {
    const { a, registry } = setup(["deploy"])
    const rt = createRuntime(options(registry))
    const boss = rt.spawn(rt.root, "boss")
    rt.wake(boss, "go")
    const parked = await rt.wait(boss)
    await rt.resume({ id: parked.pending?.id as string, ok: false, reason: "not on a Friday" })
    expect(await rt.wait(boss)).toMatchObject({
      status: "done",
      text: "caller got: helper: declined: deploy? (not on a Friday)",
    })
    // A declined tool is not run again (core's rule); the child's model got the reason.
    expect(a.seen).toHaveLength(1)
    expect(asked("helper", true)).toBe(1)
  })

  it("a second suspension parks the caller again on the new request", async () => {
    const { a, registry } = setup(["build", "deploy"])
    const rt = createRuntime(options(registry))
    const boss = rt.spawn(rt.root, "boss")
    rt.wake(boss, "go")
    const first = await rt.wait(boss)
    expect(first.pending?.data?.tool).toBe("build")
    await rt.resume({ id: first.pending?.id as string, ok: true })
    const second = await rt.wait(boss)
    expect(second).toMatchObject({ status: "pending", pending: { data: { tool: "deploy" } } })
    expect(second.pending?.id).not.toBe(first.pending?.id)
    await rt.resume({ id: second.pending?.id as string, ok: true })
    expect(await rt.wait(boss)).toMatchObject({
      status: "done",
      text: "caller got: helper: build done | deploy done",
    })
    expect(a.seen.map((s) => `${s.name}:${s.answer?.ok ?? "-"}`)).toEqual([
      "build:-",
      "build:true",
      "deploy:-",
      "deploy:true",
    ])
    expect(asked("boss", true)).toBe(1)
  })

  it("restart between suspension and answer: a restored runtime resumes the child by task key", async () => {
    const { a, registry } = setup(["deploy"])
    const store = new MemoryStore()
    const rt = createRuntime(options(registry, { store }))
    const boss = rt.spawn(rt.root, "boss")
    rt.wake(boss, "go")
    const parked = await rt.wait(boss)
    const snapshot = JSON.parse(JSON.stringify(rt.snapshot()))
    // A new process: the same registry (the agent tool's agent comes with it) and store.
    const again = restoreRuntime(snapshot, options(registry, { store }))
    await again.resume({ id: parked.pending?.id as string, ok: true })
    expect(await again.wait(boss)).toMatchObject({ status: "done", text: "caller got: helper: deploy done" })
    expect(again.inspect(boss).children).toEqual(["root/boss.1/helper.1"])
    expect([asked("boss", true), asked("helper", true)]).toEqual([1, 1])
    expect(a.seen).toHaveLength(2)
  })

  it("two levels deep: asTool inside an asTool's agent parks and resumes the whole chain", async () => {
    const a = approvals()
    const leaf = agent("leaf", { does: "asks", soul: "leaf", tools: [a.make("deploy")] })
    const mid = agent("mid", { does: "delegates to leaf", soul: "mid", tools: [leaf.asTool()] })
    const registry: Record<string, AgentDef> = {
      boss: { name: "boss", does: "delegates", soul: "boss", tools: [mid.asTool()] },
    }
    helperScript("leaf", ["deploy"])
    callerScript("mid", "leaf")
    callerScript("boss", "mid")
    const rt = createRuntime(options(registry))
    const boss = rt.spawn(rt.root, "boss")
    rt.wake(boss, "go")
    const parked = await rt.wait(boss)
    expect(parked.pending?.data?.path).toEqual(["root", "boss.1", "mid.1", "leaf.1"])
    await rt.resume({ id: parked.pending?.id as string, ok: true })
    expect(await rt.wait(boss)).toMatchObject({
      status: "done",
      text: "caller got: caller got: helper: deploy done",
    })
    expect([asked("boss", true), asked("mid", true), asked("leaf", true)]).toEqual([1, 1, 1])
  })

  it("a name that stands for two different defs is refused when the runtime is created", () => {
    const helper = agent("helper", { does: "one", soul: "one" })
    const registry: Record<string, AgentDef> = {
      helper: { name: "helper", does: "another", soul: "two" },
      boss: { name: "boss", does: "b", soul: "b", tools: [helper.asTool()] },
    }
    expect(() => createRuntime(options(registry))).toThrow(/agent "helper" is defined twice/)
  })
})

describe("agent().asTool() outside a runtime: a runtime of its own, state in the request", () => {
  const client = (store = new MemoryStore()) =>
    createClient({
      baseUrl: `${server.url}/v1`,
      style: "openai",
      model: "m",
      apiKey: "k",
      store,
      systemPrompt: "caller",
    })
  const setup = (tools: string[]) => {
    const a = approvals()
    const helper = agent("helper", { does: "needs approval", soul: "helper", tools: tools.map(a.make) })
    helperScript("helper", tools)
    callerScript("caller", "helper")
    return { a, helper }
  }
  const toolkitOf = (tool: ReturnType<ReturnType<typeof agent>["asTool"]>): Promise<Toolkit> =>
    createToolkit({ extraTools: [tool] })

  it("approve: the suspension is the caller's pending request; continueRun resumes it", async () => {
    const { a, helper } = setup(["deploy"])
    const store = new MemoryStore()
    const toolkit = await toolkitOf(helper.asTool({ llm: llm() }))
    const first = await client(store).ask("go", { id: "c1", toolkit })
    expect(first.status).toBe("pending")
    const request = first.pending as Request
    expect(request.data).toMatchObject({ tool: "deploy", path: ["root", "helper.1"] })
    expect(request.data?.agentRun).toMatchObject({ v: 1 })
    expect(await store.getPending("c1")).toMatchObject({ id: request.id })
    const done = await client(store).continueRun({ id: "c1", toolkit, answer: { id: request.id, ok: true } })
    expect(done).toMatchObject({ status: "done", text: "caller got: helper: deploy done" })
    expect([asked("caller", true), asked("helper", true)]).toEqual([1, 1])
    expect(a.seen.map((s) => s.answer?.ok)).toEqual([undefined, true])
  })

  it("decline with a reason reaches the agent's tool", async () => {
    const { helper } = setup(["deploy"])
    const store = new MemoryStore()
    const toolkit = await toolkitOf(helper.asTool({ llm: llm() }))
    const first = await client(store).ask("go", { id: "c1", toolkit })
    const answer = { id: first.pending?.id as string, ok: false, reason: "change freeze" }
    const done = await client(store).continueRun({ id: "c1", toolkit, answer })
    expect(done).toMatchObject({
      status: "done",
      text: "caller got: helper: declined: deploy? (change freeze)",
    })
  })

  it("a restart: the request (saved with the caller) alone brings the agent back", async () => {
    const { a, helper } = setup(["deploy"])
    const store = new MemoryStore()
    const first = await client(store).ask("go", {
      id: "c1",
      toolkit: await toolkitOf(helper.asTool({ llm: llm() })),
    })
    // Nothing of the first tool or runtime is reused: a new tool, toolkit and client.
    const saved = JSON.parse(JSON.stringify(await store.getPending("c1")))
    const fresh = new MemoryStore()
    await fresh.save("c1", (await store.get("c1")) ?? [], { pending: saved })
    const toolkit = await toolkitOf(helper.asTool({ llm: llm() }))
    const done = await client(fresh).continueRun({
      id: "c1",
      toolkit,
      answer: { id: first.pending?.id as string, ok: true },
    })
    expect(done).toMatchObject({ status: "done", text: "caller got: helper: deploy done" })
    expect(asked("helper", true)).toBe(1)
    expect(a.seen).toHaveLength(2)
  })

  it("a second suspension is a new pending request of the caller, carrying the agent's new state", async () => {
    const { helper } = setup(["build", "deploy"])
    const store = new MemoryStore()
    const toolkit = await toolkitOf(helper.asTool({ llm: llm() }))
    const first = (await client(store).ask("go", { id: "c1", toolkit })).pending as Request
    const second = await client(store).continueRun({ id: "c1", toolkit, answer: { id: first.id, ok: true } })
    expect(second).toMatchObject({ status: "pending", pending: { data: { tool: "deploy" } } })
    const next = second.pending as Request
    expect(next.id).not.toBe(first.id)
    const done = await client(store).continueRun({ id: "c1", toolkit, answer: { id: next.id, ok: true } })
    expect(done).toMatchObject({ status: "done", text: "caller got: helper: build done | deploy done" })
    expect(asked("caller", true)).toBe(1)
  })

  it("two levels deep: the outer agent's own runtime runs the inner agent tool as its child", async () => {
    const a = approvals()
    const leaf = agent("leaf", { does: "asks", soul: "leaf", tools: [a.make("deploy")] })
    const mid = agent("mid", { does: "delegates", soul: "mid", tools: [leaf.asTool()] })
    helperScript("leaf", ["deploy"])
    callerScript("mid", "leaf")
    callerScript("caller", "mid")
    const store = new MemoryStore()
    const toolkit = await toolkitOf(mid.asTool({ llm: llm() }))
    const first = (await client(store).ask("go", { id: "c1", toolkit })).pending as Request
    expect(first.data?.path).toEqual(["root", "mid.1", "leaf.1"])
    const done = await client(store).continueRun({ id: "c1", toolkit, answer: { id: first.id, ok: true } })
    expect(done).toMatchObject({ status: "done", text: "caller got: caller got: helper: deploy done" })
    expect([asked("caller", true), asked("mid", true), asked("leaf", true)]).toEqual([1, 1, 1])
  })

  it("an answer whose request carries no agent state is an error result, and nothing runs", async () => {
    const { helper } = setup(["deploy"])
    const tool = helper.asTool({ llm: llm() })
    const result = await tool.execute({ prompt: "x" }, { answer: { id: "r1", ok: true }, callId: "c" })
    expect(result).toEqual({
      output: "helper: cannot resume: the answered request carries no agent state (data.agentRun)",
      isError: true,
    })
    expect(server.requests).toHaveLength(0)
  })

  it("a settled run closes the agent's runtime and returns its answer", async () => {
    const helper = agent("helper", { does: "says hello", soul: "hello", model: "m" })
    server.addRule({ match: () => true, reply: (r) => ({ text: `hello ${r.lastUserText}` }) })
    const result: RunResult = await client().ask("go", {
      toolkit: await toolkitOf(helper.asTool({ llm: llm() })),
    })
    expect(result.status).toBe("done")
  })
})
