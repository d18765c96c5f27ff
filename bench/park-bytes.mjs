// Bytes persisted per parked run in SQLite: the logical size (B-tree cell payloads, from the
// `dbstat` table, of every table and index) that parking one conversation adds, for the SDK's
// SqliteStore and for a hand-written floor.
//
// Both sides park the same conversations against the forked mock: conversation i asks to pay
// invoice i, the model calls `pay`, the tool suspends. The SDK parks with
// `client.ask(prompt, {toolkit, id})` on a `SqliteStore`; the floor runs the hand-written loop
// of pay-scenario.mjs and writes what it parked (the transcript and the open request) with
// hand-written SQL into its own file: one row per message keyed by (conversation, seq), one
// conversation row with the request JSON and its id, and an index on that id (what finding a
// conversation by request id needs). Payload counts keys, values and record headers, not free
// space, so it is the same however full the pages are.
//
//   node park-bytes.mjs [--runs N]
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createClient, createToolkit, defineTool, pending } from "@toolnexus/core"
import { SqliteStore } from "@toolnexus/durable/sqlite"
import Database from "better-sqlite3"
import { API_KEY, MODEL, cliOptions, machineLine, printRows, startMockServer } from "./harness.mjs"
import { closeFloorAgent, createParkingFloor, MOCK_ARGS, payTool, promptOf } from "./pay-scenario.mjs"

const options = cliOptions({ runs: 200, rounds: 1, warmup: 1 }, { variants: ["sdk", "floor"] })
console.log("park-bytes: bytes persisted per parked run (SQLite, logical: B-tree cell payloads)")
console.log(`${machineLine()}, ${options.runs} conversations parked per side`)

const server = await startMockServer(MOCK_ARGS)
const dir = await mkdtemp(join(tmpdir(), "toolnexus-park-bytes-"))

/** Payload bytes per table or index, without the schema and the store's version row. */
function payloads(db) {
  const rows = db
    .prepare(
      "SELECT name, sum(payload) AS bytes FROM dbstat WHERE name NOT IN ('sqlite_schema', 'tnx_meta', 'sqlite_autoindex_tnx_meta_1') GROUP BY name",
    )
    .all()
  return Object.fromEntries(rows.map((r) => [r.name, r.bytes]))
}

/** Parks `runs` conversations on the SDK; payload bytes per table after minus before. */
async function sdk() {
  const db = new Database(join(dir, "sdk.db"))
  db.pragma("journal_mode = WAL")
  const store = new SqliteStore({ db })
  const toolkit = await createToolkit({ extraTools: [payTool({ defineTool, pending })] })
  const client = createClient({
    baseUrl: server.baseUrl,
    style: "openai",
    model: MODEL,
    apiKey: API_KEY,
    store,
  })
  await store.get("warm-up") // creates the schema
  const before = payloads(db)
  for (let i = 0; i < options.runs; i++) {
    const result = await client.ask(promptOf(i), { toolkit, id: `conv-${i}` })
    if (result.status !== "pending") throw new Error(`sdk: conv-${i} ended ${result.status}`)
  }
  const after = payloads(db)
  await store.close()
  db.close()
  return diff(before, after)
}

/** Parks `runs` conversations with the hand-written loop and saves them with hand-written SQL. */
async function floor() {
  const db = new Database(join(dir, "floor.db"))
  db.pragma("journal_mode = WAL")
  db.exec(`CREATE TABLE conversations (id TEXT PRIMARY KEY, pending TEXT, pending_id TEXT);
    CREATE INDEX conversations_pending_id ON conversations (pending_id) WHERE pending_id IS NOT NULL;
    CREATE TABLE messages (conversation_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL,
      PRIMARY KEY (conversation_id, seq));`)
  const insertMessage = db.prepare("INSERT INTO messages (conversation_id, seq, body) VALUES (?, ?, ?)")
  const insertConversation = db.prepare(
    "INSERT INTO conversations (id, pending, pending_id) VALUES (?, ?, ?)",
  )
  const save = db.transaction((id, { messages, pending }) => {
    for (let i = 0; i < messages.length; i++) insertMessage.run(id, i, JSON.stringify(messages[i]))
    insertConversation.run(id, JSON.stringify(pending), pending.id)
  })
  const hand = createParkingFloor({ baseUrl: server.baseUrl })
  const before = payloads(db)
  for (let i = 0; i < options.runs; i++) {
    const id = `conv-${i}`
    await hand.park(id, promptOf(i))
    save.immediate(id, hand.parked.get(id))
  }
  const after = payloads(db)
  db.close()
  return diff(before, after)
}

function diff(before, after) {
  const out = {}
  for (const [name, bytes] of Object.entries(after)) {
    const added = (bytes - (before[name] ?? 0)) / options.runs
    if (added !== 0) out[name] = added
  }
  return out
}

try {
  const results = { sdk: await sdk(), floor: await floor() }
  const total = (r) => Object.values(r).reduce((a, b) => a + b, 0)
  const rows = []
  for (const side of ["sdk", "floor"]) {
    for (const [name, bytes] of Object.entries(results[side])) rows.push([side, name, bytes.toFixed(1)])
    rows.push([side, "total", total(results[side]).toFixed(1)])
  }
  printRows(["side", "table or index", "B per parked run"], rows)
  const ratio = total(results.sdk) / total(results.floor)
  console.log(`\nsdk/floor: ${ratio.toFixed(2)}x (§7 target ≤ 1.5x: ${ratio <= 1.5 ? "met" : "NOT met"})`)
} finally {
  server.close()
  await closeFloorAgent()
  await rm(dir, { recursive: true, force: true })
}
