import { trace } from "@opentelemetry/api"
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base"
import { afterEach, describe, expect, it } from "vitest"
import { setOtelImporter } from "../src/telemetry/otel-api.js"
import { createToolkit } from "../src/tools/toolkit.js"
import { STYLES, approve, clientFor, lookup, useFakeServer } from "./helpers.js"

const ctx = useFakeServer()

function recorder() {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  return { exporter, provider, tracer: provider.getTracer("test") }
}

const byName = (spans: ReadableSpan[], name: string) => spans.filter((s) => s.name === name)
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId

afterEach(() => {
  setOtelImporter(undefined)
  trace.disable()
})

describe.each(STYLES)("tracing (%s)", (style) => {
  const provider = style === "anthropic" ? "anthropic" : "openai"
  it("a run is one invoke_agent span with chat and execute_tool children and GenAI attributes", async () => {
    const { server } = ctx
    const { exporter, tracer } = recorder()
    server.enqueue(
      {
        toolCalls: [{ id: "l1", name: "lookup", arguments: { q: "x" } }],
        usage: { promptTokens: 11, completionTokens: 3 },
      },
      { text: "found it", usage: { promptTokens: 20, completionTokens: 4 } },
    )
    const toolkit = await createToolkit({ extraTools: [lookup] })
    const client = clientFor(style, server, { telemetry: { tracer, agentName: "helper" } })
    const result = await client.run("find x", { toolkit })
    expect(result.status).toBe("done")
    const spans = exporter.getFinishedSpans()
    expect(spans.map((s) => s.name).sort()).toEqual([
      "chat test-model",
      "chat test-model",
      "execute_tool lookup",
      "invoke_agent helper",
    ])
    const [run] = byName(spans, "invoke_agent helper")
    expect(run?.parentSpanContext).toBeUndefined()
    expect(run?.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "helper",
      "gen_ai.provider.name": provider,
      "gen_ai.request.model": "test-model",
      "gen_ai.usage.input_tokens": 31,
      "gen_ai.usage.output_tokens": 7,
      "toolnexus.run.status": "done",
    })
    const chats = byName(spans, "chat test-model")
    for (const chat of chats) {
      expect(parentOf(chat)).toBe(run?.spanContext().spanId)
      expect(chat.kind).toBe(2) // CLIENT
      expect(chat.attributes).toMatchObject({
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": "test-model",
        "server.address": "127.0.0.1",
      })
    }
    expect(chats.map((c) => c.attributes["gen_ai.response.finish_reasons"])).toEqual([
      ["tool_calls"],
      ["stop"],
    ])
    expect(chats.map((c) => c.attributes["gen_ai.usage.input_tokens"])).toEqual([11, 20])
    const [tool] = byName(spans, "execute_tool lookup")
    expect(parentOf(tool!)).toBe(run?.spanContext().spanId)
    expect(tool?.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "lookup",
      "gen_ai.tool.call.id": "l1",
      "toolnexus.tool.outcome": "ok",
    })
    // Content capture is off by default: no prompt, output, arguments or results anywhere.
    const everything = JSON.stringify(spans.map((s) => s.attributes))
    expect(everything).not.toContain("find x")
    expect(everything).not.toContain("secret")
  })

  it("captureContent records messages, arguments and results", async () => {
    const { server } = ctx
    const { exporter, tracer } = recorder()
    server.enqueue({ toolCalls: [{ id: "l1", name: "lookup", arguments: { q: "x" } }] }, { text: "done" })
    const toolkit = await createToolkit({ extraTools: [lookup] })
    await clientFor(style, server, { telemetry: { tracer, captureContent: true } }).run("find x", { toolkit })
    const spans = exporter.getFinishedSpans()
    const [chat] = byName(spans, "chat test-model")
    expect(String(chat?.attributes["gen_ai.input.messages"])).toContain("find x")
    expect(chat?.attributes["gen_ai.output.messages"]).toBeDefined()
    const [tool] = byName(spans, "execute_tool lookup")
    expect(tool?.attributes["gen_ai.tool.call.arguments"]).toBe('{"q":"x"}')
    expect(tool?.attributes["gen_ai.tool.call.result"]).toBe("found secret x")
    expect(byName(spans, "invoke_agent")).toHaveLength(1)
  })

  it("a halt is a span event; the request carries the trace context; the resumed run links to it", async () => {
    const { server } = ctx
    const first = recorder()
    server.enqueue({ toolCalls: [{ id: "a1", name: "approve", arguments: { what: "it" } }] })
    const toolkit = await createToolkit({ extraTools: [approve] })
    const halted = await clientFor(style, server, { telemetry: { tracer: first.tracer } }).run("go", {
      toolkit,
    })
    const request = halted.pending!
    const [run] = first.exporter.getFinishedSpans().filter((s) => s.name === "invoke_agent")
    const ctxOf = run!.spanContext()
    expect(run?.events.map((e) => [e.name, e.attributes])).toEqual([
      ["toolnexus.suspension", { "toolnexus.request.id": request.id, "toolnexus.request.kind": "approval" }],
    ])
    expect(run?.status.code).toBe(0) // a suspension is not an error
    const [tool] = byName(first.exporter.getFinishedSpans(), "execute_tool approve")
    expect(tool?.attributes["toolnexus.tool.outcome"]).toBe("pending")
    expect(tool?.status.code).toBe(0)
    expect(request.data?.trace).toEqual({ traceparent: `00-${ctxOf.traceId}-${ctxOf.spanId}-01` })
    expect(halted.toolCalls[0]?.metadata?.pending).toEqual(request)

    // The resume runs on another tracer (think: another process) and links to the asking run.
    const second = recorder()
    server.enqueue({ text: "approved" })
    const resumed = await clientFor(style, server, { telemetry: { tracer: second.tracer } }).continueRun({
      toolkit,
      messages: JSON.parse(JSON.stringify(halted.messages)),
      pending: JSON.parse(JSON.stringify(request)),
      answer: { id: request.id, ok: true },
    })
    expect(resumed.status).toBe("done")
    const [again] = byName(second.exporter.getFinishedSpans(), "invoke_agent")
    expect(again?.spanContext().traceId).not.toBe(ctxOf.traceId)
    expect(again?.links).toHaveLength(1)
    expect(again?.links[0]?.context).toMatchObject({ traceId: ctxOf.traceId, spanId: ctxOf.spanId })
    expect(again?.links[0]?.attributes).toEqual({ "toolnexus.request.id": request.id })
    const retried = byName(second.exporter.getFinishedSpans(), "execute_tool approve")
    expect(retried.map((s) => s.attributes["toolnexus.tool.outcome"])).toEqual(["ok"])
  })

  it("a failed LLM request marks its chat span and the run span as errors", async () => {
    const { server } = ctx
    const { exporter, tracer } = recorder()
    server.enqueue({ status: 400, text: "bad request" })
    await expect(clientFor(style, server, { telemetry: { tracer } }).run("hi")).rejects.toThrow()
    const spans = exporter.getFinishedSpans()
    const [chat] = byName(spans, "chat test-model")
    const [run] = byName(spans, "invoke_agent")
    expect(chat?.status.code).toBe(2)
    expect(chat?.attributes["error.type"]).toBe("TNX_LLM_HTTP")
    expect(run?.status.code).toBe(2)
  })
})

