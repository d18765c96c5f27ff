// Client CPU per LLM turn of a plain tool loop: `createClient(...).run(prompt, {toolkit})`
// against the floor (a hand-written undici loop sending the same requests).
//
// Each run is two LLM requests: the model calls `echo`, then answers in text. The mock
// endpoint runs in a forked process, so only the client's CPU is measured.
//
//   node --expose-gc loop-cpu.mjs [--runs N] [--rounds R] [--warmup W] [--only sdk|floor] [--verbose]
//     [--style openai|anthropic|openai-responses|all]   (default all: each style in turn)
import { createClient, createToolkit, defineTool } from "@toolnexus/core"
import { ECHO, FINAL, PROMPT, createEchoFloor, echo, startEchoServer } from "./echo-loop.mjs"
import { API_KEY, MODEL, cliOptions, loopVariants, runBenchmark, stylesOf } from "./harness.mjs"

const options = cliOptions({ runs: 800, rounds: 11, warmup: 1000 })
const toolkit = await createToolkit({ extraTools: [defineTool({ ...ECHO, run: echo })] })

for (const style of stylesOf(options)) {
  const server = await startEchoServer(style)
  // The SDK, as a user would write it.
  const client = createClient({ baseUrl: server.baseUrl, style, model: MODEL, apiKey: API_KEY })
  const floor = createEchoFloor(server.baseUrl, style)
  try {
    await runBenchmark({
      title: `loop-cpu [${style}]: client CPU per LLM turn, plain tool loop (echo call, then text; 2 requests per run)`,
      unit: { label: "CPU µs/turn", perRun: false },
      turnsPerRun: 2,
      server,
      options,
      variants: loopVariants({ client, toolkit, floor, prompt: PROMPT, final: FINAL, output: "hello" }),
    })
  } finally {
    await floor.close()
    server.close()
  }
}
