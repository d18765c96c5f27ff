// A/B of two builds of @toolnexus/core on the plain echo loop (no tracer): this workspace's
// build against another one, e.g. a checkout of main, in one process with alternating rounds,
// so the paired ratio shows what a change costs when its feature is off.
//
//   node --expose-gc core-ab.mjs --against /path/to/other/packages/core/dist/index.js [--runs N] [--rounds R]
//     [--style openai|anthropic|openai-responses|all]   (default all: each style in turn)
import { pathToFileURL } from "node:url"
import * as current from "@toolnexus/core"
import { ECHO, FINAL, PROMPT, echo, startEchoServer } from "./echo-loop.mjs"
import { API_KEY, MODEL, cliOptions, runBenchmark, stylesOf } from "./harness.mjs"

const options = cliOptions(
  { runs: 600, rounds: 15, warmup: 800 },
  { variants: ["current", "other"], extra: { against: { type: "string" } } },
)
if (!options.values.against)
  throw new Error("--against <path to the other build's dist/index.js> is required")
const other = await import(pathToFileURL(options.values.against).href)
for (const style of stylesOf(options)) {
  const server = await startEchoServer(style)
  try {
    await runBenchmark({
      title: `core-ab [${style}]: CPU per LLM turn, this build vs ${options.values.against}`,
      unit: { label: "CPU µs/turn", perRun: false },
      turnsPerRun: 2,
      server,
      options,
      variants: {
        current: await variant(current, server.baseUrl, style),
        other: await variant(other, server.baseUrl, style),
      },
    })
  } finally {
    server.close()
  }
}

async function variant(core, baseUrl, style) {
  const toolkit = await core.createToolkit({ extraTools: [core.defineTool({ ...ECHO, run: echo })] })
  const client = core.createClient({ baseUrl, style, model: MODEL, apiKey: API_KEY })
  return async () => {
    const result = await client.run(PROMPT, { toolkit })
    if (result.text !== FINAL) throw new Error(`unexpected ${JSON.stringify(result)}`)
  }
}