describe("tracing switches", () => {
  it("uses a globally registered provider by itself; enabled:false turns it off", async () => {
    const { server } = ctx
    const { exporter, provider } = recorder()
    trace.setGlobalTracerProvider(provider)
    server.enqueue({ text: "one" }, { text: "two" })
    await clientFor("openai", server).run("hi")
    expect(
      exporter
        .getFinishedSpans()
        .map((s) => s.name)
        .sort(),
    ).toEqual(["chat test-model", "invoke_agent"])
    exporter.reset()
    await clientFor("openai", server, { telemetry: { enabled: false } }).run("hi")
    expect(exporter.getFinishedSpans()).toEqual([])
  })

  it("with no tracer and no global provider nothing is imported and requests stay unstamped", async () => {
    const { server } = ctx
    let imports = 0
    setOtelImporter(() => {
      imports++
      return import("@opentelemetry/api")
    })
    server.enqueue({ toolCalls: [{ id: "a1", name: "approve", arguments: { what: "it" } }] })
    const toolkit = await createToolkit({ extraTools: [approve] })
    const result = await clientFor("openai", server).run("go", { toolkit })
    expect(imports).toBe(0)
    expect(result.pending?.data).toMatchObject({ callId: "a1" })
    expect(result.pending?.data?.trace).toBeUndefined()
  })

  it("when @opentelemetry/api cannot be imported, a run with a tracer works untraced", async () => {
    const { server } = ctx
    const { exporter, tracer } = recorder()
    setOtelImporter(() => Promise.reject(new Error("Cannot find package '@opentelemetry/api'")))
    server.enqueue({ toolCalls: [{ id: "a1", name: "approve", arguments: { what: "it" } }] })
    const toolkit = await createToolkit({ extraTools: [approve] })
    const result = await clientFor("openai", server, { telemetry: { tracer } }).run("go", { toolkit })
    expect(result.status).toBe("pending")
    expect(result.pending?.data).toMatchObject({ callId: "a1" })
    expect(result.pending?.data?.trace).toBeUndefined()
    expect(exporter.getFinishedSpans()).toEqual([])
  })

  it("a no-op tracer records nothing and stamps no trace context", async () => {
    const { server } = ctx
    server.enqueue({ toolCalls: [{ id: "a1", name: "approve", arguments: { what: "it" } }] })
    const toolkit = await createToolkit({ extraTools: [approve] })
    // Without a registered provider the API hands out a non-recording tracer.
    const noop = trace.getTracer("noop")
    const result = await clientFor("openai", server, { telemetry: { tracer: noop } }).run("go", { toolkit })
    expect(result.pending?.data).toMatchObject({ callId: "a1" })
    expect(result.pending?.data?.trace).toBeUndefined()
  })
})

