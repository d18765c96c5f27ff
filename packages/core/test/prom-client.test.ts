import { Counter, Registry } from "prom-client"
import { describe, expect, it } from "vitest"
import { createInProcessClient } from "../src/client/in-process-client.js"
import { registerMetrics } from "../src/client/metrics.js"
import { ConfigError } from "../src/errors.js"
import { pending } from "../src/suspension/pending.js"
import { defineTool } from "../src/tools/define-tool.js"
import { createToolkit } from "../src/tools/toolkit.js"

const approve = defineTool({
  name: "approve",
  description: "Needs a human",
  inputSchema: { type: "object", properties: {} },
  run: (_args, ctx) => (ctx.answer?.ok ? "ok" : pending({ kind: "approval", prompt: "Approve?" })),
})

function scripted() {
  let turn = 0
  return createInProcessClient({
    model: "scripted",
    generate: async () =>
      ++turn === 1
        ? {
            toolCalls: [{ id: "a1", name: "approve", arguments: {} }],
            usage: { promptTokens: 3, completionTokens: 2 },
          }
        : { content: "done", usage: { promptTokens: 4, completionTokens: 1 } },
  })
}

/** The sample lines of an exposition, without comments and blank lines. */
const samples = (text: string) =>
  text
    .split("\n")
    .filter((l) => l !== "" && !l.startsWith("#"))
    .sort()

describe("registerMetrics (prom-client)", () => {
  it("serves the same families and samples as client.metrics(), beside the host's own metrics", async () => {
    const client = scripted()
    const registry = new Registry()
    const own = new Counter({ name: "host_requests_total", help: "the host's", registers: [registry] })
    own.inc()
    registerMetrics(registry, client)
    const toolkit = await createToolkit({ extraTools: [approve] })
    await client.run("go", { toolkit })
    const text = await registry.metrics()
    expect(text).toContain("host_requests_total 1")
    expect(samples(text).filter((l) => l.startsWith("toolnexus_"))).toEqual(samples(client.metrics()))
    expect(text).toContain('toolnexus_tool_suspensions_total{tool="approve",source="native"} 1')
    expect(text).toContain('toolnexus_llm_tokens_total{type="prompt"} 3')
    for (const line of client
      .metrics()
      .split("\n")
      .filter((l) => l.startsWith("# TYPE"))) {
      expect(text).toContain(line)
    }
    // Values are read at scrape time.
    await client.run("again", { toolkit })
    expect(await registry.metrics()).toContain('toolnexus_llm_requests_total{model="scripted",status="ok"} 2')
    const json = await registry.getMetricsAsJSON()
    expect(json.find((m) => m.name === "toolnexus_llm_request_duration_seconds")?.type).toBe("histogram")
  })

  it("refuses a second registration of the same client and objects that are not clients", () => {
    const client = scripted()
    const registry = new Registry()
    registerMetrics(registry, client)
    expect(() => registerMetrics(registry, scripted())).toThrow(/already been registered/)
    expect(() => registerMetrics(new Registry(), {})).toThrow(ConfigError)
  })
})
