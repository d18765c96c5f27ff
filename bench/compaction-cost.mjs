// CPU cost of the §16 compaction step per LLM request, on transcripts of several lengths: the
// check alone (at or below maxTokens, the request is unchanged) and a compaction (over it;
// `summarize` returns at once, so only the SDK's own work is counted).
//
//   node compaction-cost.mjs [--runs N]
import { parseArgs } from "node:util"
import { compactMessages, estimateTokens } from "@toolnexus/core"

const { values } = parseArgs({ options: { runs: { type: "string", default: "2000" } } })
const runs = Number(values.runs)

function transcript(groups) {
  const messages = []
  for (let i = 0; i < groups; i++) {
    messages.push({ role: "user", content: `question ${i} ${"pad ".repeat(40)}` })
    messages.push({
      role: "assistant",
      content: null,
      tool_calls: [{ id: `c${i}`, type: "function", function: { name: "lookup", arguments: "{}" } }],
    })
    messages.push({ role: "tool", tool_call_id: `c${i}`, content: `result ${i} ${"data ".repeat(40)}` })
    messages.push({ role: "assistant", content: `answer ${i}` })
  }
  return messages
}

async function cpuPerCall(fn) {
  for (let i = 0; i < 200; i++) await fn()
  const start = process.cpuUsage()
  for (let i = 0; i < runs; i++) await fn()
  const used = process.cpuUsage(start)
  return (used.user + used.system) / runs
}

const summarize = (older) => `summarized ${older.length} messages`
console.log(`compaction-cost: CPU µs per request, node ${process.version}, ${runs} calls each`)
console.log("messages  tokens  check (under budget)  compaction (over budget, keepTail = maxTokens/2)")
for (const groups of [10, 50, 250]) {
  const messages = transcript(groups)
  const tokens = estimateTokens(messages)
  const under = await cpuPerCall(() => compactMessages(messages, { maxTokens: tokens, summarize }))
  const over = await cpuPerCall(() =>
    compactMessages(messages, { maxTokens: Math.floor(tokens / 2), summarize }),
  )
  console.log(
    `${String(messages.length).padStart(8)}  ${String(tokens).padStart(6)}  ${under.toFixed(1).padStart(20)}  ${over.toFixed(1).padStart(12)}`,
  )
}
