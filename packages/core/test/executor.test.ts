import { describe, expect, it } from "vitest"
import { StepTooLargeError } from "../src/client/executor.js"
import type { MetricEvent } from "../src/client/metrics.js"
import type { StreamEvent } from "../src/client/run-result.js"
import { ConfigError } from "../src/errors.js"
import { pending } from "../src/suspension/pending.js"
import { relayAnswer, relayCallsOf } from "../src/suspension/relay.js"
import { transcriptProblems } from "../src/testing/index.js"
import { defineTool } from "../src/tools/define-tool.js"
import { relayTool } from "../src/tools/relay-tool.js"
import { createToolkit } from "../src/tools/toolkit.js"
import type { ToolContext } from "../src/types.js"
import { STYLES, clientFor, useFakeServer } from "./helpers.js"
import { MemoryExecutor, WorkerCrash } from "./memory-executor.js"

const ctx = useFakeServer()

/** Tools that count their executions and keep each context they saw. */
function countingTools() {
  const seen = { lookup: [] as ToolContext[], pay: [] as ToolContext[] }
  const lookup = defineTool({
    name: "lookup",
    description: "Looks a thing up",
    inputSchema: { type: "object", properties: { q: { type: "string" } } },
    run: ({ q }, toolCtx) => {
      seen.lookup.push(toolCtx)
      return `found ${q}`
    },
  })
  const pay = defineTool({
    name: "pay",
    description: "Pays, with approval",
    inputSchema: { type: "object", properties: { n: { type: "number" } } },
    run: ({ n }, toolCtx) => {
      seen.pay.push(toolCtx)
      return toolCtx.answer?.ok ? `paid ${n}` : pending({ kind: "approval", prompt: `pay ${n}?` })
    },
  })
  return { seen, tools: [lookup, pay] }
}

/** Scripts a run of three turns: lookup a, lookup b, then the final answer. */
function scriptTwoLookups() {
  ctx.server.enqueue(
    { toolCalls: [{ id: "c1", name: "lookup", arguments: { q: "a" } }] },
    { toolCalls: [{ id: "c2", name: "lookup", arguments: { q: "b" } }] },
    { text: "both found" },
  )
}

