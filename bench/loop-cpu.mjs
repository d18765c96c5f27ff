// Client CPU per LLM turn of a plain tool loop: `createClient(...).run(prompt, {toolkit})`
// against the floor (a hand-written undici loop sending the same requests).
//
// Each run is two LLM requests: the model calls `echo`, then answers in text. The mock
// endpoint runs in a forked process, so only the client's CPU is measured.
//
//   node --expose-gc loop-cpu.mjs [--runs N] [--rounds R] [--warmup W] [--only sdk|floor] [--verbose]
//     [--style openai|anthropic|openai-responses|all]   (default all: each style in turn)
import { createClient, createToolkit, defineTool } from "@toolnexus/core"
<<<<<<< HEAD
import {
  API_KEY,
  MODEL,
  cliOptions,
  createFloor,
  runBenchmark,
  startMockServer,
  stylesOf,
} from "./harness.mjs"

const options = cliOptions({ runs: 800, rounds: 11, warmup: 1000 })

const PROMPT = "Please echo the word hello, then tell me you are done."
const FINAL = "Echoed hello. Done."
const ECHO = {
  name: "echo",
  description: "Returns the text it is given, unchanged.",
  inputSchema: {
    type: "object",
    properties: { text: { type: "string", description: "The text to echo back." } },
    required: ["text"],
  },
}
const echo = ({ text }) => String(text)

const toolkit = await createToolkit({ extraTools: [defineTool({ ...ECHO, run: echo })] })

for (const style of stylesOf(options)) {
  const server = await startMockServer([
    ...["--tool", "echo", "--arguments", '{"text":"hello"}', "--text", FINAL],
    ...["--style", style],
  ])
  // The SDK, as a user would write it.
  const client = createClient({ baseUrl: server.baseUrl, style, model: MODEL, apiKey: API_KEY })
  // The floor: the same requests in the same style, the same trivial tool.
  const floor = createFloor({
    baseUrl: server.baseUrl,
    style,
    tools: [ECHO],
    execute: (name, args) => {
      if (name !== "echo") throw new Error(`floor: unknown tool ${name}`)
      return echo(args)
=======
import { ECHO, FINAL, PROMPT, createEchoFloor, echo, startEchoServer } from "./echo-loop.mjs"
import { API_KEY, MODEL, cliOptions, runBenchmark } from "./harness.mjs"

const options = cliOptions({ runs: 800, rounds: 11, warmup: 1000 })
const server = await startEchoServer()

// The SDK, as a user would write it.
const toolkit = await createToolkit({ extraTools: [defineTool({ ...ECHO, run: echo })] })
const client = createClient({ baseUrl: server.baseUrl, style: "openai", model: MODEL, apiKey: API_KEY })
const floor = createEchoFloor(server.baseUrl)

try {
  await runBenchmark({
    title: "loop-cpu: client CPU per LLM turn, plain tool loop (echo call, then text; 2 requests per run)",
    unit: { label: "CPU µs/turn", perRun: false },
    turnsPerRun: 2,
    server,
    options,
    variants: {
      async sdk() {
        const result = await client.run(PROMPT, { toolkit })
        if (result.status !== "done" || result.text !== FINAL || result.toolCalls[0]?.output !== "hello") {
          throw new Error(`sdk: unexpected result ${JSON.stringify(result)}`)
        }
      },
      async floor() {
        const result = await floor.run(PROMPT)
        if (result.text !== FINAL || result.outputs[0] !== "hello") {
          throw new Error(`floor: unexpected result ${JSON.stringify(result)}`)
        }
      },
>>>>>>> main
    },
  })
  try {
    await runBenchmark({
      title: `loop-cpu [${style}]: client CPU per LLM turn, plain tool loop (echo call, then text; 2 requests per run)`,
      unit: { label: "CPU µs/turn", perRun: false },
      turnsPerRun: 2,
      server,
      options,
      variants: {
        async sdk() {
          const result = await client.run(PROMPT, { toolkit })
          if (result.status !== "done" || result.text !== FINAL || result.toolCalls[0]?.output !== "hello") {
            throw new Error(`sdk: unexpected result ${JSON.stringify(result)}`)
          }
        },
        async floor() {
          const result = await floor.run(PROMPT)
          if (result.text !== FINAL || result.outputs[0] !== "hello") {
            throw new Error(`floor: unexpected result ${JSON.stringify(result)}`)
          }
        },
      },
    })
  } finally {
    await floor.close()
    server.close()
  }
}
