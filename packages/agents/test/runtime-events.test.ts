import { trace } from "@opentelemetry/api"
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base"
import {
  type Answer,
  type MetricEvent,
  createClient,
  createToolkit,
  defineTool,
  pending,
} from "@toolnexus/core"
import { type FakeLLMServer, type FakeRequestView, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { agent } from "../src/agent.js"
import { createRuntime } from "../src/runtime.js"
import type { RuntimeEvent } from "../src/runtime-events.js"
import type { AgentDef, RuntimeOptions } from "../src/types.js"

let server: FakeLLMServer
beforeAll(async () => {
  server = await createFakeLLMServer()
})
beforeEach(() => server.reset())
afterAll(() => server.close())

const STYLES = ["openai", "anthropic", "openai-responses"] as const

function options(
  style: (typeof STYLES)[number],
  registry: Record<string, AgentDef>,
  extra: Partial<RuntimeOptions> = {},
): RuntimeOptions {
  const baseUrl = style === "openai" ? `${server.url}/v1` : server.url
  return { registry, llm: { baseUrl, style, model: "m", apiKey: "k" }, ...extra }
}

const bySoul = (soul: string) => (req: FakeRequestView) => req.system === soul

const transfer = defineTool({
  name: "transfer",
  description: "move money",
  inputSchema: { type: "object", properties: { amount: { type: "number" } } },
  run: ({ amount }, ctx) =>
    ctx.answer?.ok ? `moved ${amount}` : pending({ kind: "approval", prompt: `Move ${amount}?` }),
})

/** A lead delegating to a payer whose transfer needs an approval. */
const registry: Record<string, AgentDef> = {
  lead: { name: "lead", does: "delegates", soul: "lead", team: ["payer"] },
  payer: { name: "payer", does: "pays", soul: "payer", tools: [transfer] },
}

/** Scripts the tree: the lead delegates, the payer transfers (and halts), both then answer. */
function script() {
  server.addRule({
    match: (req) => bySoul("lead")(req) && req.toolResults.length === 0,
    reply: { toolCalls: [{ id: "task-1", name: "task", arguments: { agent: "payer", prompt: "pay 10" } }] },
  })
  server.addRule({
    match: (req) => bySoul("lead")(req) && req.toolResults.length > 0,
    reply: (req) => ({ text: `lead reports: ${req.toolResults[0]?.content}` }),
  })
  server.addRule({
    match: (req) => bySoul("payer")(req) && req.toolResults.length === 0,
    reply: { toolCalls: [{ id: "tr-1", name: "transfer", arguments: { amount: 10 } }] },
  })
  server.addRule({
    match: (req) => bySoul("payer")(req) && req.toolResults.length > 0,
    reply: (req) => ({ text: `payer says the transfer is ${req.toolResults[0]?.content}` }),
  })
}

const LEAD = "root/lead.1"
const PAYER = "root/lead.1/payer.1"
const ofHandle = (events: RuntimeEvent[], handle: string) => events.filter((e) => e.handle === handle)
const statesOf = (events: RuntimeEvent[]) =>
  events.flatMap((e) => (e.type === "state" ? [`${e.from}→${e.to}`] : []))
const textOf = (events: RuntimeEvent[]) =>
  events.flatMap((e) => (e.type === "text" ? [e.delta] : [])).join("")

/** Reads an events() iterator in the background, like a host forwarding them over SSE. */
function consume(iterator: AsyncIterable<RuntimeEvent>) {
  const seen: RuntimeEvent[] = []
  const done = (async () => {
    for await (const ev of iterator) seen.push(ev)
  })()
  return { seen, done }
}

describe.each(STYLES)("runtime events (%s)", (style) => {
  it("a live consumer sees every handle's events in order, through a halt and the resume", async () => {
    script()
    const listened: RuntimeEvent[] = []
    const rt = createRuntime(options(style, registry, { onEvent: (ev) => listened.push(ev) }))
    const live = consume(rt.events())
    const lead = rt.spawn(rt.root, "lead")
    rt.wake(lead, "go")
    const parked = await rt.wait(lead)
    expect(parked.status).toBe("pending")
    const request = parked.pending as NonNullable<typeof parked.pending>

    // Parked: the payer streamed pending (never an error tool_result), the lead too.
    const payerHalt = ofHandle(listened, PAYER)
    expect(payerHalt.map((e) => e.type)).toEqual([
      "state",
      "usage",
      "turn",
      "tool_call",
      "pending",
      "done",
      "state",
    ])
    expect(ofHandle(listened, LEAD).some((e) => e.type === "tool_result")).toBe(false)

    await rt.resume({ id: request.id, ok: true } satisfies Answer)
    const final = await rt.wait(lead)
    expect(final).toMatchObject({ status: "done", text: "lead reports: payer says the transfer is moved 10" })
    await rt.close(rt.root)
    await live.done

    expect(live.seen).toEqual(listened)
    expect(live.seen.some((e) => e.type === "dropped")).toBe(false)
    for (const h of [LEAD, PAYER]) expect(statesOf(ofHandle(live.seen, h))).toEqual(rt.transitions({ id: h }))
    // The resumed payer turn streamed: the retried call's result, then its text as deltas.
    const payer = ofHandle(live.seen, PAYER)
    const resumedAt = payer.findIndex((e) => e.type === "state" && e.from === "suspended")
    const resumed = payer.slice(resumedAt)
    expect(resumed.find((e) => e.type === "tool_result")).toMatchObject({
      id: "tr-1",
      output: "moved 10",
      isError: false,
    })
    expect(textOf(resumed)).toBe("payer says the transfer is moved 10")
    expect(resumed.filter((e) => e.type === "text").length).toBeGreaterThan(1)
    // The lead's task call belongs to the lead; its result arrives after the payer's done.
    const leadEvents = ofHandle(live.seen, LEAD)
    expect(leadEvents.find((e) => e.type === "tool_call")).toMatchObject({ name: "task", id: "task-1" })
    const taskResult = live.seen.findIndex((e) => e.handle === LEAD && e.type === "tool_result")
    const payerDone = live.seen.findLastIndex((e) => e.handle === PAYER && e.type === "done")
    expect(taskResult).toBeGreaterThan(payerDone)
    expect(textOf(leadEvents)).toBe(final.text)
    expect(server.requests.every((r) => r.stream)).toBe(true)
  })

  it("a stalled consumer loses events with one counted notice; the runtime does not wait for it", async () => {
    script()
    const all: RuntimeEvent[] = []
    const rt = createRuntime(options(style, registry, { onEvent: (ev) => all.push(ev) }))
    const stalled = rt.events({ bufferSize: 3 })
    const lead = rt.spawn(rt.root, "lead")
    rt.wake(lead, "go")
    expect((await rt.wait(lead)).status).toBe("pending")
    await rt.close(rt.root)
    const read: RuntimeEvent[] = []
    for await (const ev of stalled) read.push(ev)
    expect(read.slice(0, 3)).toEqual(all.slice(0, 3))
    expect(read[3]).toEqual({ type: "dropped", count: all.length - 3, handle: "root" })
    expect(read).toHaveLength(4)
  })

  it("nobody listening: plain requests; a consumer that leaves stops receiving", async () => {
    server.addRule({ match: bySoul("payer"), reply: { text: "ok" } })
    const rt = createRuntime(options(style, registry))
    const h = rt.spawn(rt.root, "payer")
    rt.wake(h, "hi")
    await rt.wait(h)
    expect(server.requests.map((r) => r.stream)).toEqual([false])
    const events = rt.events()
    await events.return?.()
    rt.wake(h, "again")
    await rt.wait(h)
    expect(server.requests.map((r) => r.stream)).toEqual([false, false])
    expect(() => rt.events({ bufferSize: 0 })).toThrow(expect.objectContaining({ code: "TNX_CONFIG" }))
  })

  it("hook arguments and metric events carry the handle", async () => {
    script()
    const metrics: MetricEvent[] = []
    const hooked: string[] = []
    const rt = createRuntime(
      options(style, registry, {
        onMetric: (ev) => metrics.push(ev),
        hooks: {
          beforeLLM: (info) => void hooked.push(`beforeLLM ${info.handle}`),
          afterTool: (info) => void hooked.push(`afterTool ${info.name} ${info.handle}`),
        },
      }),
    )
    const lead = rt.spawn(rt.root, "lead")
    rt.wake(lead, "go")
    await rt.wait(lead)
    expect(new Set(metrics.map((m) => m.handle))).toEqual(new Set([LEAD, PAYER]))
    expect(metrics.find((m) => m.event === "tool" && m.tool === "transfer")?.handle).toBe(PAYER)
    expect(hooked).toContain(`beforeLLM ${LEAD}`)
    expect(hooked).toContain(`beforeLLM ${PAYER}`)
  })
})

describe("runtime tracing", () => {
  const names = (spans: ReadableSpan[]) => spans.map((s) => s.name)
  const one = (spans: ReadableSpan[], name: string) => spans.find((s) => s.name === name) as ReadableSpan

  it("each handle's run is an invoke_agent span; a child's hangs under its parent's task call", async () => {
    script()
    const exporter = new InMemorySpanExporter()
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
    const tracer = provider.getTracer("test")
    const rt = createRuntime(options("openai", registry, { telemetry: { tracer } }))
    const lead = rt.spawn(rt.root, "lead")
    rt.wake(lead, "go")
    const parked = await rt.wait(lead)
    const spans = exporter.getFinishedSpans()
    expect(names(spans).sort()).toEqual([
      "chat m",
      "chat m",
      "execute_tool task",
      "execute_tool transfer",
      "invoke_agent lead",
      "invoke_agent payer",
    ])
    const leadRun = one(spans, "invoke_agent lead")
    const task = one(spans, "execute_tool task")
    const payerRun = one(spans, "invoke_agent payer")
    expect(leadRun.parentSpanContext).toBeUndefined()
    expect(task.parentSpanContext?.spanId).toBe(leadRun.spanContext().spanId)
    expect(payerRun.parentSpanContext?.spanId).toBe(task.spanContext().spanId)
    expect(payerRun.spanContext().traceId).toBe(leadRun.spanContext().traceId)
    expect(payerRun.attributes).toMatchObject({ "gen_ai.agent.name": "payer", "gen_ai.agent.id": PAYER })
    // The leaf's context rides the escalated request; every level records the suspension.
    const payerCtx = payerRun.spanContext()
    expect(parked.pending?.data?.trace).toEqual({
      traceparent: `00-${payerCtx.traceId}-${payerCtx.spanId}-01`,
    })
    expect(leadRun.events.map((e) => e.name)).toEqual(["toolnexus.suspension"])

    exporter.reset()
    await rt.resume({ id: parked.pending?.id as string, ok: true })
    await rt.wait(lead)
    const resumed = exporter.getFinishedSpans()
    for (const run of resumed.filter((s) => s.name.startsWith("invoke_agent"))) {
      expect(run.links.map((l) => l.context.spanId)).toEqual([payerCtx.spanId])
    }
    expect(
      names(resumed)
        .filter((n) => n.startsWith("invoke_agent"))
        .sort(),
    ).toEqual(["invoke_agent lead", "invoke_agent payer"])
    trace.disable()
  })
})

describe("events() after close(root)", () => {
  it("ends at once", async () => {
    const rt = createRuntime(options("openai", registry))
    await rt.close(rt.root)
    const read: RuntimeEvent[] = []
    for await (const ev of rt.events()) read.push(ev)
    expect(read).toEqual([])
  })

  it("a signal ends a live iteration", async () => {
    const rt = createRuntime(options("openai", registry))
    const controller = new AbortController()
    const reading = (async () => {
      const read: RuntimeEvent[] = []
      for await (const ev of rt.events({ signal: controller.signal })) read.push(ev)
      return read
    })()
    controller.abort()
    expect(await reading).toEqual([])
  })
})

describe("agent().asTool() traced", () => {
  it("the nested runtime's run hangs under the calling execute_tool span", async () => {
    const exporter = new InMemorySpanExporter()
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
    const tracer = provider.getTracer("test")
    const llm = { baseUrl: `${server.url}/v1`, style: "openai" as const, model: "m", apiKey: "k" }
    const helper = agent("helper", { does: "helps", soul: "helper" })
    server.addRule({ match: bySoul("helper"), reply: { text: "helped" } })
    server.enqueue(
      { toolCalls: [{ id: "h1", name: "helper", arguments: { prompt: "help" } }] },
      { text: "all done" },
    )
    const toolkit = await createToolkit({ extraTools: [helper.asTool({ llm, telemetry: { tracer } })] })
    const client = createClient({ ...llm, telemetry: { tracer } })
    expect((await client.run("go", { toolkit })).text).toBe("all done")
    const spans = exporter.getFinishedSpans()
    const call = spans.find((s) => s.name === "execute_tool helper") as ReadableSpan
    const nested = spans.find((s) => s.name === "invoke_agent helper") as ReadableSpan
    expect(nested.parentSpanContext?.spanId).toBe(call.spanContext().spanId)
  })
})

describe("events() iterator", () => {
  it("serves next() calls made without awaiting, in order", async () => {
    server.addRule({ match: bySoul("payer"), reply: { text: "ok" } })
    const rt = createRuntime(options("openai", registry))
    const events = rt.events()
    const first = events.next()
    const second = events.next()
    const h = rt.spawn(rt.root, "payer")
    rt.wake(h, "hi")
    expect((await first).value).toMatchObject({ type: "state", from: "idle", to: "running", handle: h.id })
    expect((await second).value).toMatchObject({ handle: h.id })
    await rt.wait(h)
    await rt.close(rt.root)
  })
})
