// Client CPU per LLM turn of the plain tool loop (as loop-cpu.mjs) with OpenTelemetry:
// no tracer (the default: nothing registered, nothing imported), a no-op tracer (the API's
// non-recording tracer, passed explicitly), and a recording tracer exporting to memory
// (BasicTracerProvider + SimpleSpanProcessor + InMemorySpanExporter), beside the floor.
//
// No global provider is registered, so the "sdk" variant runs exactly as without OpenTelemetry.
//
//   node --expose-gc tracing-cpu.mjs [--runs N] [--rounds R] [--warmup W] [--only sdk|noop|memory|floor] [--verbose]
//     [--style openai|anthropic|openai-responses|all]   (default all: each style in turn)
import { trace } from "@opentelemetry/api"
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { createClient, createToolkit, defineTool } from "@toolnexus/core"
import { ECHO, FINAL, PROMPT, createEchoFloor, echo, startEchoServer } from "./echo-loop.mjs"
import { API_KEY, MODEL, cliOptions, printRows, runBenchmark, stylesOf } from "./harness.mjs"

const VARIANTS = ["sdk", "noop", "memory", "floor"]
const options = cliOptions({ runs: 600, rounds: 7, warmup: 800 }, { variants: VARIANTS })

const toolkit = await createToolkit({ extraTools: [defineTool({ ...ECHO, run: echo })] })

for (const style of stylesOf(options)) await measure(style)

async function measure(style) {
  const server = await startEchoServer(style)
  const base = { baseUrl: server.baseUrl, style, model: MODEL, apiKey: API_KEY }

  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  const clients = {
    sdk: createClient(base),
    noop: createClient({ ...base, telemetry: { tracer: trace.getTracer("bench") } }),
    memory: createClient({ ...base, telemetry: { tracer: provider.getTracer("bench") } }),
  }
  const floor = createEchoFloor(server.baseUrl, style)

  let finished = 0
  const sdkRun = (name) => async () => {
    const result = await clients[name].run(PROMPT, { toolkit })
    if (result.status !== "done" || result.text !== FINAL)
      throw new Error(`${name}: unexpected ${JSON.stringify(result)}`)
    // Keep the exporter's memory flat: 4 spans per run (invoke_agent, 2 × chat, execute_tool).
    if (name === "memory" && ++finished % 256 === 0) exporter.reset()
  }

  try {
    const rows = await runBenchmark({
      title: `tracing-cpu [${style}]: client CPU per LLM turn with OpenTelemetry off, no-op and recording (2 requests per run)`,
      unit: { label: "CPU µs/turn", perRun: false },
      turnsPerRun: 2,
      server,
      options,
      variants: {
        sdk: sdkRun("sdk"),
        noop: sdkRun("noop"),
        memory: sdkRun("memory"),
        async floor() {
          const result = await floor.run(PROMPT)
          if (result.text !== FINAL) throw new Error(`floor: unexpected ${JSON.stringify(result)}`)
        },
      },
    })
    if (options.only === undefined) {
      console.log("\nvs floor (ratio of the medians):")
      printRows(
        ["concurrency", "no tracer", "no-op tracer", "in-memory exporter"],
        rows.map((r) => [
          `c=${r.c}`,
          ...["sdk", "noop", "memory"].map((n) => `${(r[n].cpu / r.floor.cpu).toFixed(2)}x`),
        ]),
      )
    }
  } finally {
    await floor.close()
    server.close()
  }
}
