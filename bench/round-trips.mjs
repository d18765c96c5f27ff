// Store round trips per resumed two-level tree (DESIGN §7 "store calls per resumed two-level
// tree", §17 "a resume writes once").
//
// The tree: under the runtime's root, `lead` delegates to `payer` through `task`; `payer`
// calls `pay`, which suspends, so both handles park on one approval. The tree is saved with
// `saveRuntime`; then the answer is delivered with `deliverAnswer(store, answer, { runtime })`
// — what a store host does when an answer arrives — and only that delivery is counted:
//
// - store calls: each `DurableStore` method called during it (the store handed to
//   `deliverAnswer` and the runtime is wrapped in a counting proxy), split into reads and
//   writes (`save`, `putSnapshot`, `commitResume`, claims);
// - driver round trips, by wrapping the driver the store was given:
//   SQLite: statements run (better-sqlite3 `Statement#run/get/all/iterate`) and write
//   transactions (`db.transaction(...)` bodies run); PostgreSQL: `query` calls on the pool and
//   on checked-out clients (BEGIN and COMMIT included); Redis: commands sent (EVALSHA counted
//   as one).
//
// The first delivery after start-up runs migrations and prepares statements: a warm-up tree
// is parked and resumed before the counted ones, and the figure is the median of --trees.
//
//   node round-trips.mjs [--trees 5] [--only sqlite,postgres,redis]
//   TOOLNEXUS_TEST_PG_URL=postgres://… TOOLNEXUS_TEST_REDIS_URL=redis://… (backends without a URL are skipped)
import { randomUUID } from "node:crypto"
import { parseArgs } from "node:util"
import { createRuntime } from "@toolnexus/agents"
import { defineTool, pending } from "@toolnexus/core"
import { deliverAnswer, saveRuntime } from "@toolnexus/durable"
import { countedBackends, countingStore } from "./counted-backends.mjs"
import { API_KEY, MODEL, machineLine, median, printRows, startMockServer } from "./harness.mjs"
import { MOCK_ARGS, payTool } from "./pay-scenario.mjs"

const { values } = parseArgs({
  options: { trees: { type: "string", default: "5" }, only: { type: "string" } },
})
const trees = Number(values.trees)
const only = values.only?.split(",")
const wanted = (name) => only === undefined || only.includes(name)

const LEAD = "You lead: delegate payments to payer."
const PAYER = "You pay invoices."
const server = await startMockServer([
  ...MOCK_ARGS,
  "--by-system",
  JSON.stringify({
    [LEAD]: {
      tool: "task",
      arguments: JSON.stringify({ agent: "payer", prompt: "Pay invoice 7 (amount 42)." }),
    },
    [PAYER]: { tool: "pay", arguments: '{"amount":42}' },
  }),
])
const llm = { baseUrl: server.baseUrl, style: "openai", apiKey: API_KEY, model: MODEL }
const registry = {
  lead: { name: "lead", does: "leads", soul: LEAD, team: ["payer"] },
  payer: { name: "payer", does: "pays", soul: PAYER, tools: [payTool({ defineTool, pending })] },
}

/** The counters one delivery moves. */
function newCounts() {
  return { reads: 0, writes: 0, calls: {}, roundTrips: 0, transactions: 0 }
}
let counts = newCounts()
let counting = false

const WRITES = new Set([
  "save",
  "putSnapshot",
  "createSnapshot",
  "commitResume",
  "claimAnswer",
  "releaseClaim",
  "renewClaim",
  "deleteConversation",
  "deleteSnapshot",
  "reopenFailed",
])

/** Parks one two-level tree and saves it under a new key; the answer that resumes it. */
async function parkTree(store) {
  const rt = createRuntime({ registry, store, llm })
  const lead = rt.spawn(rt.root, "lead")
  rt.wake(lead, "Pay invoice 7, then confirm.")
  const parked = await rt.wait(lead)
  const path = parked.pending?.data?.path
  if (parked.status !== "pending" || !Array.isArray(path) || path.length !== 3)
    throw new Error(`the tree did not park at its leaf: ${JSON.stringify(parked.status)}`)
  const key = `tree-${randomUUID()}`
  await saveRuntime(store, key, rt)
  return { id: parked.pending.id, ok: true }
}

async function measure(name, backend) {
  const store = countingStore(backend.store, (name) => {
    if (!counting) return
    counts.calls[name] = (counts.calls[name] ?? 0) + 1
    if (WRITES.has(name)) counts.writes++
    else counts.reads++
  })
  const rows = []
  for (let i = 0; i <= trees; i++) {
    const answer = await parkTree(backend.store)
    counts = newCounts()
    counting = true
    let delivered
    try {
      delivered = await deliverAnswer(store, answer, { runtime: { registry, llm } })
    } finally {
      counting = false
    }
    if (delivered.kind !== "runtime" || delivered.result.status !== "done")
      throw new Error(`${name}: the tree did not finish: ${JSON.stringify(delivered.result?.status)}`)
    if (i > 0) rows.push(counts) // the first one warmed the schema and statements up
  }
  const pick = (f) => median(rows.map(f))
  const calls = rows[rows.length - 1].calls
  return {
    name,
    writes: pick((c) => c.writes),
    reads: pick((c) => c.reads),
    roundTrips: pick((c) => c.roundTrips),
    transactions: pick((c) => c.transactions),
    calls,
  }
}

const results = []
const backends = countedBackends(
  {
    roundTrip() {
      if (counting) counts.roundTrips++
    },
    transaction() {
      if (counting) counts.transactions++
    },
    command(name) {
      if (counting) counts.calls[`redis ${name}`] = (counts.calls[`redis ${name}`] ?? 0) + 1
    },
  },
  "tnx-round-trips",
)
try {
  for (const [name, open] of backends) {
    if (!wanted(name)) continue
    if (!open) {
      console.log(`${name}: skipped (no URL in the environment)`)
      continue
    }
    const backend = await open()
    try {
      results.push(await measure(name, backend))
    } finally {
      await backend.store.close()
      await backend.close()
    }
  }
} finally {
  server.close()
}

console.log(machineLine())
console.log(`one answer delivered to a parked two-level tree (lead → payer → pay), median of ${trees}`)
printRows(
  ["backend", "store write calls", "store read calls", "driver round trips", "write transactions"],
  results.map((r) => [r.name, r.writes, r.reads, r.roundTrips, r.name === "redis" ? "–" : r.transactions]),
)
for (const r of results)
  console.log(
    `${r.name} calls: ${Object.entries(r.calls)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ")}`,
  )