describe.each(STYLES)("a run under an executor (%s)", (style) => {
  it("journals each turn and call as a named step; a replay from the journal asks and runs nothing and deep-equals", async () => {
    const { server } = ctx
    const { seen, tools } = countingTools()
    scriptTwoLookups()
    const executor = new MemoryExecutor({ id: "run-1" })
    const toolkit = await createToolkit({ extraTools: tools })
    const result = await clientFor(style, server).run("find a and b", { toolkit, executor })
    expect(result.status).toBe("done")
    expect(result.text).toBe("both found")
    expect(executor.executed).toEqual(["llm:1", "tool:1:c1", "llm:2", "tool:2:c2", "llm:3"])
    expect(seen.lookup.map((c) => c.idempotencyKey)).toEqual(["run-1:c1", "run-1:c2"])
    // Small values: a turn or a call, never the transcript.
    for (const json of executor.journal.values()) expect(json).not.toContain("find a and b")

    const events: StreamEvent[] = []
    const metrics: MetricEvent[] = []
    const hookCalls: string[] = []
    const replayClient = clientFor(style, server, {
      onMetric: (ev) => metrics.push(ev),
      hooks: {
        beforeLLM: () => void hookCalls.push("beforeLLM"),
        beforeTool: () => void hookCalls.push("beforeTool"),
      },
    })
    const replayer = executor.worker()
    const replay = await replayClient.run("find a and b", {
      toolkit: await createToolkit({ extraTools: tools }),
      executor: replayer,
      onEvent: (ev) => events.push(ev),
    })
    expect(replay).toEqual(result)
    expect(server.requests).toHaveLength(3)
    expect(seen.lookup).toHaveLength(2)
    expect(replayer.executed).toEqual([])
    expect(hookCalls).toEqual([])
    // Only `done` repeats; the steps' own events happened once, in the first worker.
    expect(events.map((e) => e.type)).toEqual(["done"])
    const stepRecords = metrics.filter((m) => m.event !== "run")
    expect(stepRecords.map((m) => [m.event, m.replayed])).toEqual([
      ["llm", true],
      ["tool", true],
      ["llm", true],
      ["tool", true],
      ["llm", true],
    ])
    expect(replayClient.metrics()).not.toMatch(/toolnexus_llm_requests_total\{/)
  })
})

describe("under an executor", () => {
  it("a crash mid-run re-runs only the step in flight, with the same idempotency key", async () => {
    const { server } = ctx
    const { seen, tools } = countingTools()
    scriptTwoLookups()
    const first = new MemoryExecutor({ id: "run-crash", crashAt: "tool:2:c2" })
    const toolkit = await createToolkit({ extraTools: tools })
    await expect(clientFor("openai", server).run("find", { toolkit, executor: first })).rejects.toThrow(
      WorkerCrash,
    )
    expect(server.requests).toHaveLength(2)

    const second = first.worker()
    const events: StreamEvent[] = []
    const result = await clientFor("openai", server).run("find", {
      toolkit,
      executor: second,
      onEvent: (ev) => events.push(ev),
    })
    expect(result.status).toBe("done")
    expect(second.executed).toEqual(["tool:2:c2", "llm:3"])
    expect(server.requests).toHaveLength(3)
    expect(seen.lookup.map((c) => c.idempotencyKey)).toEqual(["run-crash:c1", "run-crash:c2", "run-crash:c2"])
    // The step in flight repeats its events; the replayed ones do not.
    expect(events.filter((e) => e.type === "tool_result").map((e) => (e as { id: string }).id)).toEqual([
      "c2",
    ])
    expect(transcriptProblems(result.messages)).toEqual([])
  })

  it("a suspension waits through executor.wait and goes on as an answered waitFor; it never halts pending", async () => {
    const { server } = ctx
    const { seen, tools } = countingTools()
    server.enqueue({ toolCalls: [{ id: "p1", name: "pay", arguments: { n: 5 } }] }, (req) => ({
      text: `result: ${req.toolResults.map((r) => r.content).join("|")}`,
    }))
    const executor = new MemoryExecutor({ id: "run-pay", answer: (req) => ({ id: req.id, ok: true }) })
    const events: StreamEvent[] = []
    const result = await clientFor("anthropic", server).run("pay 5", {
      toolkit: await createToolkit({ extraTools: tools }),
      executor,
      onEvent: (ev) => events.push(ev),
    })
    expect(result.status).toBe("done")
    expect(result.pending).toBeUndefined()
    expect(result.text).toBe("result: paid 5")
    const [request] = executor.waited
    expect(request?.kind).toBe("approval")
    expect(request?.data).toMatchObject({ callId: "p1", tool: "pay", args: { n: 5 } })
    expect(executor.executed).toEqual(["llm:1", "tool:1:p1", "tool:1:p1:answer", "llm:2"])
    expect(seen.pay.map((c) => [c.idempotencyKey, c.answer?.ok])).toEqual([
      ["run-pay:p1", undefined],
      ["run-pay:p1", true],
    ])
    expect(events.filter((e) => e.type === "pending")).toHaveLength(1)
    expect(transcriptProblems(result.messages)).toEqual([])
  })

  it("a worker that dies while waiting is replayed to the wait: no turn or tool runs again", async () => {
    const { server } = ctx
    const { seen, tools } = countingTools()
    server.enqueue({ toolCalls: [{ id: "p1", name: "pay", arguments: { n: 9 } }] }, { text: "done" })
    const toolkit = await createToolkit({ extraTools: tools })
    const first = new MemoryExecutor({ id: "run-wait" }) // its wait dies
    await expect(clientFor("openai", server).run("pay 9", { toolkit, executor: first })).rejects.toThrow(
      WorkerCrash,
    )
    expect(first.waited).toHaveLength(1)

    const second = first.worker({ answer: (req) => ({ id: req.id, ok: false, reason: "too much" }) })
    const result = await clientFor("openai", server).run("pay 9", { toolkit, executor: second })
    expect(second.waited[0]?.id).toBe(first.waited[0]?.id)
    expect(second.executed).toEqual(["tool:1:p1:answer", "llm:2"])
    expect(seen.pay).toHaveLength(1)
    expect(server.requests).toHaveLength(2)
    expect(result.toolCalls[0]?.output).toBe("declined: pay 9? (too much)")
  })

  it("the client's own waitFor is a step `answer:<request id>`, asked once across workers", async () => {
    const { server } = ctx
    const { tools } = countingTools()
    server.enqueue({ toolCalls: [{ id: "p1", name: "pay", arguments: { n: 1 } }] }, { text: "ok" })
    let asked = 0
    const waitFor = (req: { id: string }) => {
      asked++
      return { id: req.id, ok: true }
    }
    const toolkit = await createToolkit({ extraTools: tools })
    const executor = new MemoryExecutor({ id: "run-inline" })
    const result = await clientFor("openai", server, { waitFor }).run("pay", { toolkit, executor })
    expect(result.text).toBe("ok")
    const answerStep = executor.executed.find((n) => n.startsWith("answer:"))
    expect(answerStep).toMatch(/^answer:pnd-/)
    expect(executor.waited).toEqual([])
    await clientFor("openai", server, { waitFor }).run("pay", { toolkit, executor: executor.worker() })
    expect(asked).toBe(1)
  })

  it("a turn's calls run one after another, in call order", async () => {
    const { server } = ctx
    const order: string[] = []
    const slow = (name: string) =>
      defineTool({
        name,
        description: name,
        inputSchema: { type: "object", properties: {} },
        run: async () => {
          order.push(`${name} start`)
          await new Promise((resolve) => setImmediate(resolve))
          order.push(`${name} end`)
          return name
        },
      })
    server.enqueue(
      {
        toolCalls: [
          { id: "a", name: "first", arguments: {} },
          { id: "b", name: "second", arguments: {} },
        ],
      },
      { text: "ok" },
    )
    const toolkit = await createToolkit({ extraTools: [slow("first"), slow("second")] })
    await clientFor("openai", server).run("go", {
      toolkit,
      executor: new MemoryExecutor({ id: "run-order" }),
    })
    expect(order).toEqual(["first start", "first end", "second start", "second end"])
  })

  it("a tool result over maxStepBytes or not plain JSON is an error result naming it; the run goes on", async () => {
    const { server } = ctx
    const big = defineTool({
      name: "big",
      description: "big",
      inputSchema: { type: "object", properties: {} },
      run: () => "x".repeat(5000),
    })
    const odd = defineTool({
      name: "odd",
      description: "odd",
      inputSchema: { type: "object", properties: {} },
      run: () => ({ output: "ok", isError: false, metadata: { at: new Date(0) } }),
    })
    server.enqueue(
      {
        toolCalls: [
          { id: "b1", name: "big", arguments: {} },
          { id: "o1", name: "odd", arguments: {} },
        ],
      },
      { text: "went on" },
    )
    const executor = new MemoryExecutor({ id: "run-big", maxStepBytes: 2000 })
    const toolkit = await createToolkit({ extraTools: [big, odd] })
    const result = await clientFor("openai", server).run("go", { toolkit, executor })
    expect(result.text).toBe("went on")
    expect(result.toolCalls[0]).toMatchObject({ isError: true })
    expect(result.toolCalls[0]?.output).toMatch(
      /tool:1:b1 is \d+ bytes, over the executor's maxStepBytes of 2000/,
    )
    expect(result.toolCalls[1]).toMatchObject({ isError: true })
    expect(result.toolCalls[1]?.output).toContain("result.metadata.at is a Date")
  })

  it("an LLM turn over maxStepBytes fails the run with StepTooLargeError", async () => {
    const { server } = ctx
    server.enqueue({ text: "y".repeat(5000) })
    const executor = new MemoryExecutor({ id: "run-huge", maxStepBytes: 2000 })
    const run = clientFor("openai", server).run("go", { executor })
    await expect(run).rejects.toThrow(StepTooLargeError)
    await expect(run).rejects.toMatchObject({ code: "TNX_STEP_TOO_LARGE", step: "llm:1", limit: 2000 })
    expect(executor.journal.size).toBe(0)
  })

  it("relay calls ride one request, decided in a step, answered through the engine", async () => {
    const { server } = ctx
    server.enqueue(
      {
        toolCalls: [
          { id: "r1", name: "search", arguments: { q: "x" } },
          { id: "r2", name: "search", arguments: { q: "y" } },
        ],
      },
      (req) => ({ text: req.toolResults.map((r) => r.content).join("|") }),
    )
    const answer = (req: { id: string }) =>
      relayAnswer(req.id, [
        { id: "r1", output: "X" },
        { id: "r2", output: "Y" },
      ])
    const executor = new MemoryExecutor({ id: "run-relay", answer: (req) => answer(req) })
    const toolkit = await createToolkit({ extraTools: [relayTool("search", "search")] })
    const result = await clientFor("openai", server).run("search", { toolkit, executor })
    expect(result.text).toBe("X|Y")
    expect(relayCallsOf(executor.waited[0] as never).map((c) => c.id)).toEqual(["r1", "r2"])
    expect(executor.executed).toEqual(["llm:1", "relay:1", "relay:1:answer", "llm:2"])
    const replay = await clientFor("openai", server).run("search", { toolkit, executor: executor.worker() })
    expect(replay).toEqual(result)
  })

  it("continueRun continues a transcript under an executor; without messages it is refused", async () => {
    const { server } = ctx
    const { tools } = countingTools()
    const toolkit = await createToolkit({ extraTools: tools })
    server.enqueue({ text: "first" })
    const base = await clientFor("openai", server).run("hello")
    server.enqueue({ toolCalls: [{ id: "c9", name: "lookup", arguments: { q: "z" } }] }, { text: "second" })
    const executor = new MemoryExecutor({ id: "run-cont" })
    const result = await clientFor("openai", server).continueRun({
      messages: base.messages,
      toolkit,
      executor,
    })
    expect(result.text).toBe("second")
    expect(executor.executed).toEqual(["llm:1", "tool:1:c9", "llm:2"])
    await expect(clientFor("openai", server).continueRun({ id: "x", executor })).rejects.toThrow(ConfigError)
  })
})

describe("compaction under an executor", () => {
  it("is a step `compact:<n>`: a replay applies the journaled summary and never calls summarize again", async () => {
    const { server } = ctx
    const { tools } = countingTools()
    const toolkit = await createToolkit({ extraTools: tools })
    const summarized: number[] = []
    const compaction = {
      // Over budget from the third request on: turns 1 and 2 are not compacted, turn 3 is.
      maxTokens: 40,
      keepTail: 10,
      countTokens: (messages: readonly unknown[]) => messages.length * 10,
      summarize: (older: readonly unknown[]) => {
        summarized.push(older.length)
        return `older ${older.length}`
      },
    }
    scriptTwoLookups()
    const first = new MemoryExecutor({ id: "run-compact", crashAt: "llm:3" })
    await expect(
      clientFor("openai", server, { compaction }).run("find", { toolkit, executor: first }),
    ).rejects.toThrow(WorkerCrash)
    expect(first.executed).toEqual([
      "compact:1",
      "llm:1",
      "tool:1:c1",
      "compact:2",
      "llm:2",
      "tool:2:c2",
      "compact:3",
      "llm:3",
    ])
    expect(summarized).toHaveLength(1)
    // The journal keeps the edit (the summary), never the transcript.
    const edit = JSON.parse(first.journal.get("compact:3") as string)
    expect(edit).toMatchObject({ at: 0, insert: [{ role: "system" }] })
    expect(JSON.parse(first.journal.get("compact:1") as string)).toBeNull()

    server.enqueue({ text: "both found" })
    const second = first.worker()
    const result = await clientFor("openai", server, { compaction }).run("find", {
      toolkit,
      executor: second,
    })
    expect(result.text).toBe("both found")
    expect(second.executed).toEqual(["llm:3"])
    expect(summarized).toHaveLength(1)
    // The request the replay sent is the compacted one, as the first worker's was.
    const [crashed, replayed] = server.requests.slice(-2)
    expect(replayed?.body.messages).toEqual(crashed?.body.messages)
    expect(result.messages[0]).toMatchObject({ role: "system", content: expect.stringContaining("older") })

    const again = await clientFor("openai", server, { compaction }).run("find", {
      toolkit,
      executor: second.worker(),
    })
    expect(again).toEqual(result)
    expect(summarized).toHaveLength(1)
  })
})

describe("engine errors", () => {
  it("StepTooLargeError and EngineRunError carry their codes and fields, and are recognised across copies", async () => {
    const { EngineRunError } = await import("../src/client/engine-connection.js")
    const { ToolnexusError } = await import("../src/errors.js")
    const big = new StepTooLargeError("llm:3", 2048, 1024)
    expect(big).toMatchObject({
      name: "StepTooLargeError",
      code: "TNX_STEP_TOO_LARGE",
      step: "llm:3",
      bytes: 2048,
    })
    expect(big.message).toBe("step llm:3 is 2048 bytes, over the executor's maxStepBytes of 1024")
    const failed = new EngineRunError("order-42", "failed: boom")
    expect(failed).toMatchObject({ name: "EngineRunError", code: "TNX_ENGINE_RUN", runId: "order-42" })
    expect(failed.message).toBe('run "order-42" failed: boom')
    expect(ToolnexusError.isInstance(failed)).toBe(true)
    // Another copy of the package: recognised by its code.
    const foreign = { code: "TNX_ENGINE_RUN", [Symbol.for("toolnexus.error")]: true }
    expect(EngineRunError.isInstance(foreign)).toBe(true)
    expect(StepTooLargeError.isInstance(foreign)).toBe(false)
  })
})