describe("without @opentelemetry/api installed", () => {
  it("the built package runs, streams and resumes untraced when the import fails for real", async () => {
    const { execFile } = await import("node:child_process")
    const { fileURLToPath } = await import("node:url")
    const script = fileURLToPath(new URL("./fixtures/without-otel.mjs", import.meta.url))
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, [script], (error, out, err) =>
        error ? reject(new Error(err)) : resolve(out),
      ),
    )
    const outcome = JSON.parse(stdout)
    expect(outcome).toMatchObject({
      halted: "pending",
      data: { callId: "a1" },
      resumed: "done",
      events: ["usage", "turn", "tool_call", "pending", "done"],
    })
    expect(outcome.data.trace).toBeUndefined()
  })
})

describe("inline answers", () => {
  it("a suspension answered by waitFor is an inline suspension event; nothing is stamped", async () => {
    const { server } = ctx
    const { exporter, tracer } = recorder()
    server.enqueue({ toolCalls: [{ id: "a1", name: "approve", arguments: { what: "it" } }] }, { text: "ok" })
    const toolkit = await createToolkit({ extraTools: [approve] })
    const asked: unknown[] = []
    const client = clientFor("openai", server, {
      telemetry: { tracer },
      waitFor: (req) => {
        asked.push(req.data?.trace)
        return { id: req.id, ok: true }
      },
    })
    expect((await client.run("go", { toolkit })).status).toBe("done")
    const [run] = byName(exporter.getFinishedSpans(), "invoke_agent")
    expect(run?.events.map((e) => e.attributes)).toEqual([
      {
        "toolnexus.request.id": expect.stringMatching(/^pnd-/),
        "toolnexus.request.kind": "approval",
        "toolnexus.suspension.inline": true,
      },
    ])
    expect(asked).toEqual([undefined])
  })
})
