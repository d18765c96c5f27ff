import { type Answer, type MetricEvent, defineTool, pending } from "@toolnexus/core"
import { type FakeLLMServer, type FakeRequestView, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { agent } from "../src/agent.js"
import { createVirtualClock } from "../src/clock.js"
import { createRuntime, restoreRuntime } from "../src/runtime.js"
import type { AgentDef, RuntimeOptions } from "../src/types.js"

let server: FakeLLMServer
beforeAll(async () => {
  server = await createFakeLLMServer()
})
beforeEach(() => server.reset())
afterAll(() => server.close())

const llm = () => ({ baseUrl: `${server.url}/v1`, model: "m", apiKey: "k" })
const options = (
  registry: Record<string, AgentDef>,
  extra: Partial<RuntimeOptions> = {},
): RuntimeOptions => ({
  registry,
  llm: llm(),
  ...extra,
})
const bySoul = (soul: string, fresh?: boolean) => (req: FakeRequestView) =>
  req.system === soul && (fresh === undefined || (req.toolResults.length === 0) === fresh)

const approval = (name: string) =>
  defineTool({
    name,
    description: name,
    inputSchema: { type: "object" },
    run: (_args, ctx) => (ctx.answer?.ok ? `${name} ok` : pending({ kind: "approval", prompt: `${name}?` })),
  })

describe("more runtime behaviour", () => {
  it("two children suspended in one turn: each answer resumes its own subtree; the parent re-parks on the other", async () => {
    const registry: Record<string, AgentDef> = {
      lead: { name: "lead", does: "leads", soul: "lead", team: ["a", "b"] },
      a: { name: "a", does: "asks A", soul: "a", tools: [approval("alpha")] },
      b: { name: "b", does: "asks B", soul: "b", tools: [approval("beta")] },
    }
    const rt = createRuntime(options(registry))
    server.addRule({
      match: bySoul("lead", true),
      reply: {
        toolCalls: [
          { id: "ta", name: "task", arguments: { agent: "a", prompt: "do a" } },
          { id: "tb", name: "task", arguments: { agent: "b", prompt: "do b" } },
        ],
      },
    })
    server.addRule({
      match: bySoul("lead"),
      reply: (r) => ({ text: r.toolResults.map((t) => t.content).join(" & ") }),
    })
    server.addRule({ match: bySoul("a", true), reply: { toolCalls: [{ name: "alpha", arguments: {} }] } })
    server.addRule({ match: bySoul("a"), reply: (r) => ({ text: `a: ${r.toolResults[0]?.content}` }) })
    server.addRule({ match: bySoul("b", true), reply: { toolCalls: [{ name: "beta", arguments: {} }] } })
    server.addRule({ match: bySoul("b"), reply: (r) => ({ text: `b: ${r.toolResults[0]?.content}` }) })

    const lead = rt.spawn(rt.root, "lead")
    rt.wake(lead, "go")
    const first = await rt.wait(lead)
    expect(first.pending?.prompt).toBe("alpha?")
    const b = rt.list().find((v) => v.def === "b")
    expect(b?.state).toBe("suspended")

    await rt.resume({ id: first.pending?.id as string, ok: true })
    const second = await rt.wait(lead)
    expect(second.status).toBe("pending")
    expect(second.pending?.prompt).toBe("beta?")
    expect(second.pending?.id).toBe(b?.pending?.id)

    await rt.resume({ id: second.pending?.id as string, ok: true })
    expect(await rt.wait(lead)).toMatchObject({ status: "done", text: "a: alpha ok & b: beta ok" })
    expect(rt.inspect(lead).children).toHaveLength(2)
    expect(server.requests.filter((r) => r.system === "lead")).toHaveLength(2)
  })

  it("independently suspended subtrees are resumed independently, by id", async () => {
    const registry = { asker: { name: "asker", does: "asks", soul: "asker", tools: [approval("gamma")] } }
    const rt = createRuntime(options(registry))
    server.addRule({ match: bySoul("asker", true), reply: { toolCalls: [{ name: "gamma", arguments: {} }] } })
    server.addRule({ match: bySoul("asker"), reply: (r) => ({ text: r.toolResults[0]?.content ?? "" }) })
    const [h1, h2] = [rt.spawn(rt.root, "asker"), rt.spawn(rt.root, "asker")] as const
    rt.wake(h1, "one")
    rt.wake(h2, "two")
    const [p1, p2] = await Promise.all([rt.wait(h1), rt.wait(h2)])
    await rt.resume({ id: p2.pending?.id as string, ok: false, reason: "no" })
    expect(rt.stateOf(h1)).toBe("suspended")
    expect((await rt.wait(h2)).text).toBe("declined: gamma? (no)")
    await rt.resume({ id: p1.pending?.id as string, ok: true })
    expect((await rt.wait(h1)).text).toBe("gamma ok")
  })

  it("a failed child is an error result for the parent's model, never an exception", async () => {
    const registry: Record<string, AgentDef> = {
      lead: { name: "lead", does: "leads", soul: "lead", team: ["flaky"] },
      flaky: { name: "flaky", does: "fails", soul: "flaky" },
    }
    const rt = createRuntime(options(registry))
    server.addRule({
      match: bySoul("lead", true),
      reply: { toolCalls: [{ name: "task", arguments: { agent: "flaky", prompt: "x" } }] },
    })
    server.addRule({ match: bySoul("lead"), reply: (r) => ({ text: `saw ${r.toolResults[0]?.content}` }) })
    server.addRule({ match: bySoul("flaky"), reply: { status: 400, text: "bad request" } })
    const lead = rt.spawn(rt.root, "lead")
    rt.wake(lead, "go")
    const result = await rt.wait(lead)
    expect(result.status).toBe("done")
    expect(result.text).toMatch(
      /^saw root\/lead\.1\/flaky\.1 ended with status error: LLM endpoint answered HTTP 400/,
    )
  })

  it("a task outside the team is an error result listing the team", async () => {
    const registry: Record<string, AgentDef> = {
      lead: { name: "lead", does: "leads", soul: "lead", team: ["helper"] },
      helper: { name: "helper", does: "helps", soul: "helper" },
    }
    const rt = createRuntime(options(registry))
    server.addRule({
      match: bySoul("lead", true),
      reply: { toolCalls: [{ name: "task", arguments: { agent: "lead", prompt: "x" } }] },
    })
    server.addRule({ match: bySoul("lead"), reply: (r) => ({ text: r.toolResults[0]?.content ?? "" }) })
    const lead = rt.spawn(rt.root, "lead")
    rt.wake(lead, "go")
    expect((await rt.wait(lead)).text).toBe('unknown team member "lead"; the team is: helper')
    expect(rt.inspect(lead).children).toEqual([])
  })

  it("a def's hooks and onMetric replace the runtime's, per field", async () => {
    const runtimeEvents: string[] = []
    const defEvents: string[] = []
    const seen: string[] = []
    const registry: Record<string, AgentDef> = {
      plain: { name: "plain", does: "x", soul: "plain" },
      custom: {
        name: "custom",
        does: "y",
        soul: "custom",
        onMetric: (ev: MetricEvent) => void defEvents.push(ev.event),
      },
    }
    const rt = createRuntime(
      options(registry, {
        onMetric: (ev) => void runtimeEvents.push(ev.event),
        hooks: { beforeLLM: ({ model }) => void seen.push(model) },
      }),
    )
    server.addRule({ match: () => true, reply: { text: "ok" } })
    for (const name of ["plain", "custom"]) {
      const h = rt.spawn(rt.root, name)
      rt.wake(h, "go")
      await rt.wait(h)
    }
    expect(runtimeEvents).toEqual(["llm", "run"])
    expect(defEvents).toEqual(["llm", "run"])
    expect(seen).toEqual(["m", "m"]) // hooks not overridden by `custom`: the runtime's apply
  })

  it("wake while running runs again afterwards with the new input", async () => {
    const registry = { w: { name: "w", does: "w", soul: "w" } }
    const rt = createRuntime(options(registry))
    server.addRule({ match: bySoul("w"), reply: (r) => ({ text: `got ${r.lastUserText}`, delayMs: 20 }) })
    const h = rt.spawn(rt.root, "w")
    rt.wake(h, "first")
    rt.wake(h, "second")
    const first = await rt.wait(h)
    expect(first.text).toBe("got first")
    expect(rt.stateOf(h)).toBe("running") // the second run started as the first settled
    expect((await rt.wait(h)).text).toBe("got [from: host] second")
  })

  it("interrupting a parked handle cancels its request; the next run declines it first, keeping the transcript valid", async () => {
    const registry = { asker: { name: "asker", does: "asks", soul: "asker", tools: [approval("delta")] } }
    const rt = createRuntime(options(registry))
    server.addRule({
      match: (r) => r.system === "asker" && r.lastUserText === "start" && r.toolResults.length === 0,
      reply: { toolCalls: [{ name: "delta", arguments: {} }] },
    })
    server.addRule({
      match: (r) => r.system === "asker" && r.toolResults.length > 0 && r.lastUserText === "start",
      reply: (r) => ({ text: `after: ${r.toolResults[0]?.content}` }),
    })
    server.addRule({ match: bySoul("asker"), reply: (r) => ({ text: `new: ${r.lastUserText}` }) })
    const h = rt.spawn(rt.root, "asker")
    rt.wake(h, "start")
    const parked = await rt.wait(h)
    rt.interrupt(h)
    expect(rt.stateOf(h)).toBe("idle")
    expect(await rt.wait(h)).toMatchObject({ status: "interrupted" })
    await expect(rt.resume({ id: parked.pending?.id as string, ok: true })).rejects.toThrow(/unknown request/)
    rt.wake(h, "next")
    expect((await rt.wait(h)).text).toBe("new: next")
    expect(server.requests.map((r) => r.toolResults[0]?.content ?? r.lastUserText)).toEqual([
      "start",
      "declined: delta? (cancelled)",
      "next",
    ])
  })

  it("a wake while parked is kept and runs once the resumed run settles", async () => {
    const registry = { asker: { name: "asker", does: "asks", soul: "asker", tools: [approval("eps")] } }
    const rt = createRuntime(options(registry))
    server.addRule({
      match: (r) => r.lastUserText === "start" && r.toolResults.length === 0,
      reply: { toolCalls: [{ name: "eps", arguments: {} }] },
    })
    server.addRule({ match: (r) => r.lastUserText === "start", reply: { text: "approved run done" } })
    server.addRule({ match: () => true, reply: (r) => ({ text: `then: ${r.lastUserText}` }) })
    const h = rt.spawn(rt.root, "asker")
    rt.wake(h, "start")
    const parked = await rt.wait(h)
    rt.wake(h, "later")
    expect(rt.inspect(h)).toMatchObject({ state: "suspended", inbox: 1 })
    await rt.resume({ id: parked.pending?.id as string, ok: true })
    expect(rt.stateOf(h)).toBe("running")
    expect((await rt.wait(h)).text).toBe("then: [from: host] later")
  })

  it("interrupting a queued wake takes it out of the parent's queue", async () => {
    const registry: Record<string, AgentDef> = {
      lead: { name: "lead", does: "leads", soul: "lead", budget: { maxConcurrent: 1 } },
      w: { name: "w", does: "w", soul: "w" },
    }
    const rt = createRuntime(options(registry))
    server.addRule({ match: bySoul("w"), reply: (r) => ({ text: `did ${r.lastUserText}`, delayMs: 20 }) })
    const lead = rt.spawn(rt.root, "lead")
    const [a, b, c] = [rt.spawn(lead, "w"), rt.spawn(lead, "w"), rt.spawn(lead, "w")]
    rt.wake(a, "a")
    rt.wake(b, "b")
    rt.wake(c, "c")
    rt.interrupt(b)
    await rt.wait(a)
    expect((await rt.wait(c)).text).toBe("did c")
    expect(rt.stateOf(b)).toBe("idle")
    expect(server.requests.map((r) => r.lastUserText)).toEqual(["a", "c"])
  })

  it("close waits for a running handle, or interrupts it with force", async () => {
    const reasons: string[] = []
    const registry = {
      w: {
        name: "w",
        does: "w",
        soul: "w",
        onClose: (_h: unknown, reason: string) => void reasons.push(reason),
      },
    }
    const rt = createRuntime(options(registry))
    server.addRule({ match: (r) => r.lastUserText === "slow", reply: { text: "finished", delayMs: 30 } })
    server.addRule({ match: (r) => r.lastUserText === "stuck", reply: { hang: true } })
    const a = rt.spawn(rt.root, "w")
    rt.wake(a, "slow")
    await rt.close(a)
    expect(await rt.wait(a)).toMatchObject({ status: "done", text: "finished" })
    const b = rt.spawn(rt.root, "w")
    rt.wake(b, "stuck")
    await rt.close(b, { force: true })
    expect(rt.stateOf(b)).toBe("closed")
    expect(reasons).toEqual(["closed", "interrupted"])
    expect(rt.transitions(b)).toEqual(["idle→running", "running→idle", "idle→closed"])
  })

  it("maxWallMs is measured on the runtime clock", async () => {
    const clock = createVirtualClock(1_000)
    const registry = { w: { name: "w", does: "w", soul: "w", budget: { maxWallMs: 500 } } }
    const rt = createRuntime(options(registry, { clock }))
    server.addRule({ match: () => true, reply: { text: "ok" } })
    const h = rt.spawn(rt.root, "w")
    clock.advance(600)
    rt.wake(h, "go")
    expect(await rt.wait(h)).toMatchObject({ status: "incomplete", limit: "maxWallMs" })
    expect(server.requests).toHaveLength(0)
  })

  it("restoring a snapshot taken mid-run brings the handle back idle with its inbox", async () => {
    const registry = { w: { name: "w", does: "w", soul: "w" } }
    const rt = createRuntime(options(registry))
    server.addRule({ match: () => true, reply: { hang: true } })
    const h = rt.spawn(rt.root, "w")
    rt.post(h, { text: "keep me" })
    rt.wake(h, "go")
    const snapshot = JSON.parse(JSON.stringify(rt.snapshot()))
    rt.interrupt(h)
    const restored = restoreRuntime(snapshot, options(registry))
    expect(restored.inspect(h)).toMatchObject({ state: "idle", inbox: 1 })
    expect(await restored.wait(h)).toMatchObject({ status: "interrupted" })
  })

  it("agent(...).run and .asTool run a one-off runtime", async () => {
    const helper = agent("helper", { does: "says hello", soul: "helper", model: "m" })
    server.addRule({ match: () => true, reply: (r) => ({ text: `hello ${r.lastUserText}` }) })
    expect(await helper.run("you", { llm: llm() })).toMatchObject({ status: "done", text: "hello you" })
    const tool = helper.asTool({ llm: llm() })
    expect(tool).toMatchObject({ name: "helper", description: "says hello", source: "agent" })
    expect(await tool.execute({ prompt: "tool" })).toEqual({ output: "hello tool", isError: false })
  })

  it("answers carry through to a declined handle's tool exactly once", async () => {
    const answers: (Answer | undefined)[] = []
    const tool = defineTool({
      name: "t",
      description: "t",
      inputSchema: { type: "object" },
      run: (_a, ctx) => {
        answers.push(ctx.answer)
        return ctx.answer ? "answered" : pending({ kind: "input", prompt: "value?" })
      },
    })
    const rt = createRuntime(options({ x: { name: "x", does: "x", soul: "x", tools: [tool] } }))
    server.addRule({ match: bySoul("x", true), reply: { toolCalls: [{ name: "t", arguments: {} }] } })
    server.addRule({ match: bySoul("x"), reply: { text: "end" } })
    const h = rt.spawn(rt.root, "x")
    rt.wake(h, "go")
    const parked = await rt.wait(h)
    expect(rt.inspect(h).pendingKind).toBe("input")
    await rt.resume({ id: parked.pending?.id as string, ok: true, data: { value: 42 } })
    expect(answers).toEqual([undefined, { id: parked.pending?.id, ok: true, data: { value: 42 } }])
  })
})
