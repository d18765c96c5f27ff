// §7's MCP server row: CPU per tool call answered through one `input_required` round
// (call ⇒ input_required with a sealed requestState ⇒ retry with the approval ⇒ result), our
// `createMcpServer` over a store host on the memory store against the official v2 server
// (`@modelcontextprotocol/server`, the same version `@toolnexus/mcp` runs on) whose handler keeps
// nothing: it asks, and on the retry reads its own HMAC-signed state back (the SDK's
// `createRequestStateCodec`). Both are driven in this process through their `fetch` handlers with
// the same raw 2026-07-28 requests, so no HTTP or client code is billed to either. Alternating
// batches, fresh server each batch; median of the per-batch ratios.
//
//   node --expose-gc mcp-server.mjs [--calls 400] [--batches 7] [--only official|toolnexus]
import { official, round, toolnexus } from "./mcp-variants.mjs"

const arg = (name, fallback) => {
  const at = process.argv.indexOf(`--${name}`)
  return at === -1 ? fallback : Number(process.argv[at + 1])
}
const CALLS = arg("calls", 400)
const BATCHES = arg("batches", 7)
const ONLY = process.argv.includes("--only") ? process.argv[process.argv.indexOf("--only") + 1] : undefined

/** CPU µs per round over `CALLS` rounds on a fresh server (after a warm-up of a tenth). */
async function batch(make) {
  const server = await make()
  try {
    for (let i = 0; i < Math.max(20, CALLS / 10); i++) await round(server.fetch, i)
    globalThis.gc?.()
    const start = process.cpuUsage()
    for (let i = 0; i < CALLS; i++) await round(server.fetch, i)
    const used = process.cpuUsage(start)
    return (used.user + used.system) / CALLS
  } finally {
    await server.close()
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]
}
const rows = { official: [], toolnexus: [], ratio: [] }
for (let b = 0; b < BATCHES; b++) {
  // Alternate which goes first, so a drift in machine load hits both alike.
  let pair = b % 2 === 0 ? [official, toolnexus] : [toolnexus, official]
  // --only official|toolnexus: one side alone (for a CPU profile of it).
  if (ONLY !== undefined) pair = pair.filter((make) => make.name === ONLY)
  const got = {}
  for (const make of pair) got[make.name] = await batch(make)
  rows.official.push(got.official)
  rows.toolnexus.push(got.toolnexus)
  if (ONLY === undefined) rows.ratio.push(got.toolnexus / got.official)
}
const fmt = (x) => x.toFixed(0)
console.log(
  `MCP server, one input_required round per call (${CALLS} calls × ${BATCHES} batches, Node ${process.version})`,
)
if (ONLY !== "toolnexus")
  console.log(`official v2 server, in-memory handler: ${fmt(median(rows.official))} µs CPU per call`)
if (ONLY !== "official")
  console.log(`createMcpServer over createStoreHost(memory): ${fmt(median(rows.toolnexus))} µs CPU per call`)
if (ONLY === undefined)
  console.log(
    `ratio (median of per-batch ratios): ${median(rows.ratio).toFixed(2)}× (batches: ${rows.ratio.map((r) => r.toFixed(2)).join(", ")})`,
  )
