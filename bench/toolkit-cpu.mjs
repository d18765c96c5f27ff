// Client CPU per LLM turn of the plain tool loop with the §16 toolkit loaded: the ten builtins
// and five skills (their `skill` tool, and the catalog in the system prompt) beside `echo`,
// against the same loop with `echo` alone and the floor sending the same tool list.
//
// Each run is two LLM requests: the model calls `echo`, then answers in text.
//
//   node --expose-gc toolkit-cpu.mjs [--runs N] [--rounds R] [--warmup W] [--only sdk|plain|floor]
//     [--style openai|anthropic|openai-responses|all]
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import path from "node:path"
import { createClient, createToolkit, defineTool } from "@toolnexus/core"
import { ECHO, FINAL, PROMPT, echo, startEchoServer } from "./echo-loop.mjs"
import { API_KEY, MODEL, cliOptions, createFloor, loopVariants, runBenchmark, stylesOf } from "./harness.mjs"

const options = cliOptions({ runs: 800, rounds: 11, warmup: 1000 }, { variants: ["sdk", "plain", "floor"] })
const echoTool = defineTool({ ...ECHO, run: echo })
const skills = ["deploy", "lint", "format", "review", "triage"].map((name) => ({
  name,
  description: `Use when the task is to ${name} something.`,
  content: `Steps for ${name}.`,
  resources: [`${name}/steps.md`],
}))
const full = await createToolkit({
  builtins: { root: mkdtempSync(path.join(tmpdir(), "tnx-bench-root-")) },
  skills,
  extraTools: [echoTool],
})
const plain = await createToolkit({ extraTools: [echoTool] })

for (const style of stylesOf(options)) {
  const server = await startEchoServer(style)
  const client = createClient({ baseUrl: server.baseUrl, style, model: MODEL, apiKey: API_KEY })
  // The floor declares the same tools (it sends no system prompt: the catalog's bytes are not in it).
  const floor = createFloor({
    baseUrl: server.baseUrl,
    style,
    tools: full
      .tools()
      .map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema })),
    execute: (name, args) => {
      if (name !== "echo") throw new Error(`floor: unknown tool ${name}`)
      return echo(args)
    },
  })
  const withFull = loopVariants({
    client,
    toolkit: full,
    floor,
    prompt: PROMPT,
    final: FINAL,
    output: "hello",
  })
  const withPlain = loopVariants({
    client,
    toolkit: plain,
    floor,
    prompt: PROMPT,
    final: FINAL,
    output: "hello",
  })
  try {
    await runBenchmark({
      title: `toolkit-cpu [${style}]: client CPU per LLM turn with builtins + 5 skills loaded (echo call, then text)`,
      unit: { label: "CPU µs/turn", perRun: false },
      turnsPerRun: 2,
      server,
      options,
      variants: { sdk: withFull.sdk, plain: withPlain.sdk, floor: withFull.floor },
    })
  } finally {
    await floor.close()
    server.close()
  }
}
