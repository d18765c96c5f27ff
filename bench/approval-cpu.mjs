// Client CPU per approval run: a tool suspends with `pending(...)`, the client's `waitFor`
// answers `{id, ok: true}` in-process, the tool is retried with the answer and returns,
// and the model finishes. Compared with the floor doing the same requests by hand.
//
// Each run is two LLM requests: the model calls `pay`, then answers in text. The mock
// endpoint runs in a forked process, so only the client's CPU is measured.
//
//   node --expose-gc approval-cpu.mjs [--runs N] [--rounds R] [--warmup W] [--only sdk|floor] [--verbose]
//     [--style openai|anthropic|openai-responses|all]   (default all: each style in turn)
import { randomUUID } from "node:crypto"
import { createClient, createToolkit, defineTool, pending } from "@toolnexus/core"
import {
  API_KEY,
  MODEL,
  cliOptions,
  createFloor,
  loopVariants,
  runBenchmark,
  startMockServer,
  stylesOf,
} from "./harness.mjs"

const options = cliOptions({ runs: 600, rounds: 11, warmup: 1000 })

const PROMPT = "Pay invoice 42 (amount 42), then confirm."
const FINAL = "Invoice 42 is paid."
const PAY = {
  name: "pay",
  description: "Pays an invoice. Needs a human's approval first.",
  inputSchema: {
    type: "object",
    properties: { amount: { type: "number", description: "Amount to pay." } },
    required: ["amount"],
  },
}
const approve = (request) => ({ id: request.id, ok: true })

const toolkit = await createToolkit({
  extraTools: [
    defineTool({
      ...PAY,
      run: (args, ctx) =>
        ctx.answer?.ok ? `paid ${args.amount}` : pending({ kind: "approval", prompt: `Pay ${args.amount}?` }),
    }),
  ],
})

function floorPay(args, answer) {
  if (answer?.ok) return { output: `paid ${args.amount}` }
  return { request: { id: `pnd-${randomUUID()}`, kind: "approval", prompt: `Pay ${args.amount}?` } }
}

for (const style of stylesOf(options)) {
  const server = await startMockServer([
    ...["--tool", "pay", "--arguments", '{"amount":42}', "--text", FINAL],
    ...["--style", style],
  ])
  const client = createClient({
    baseUrl: server.baseUrl,
    style,
    model: MODEL,
    apiKey: API_KEY,
    waitFor: approve,
  })
  const floor = createFloor({
    baseUrl: server.baseUrl,
    style,
    tools: [PAY],
    async execute(name, args) {
      if (name !== "pay") throw new Error(`floor: unknown tool ${name}`)
      const first = floorPay(args)
      if (!first.request) return first.output
      const answer = await approve(first.request)
      if (!answer.ok || answer.id !== first.request.id) return `declined: ${first.request.prompt}`
      const retried = floorPay(args, answer)
      return retried.request ? `unresolved: ${retried.request.prompt}` : retried.output
    },
  })
  try {
    await runBenchmark({
      title: `approval-cpu [${style}]: client CPU per approval run (pay suspends, waitFor approves, retry, text; 2 requests per run)`,
      unit: { label: "CPU µs/run", perRun: true },
      turnsPerRun: 2,
      server,
      options,
      variants: loopVariants({ client, toolkit, floor, prompt: PROMPT, final: FINAL, output: "paid 42" }),
    })
  } finally {
    await floor.close()
    server.close()
  }
}
