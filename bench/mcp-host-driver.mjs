// The store host's part of one call of §7's MCP row, without MCP: what `createMcpServer` asks
// of a store host (memory store) for a plain, approval-gated tool answered through one
// `input_required` round — start → result → findRequest → deliverAnswer with `onEvent` — for
// counting under callgrind apart from the SDK's and the sealer's work:
//
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null node --single-threaded \
//     mcp-host-driver.mjs --warmup 100 --calls 250        # and --calls 50: (250 − 50) ÷ 200
//
// `--mark` prints `MARK <i>` after the warm-up and every 100 calls (to read `--trace-opt`
// output by window).
import { parseArgs } from "node:util"
import { defineTool } from "@toolnexus/core"
import { createMemoryStore, createStoreHost } from "@toolnexus/durable"

const ours = await import(new URL("../packages/mcp/dist/server/index.js", import.meta.url).href)
const { values } = parseArgs({
  options: {
    warmup: { type: "string", default: "100" },
    calls: { type: "string", default: "100" },
    mark: { type: "boolean", default: false },
  },
})
const PAY_SCHEMA = { type: "object", properties: { amount: { type: "number" } }, required: ["amount"] }
const pay = defineTool({
  name: "pay",
  description: "Pays, with approval",
  inputSchema: PAY_SCHEMA,
  needsApproval: true,
  run: ({ amount }) => `paid ${amount}`,
})
const store = createMemoryStore()
const host = createStoreHost({
  store,
  agents: await ours.hostedToolAgents([pay], { store }),
  sweepEveryMs: false,
})
let n = 0

/** One call as the MCP server makes it: the run parks, its request is looked up, the answer resumes it. */
async function once(amount) {
  const runId = `run-${n++}`
  await host.start("tool-pay", runId, JSON.stringify({ amount }))
  const result = await host.result(runId)
  const entry = await host.findRequest(result.pending.id)
  let ended
  const onEvent = (ev) => {
    if (ev.type === "done") ended = ev.result
  }
  await host.deliverAnswer({ id: entry.request.id, ok: true }, { onEvent })
  if (ended?.text !== `paid ${amount}`) throw new Error(`unexpected result: ${JSON.stringify(ended?.text)}`)
}

const warmup = Number(values.warmup)
for (let i = 0; i < warmup + Number(values.calls); i++) {
  if (values.mark && (i === warmup || i % 100 === 0)) console.log(`MARK ${i}`)
  await once(i)
}
await host.close()
