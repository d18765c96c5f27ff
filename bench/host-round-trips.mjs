// Store calls and driver round trips per turn of a store host (DESIGN §17 "a resume writes once",
// §7's chat and MCP rows): what `createStoreHost` costs its store beside the model.
//
// Two scenarios, each on a conversation run of a scripted in-process model (no HTTP):
// - `turn`: `host.send` of a text turn to a run that has had turns (what the chat handler does
//   for every later turn): the record read, the transcript loaded, the turn saved with its record;
// - `approval`: `host.start` of a run that parks on an approval, `host.result`, then
//   `host.deliverAnswer` resuming it to its end (what the MCP server does for one call through
//   one `input_required` round, less the MCP layer).
//
// Store calls are each `DurableStore` method called (a counting proxy around the host's store);
// driver round trips as `round-trips.mjs` counts them: SQLite statements run and write
// transactions, PostgreSQL queries on the pool's clients (BEGIN and COMMIT included), Redis
// commands sent (EVALSHA one). The first turns warm the schema and statements up; the figure is
// the median of --turns.
//
//   node host-round-trips.mjs [--turns 5] [--only sqlite,postgres,redis]
//   TOOLNEXUS_TEST_PG_URL=postgres://… TOOLNEXUS_TEST_REDIS_URL=redis://… (backends without a URL are skipped)
import { randomUUID } from "node:crypto"
import { parseArgs } from "node:util"
import { createInProcessClient, createToolkit, defineTool, hostAgent, pending } from "@toolnexus/core"
import { createStoreHost } from "@toolnexus/durable"
import { countedBackends, countingStore } from "./counted-backends.mjs"
import { machineLine, median, printRows } from "./harness.mjs"

const { values } = parseArgs({
  options: { turns: { type: "string", default: "5" }, only: { type: "string" } },
})
const TURNS = Number(values.turns)
const only = values.only?.split(",")
const wanted = (name) => only === undefined || only.includes(name)

let counting = false
let counts = newCounts()
function newCounts() {
  return { calls: {}, storeCalls: 0, roundTrips: 0, transactions: 0 }
}

const approve = defineTool({
  name: "approve",
  description: "Asks first",
  inputSchema: { type: "object", properties: {} },
  run: (_args, ctx) => (ctx.answer ? "approved" : pending({ kind: "approval", prompt: "Go?" })),
})
const toolkit = await createToolkit({ extraTools: [approve] })
const usage = { promptTokens: 1, completionTokens: 1 }

/** The scripted model: "please approve" asks for the tool, a tool result ends, anything else is text. */
async function generate({ messages }) {
  const last = messages.at(-1)
  if (last.role === "tool") return { content: "done", usage }
  const text = typeof last.content === "string" ? last.content : ""
  if (text.startsWith("please approve"))
    return { toolCalls: [{ id: `c-${randomUUID().slice(0, 8)}`, name: "approve", arguments: {} }], usage }
  return { content: "hello", usage }
}

/** Runs `fn` counted; the counts it moved. */
async function counted(fn) {
  counts = newCounts()
  counting = true
  try {
    await fn()
  } finally {
    counting = false
  }
  return counts
}

async function measure(name, backend) {
  const store = countingStore(backend.store, (name) => {
    if (!counting) return
    counts.calls[name] = (counts.calls[name] ?? 0) + 1
    counts.storeCalls++
  })
  const client = createInProcessClient({ model: "scripted", generate, store })
  const host = createStoreHost({
    store,
    agents: [hostAgent({ name: "a", client, toolkit })],
    sweepEveryMs: false,
  })
  const turns = []
  const approvals = []
  try {
    const runId = `chat-${randomUUID()}`
    await host.start("a", runId, "hi")
    await host.result(runId)
    for (let i = 0; i <= TURNS; i++) {
      const c = await counted(() => host.send(runId, `turn ${i}`))
      if (i > 0) turns.push(c)
    }
    for (let i = 0; i <= TURNS; i++) {
      const id = `call-${randomUUID()}`
      const c = await counted(async () => {
        await host.start("a", id, "please approve")
        const parked = await host.result(id)
        if (parked.status !== "pending") throw new Error(`${name}: the run did not park`)
        await host.deliverAnswer({ id: parked.pending.id, ok: true })
      })
      const done = await host.result(id)
      if (done.text !== "done") throw new Error(`${name}: the resumed run ended ${JSON.stringify(done.text)}`)
      if (i > 0) approvals.push(c)
    }
  } finally {
    await host.close()
  }
  const row = (scenario, rows) => ({
    name,
    scenario,
    storeCalls: median(rows.map((c) => c.storeCalls)),
    roundTrips: median(rows.map((c) => c.roundTrips)),
    transactions: median(rows.map((c) => c.transactions)),
    calls: rows.at(-1).calls,
  })
  return [row("turn", turns), row("approval", approvals)]
}

const backends = countedBackends(
  {
    roundTrip() {
      if (counting) counts.roundTrips++
    },
    transaction() {
      if (counting) counts.transactions++
    },
    command() {},
  },
  "tnx-host-trips",
)
const results = []
for (const [name, open] of backends) {
  if (!wanted(name)) continue
  if (!open) {
    console.log(`${name}: skipped (no URL in the environment)`)
    continue
  }
  const backend = await open()
  try {
    results.push(...(await measure(name, backend)))
  } finally {
    await backend.store.close()
    await backend.close()
  }
}

console.log(machineLine())
console.log(
  `a store host's chat turn (send) and approval round (start, park, deliverAnswer), median of ${TURNS}`,
)
printRows(
  ["backend", "scenario", "store calls", "driver round trips", "write transactions"],
  results.map((r) => [
    r.name,
    r.scenario,
    r.storeCalls,
    r.roundTrips,
    r.name === "redis" ? "–" : r.transactions,
  ]),
)
for (const r of results)
  console.log(
    `${r.name} ${r.scenario}: ${Object.entries(r.calls)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ")}`,
  )
