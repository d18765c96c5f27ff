// Store writes per durable turn, on each backend: the shared bench's S5 turn (one `ask` on one
// conversation id with one tool call: LLM → tool → LLM), so a turn is the tool results'
// checkpoint plus the final save (§9). Per turn: the saves (write transactions) and the bytes
// they cost, turns 1–10 against turns 191–200.
// - SQLite: WAL growth (auto-checkpoints off), in 4096 B pages + 24 B frame headers.
// - PostgreSQL (TOOLNEXUS_TEST_PG_URL): WAL bytes inserted (`pg_current_wal_insert_lsn()`
//   before and after, on another connection) in a database created for the run and dropped;
//   the WAL is the cluster's, so other clients' writes show up: read the median.
// - Redis (TOOLNEXUS_TEST_REDIS_URL): bytes the store's connection sent, and its commands.
//
//   node store-bytes.mjs [--turns 200] [--only sqlite|postgres|redis]
import { statSync } from "node:fs"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { createInProcessClient, createToolkit, defineTool } from "@toolnexus/core"
import { machineLine, median } from "./harness.mjs"

const { values } = parseArgs({ options: { turns: { type: "string" }, only: { type: "string" } } })
const TURNS = Number(values.turns ?? 200)
if (!Number.isInteger(TURNS) || TURNS < 20)
  throw new Error(`--turns must be an integer ≥ 20, got ${values.turns}`)
const TAG = `tnx_bytes_${process.pid}_${Date.now()}`

const lookup = defineTool({
  name: "lookup",
  description: "Look up the data.",
  inputSchema: { type: "object", properties: {} },
  run: () => "data",
})
const toolkit = await createToolkit({ extraTools: [lookup] })
let calls = 0
/** The shared bench's mock: a tool call after each user message, then the text "done". */
async function generate({ messages }) {
  if (messages.at(-1).role === "tool") return { content: "done" }
  return { toolCalls: [{ id: `call_${++calls}`, name: "lookup", arguments: {} }] }
}

/** Each opens a store and `measures`: label → running total. */
const backends = {
  async sqlite() {
    const { default: Database } = await import("better-sqlite3")
    const { SqliteStore } = await import("@toolnexus/durable/sqlite")
    const dir = await mkdtemp(join(tmpdir(), "toolnexus-bytes-"))
    const path = join(dir, "store.db")
    const db = new Database(path)
    db.pragma("journal_mode = WAL")
    db.pragma("wal_autocheckpoint = 0")
    const wal = () => statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0
    return {
      store: new SqliteStore({ db }),
      measures: { "WAL bytes": wal, "WAL frames": () => wal() / 4120 },
      async close() {
        db.close()
        await rm(dir, { recursive: true, force: true })
      },
    }
  },
  async postgres() {
    const { default: pg } = await import("pg")
    const { PostgresStore } = await import("@toolnexus/durable/postgres")
    const admin = new pg.Client({ connectionString: process.env.TOOLNEXUS_TEST_PG_URL })
    await admin.connect()
    await admin.query(`CREATE DATABASE ${TAG}`)
    const url = new URL(process.env.TOOLNEXUS_TEST_PG_URL)
    url.pathname = `/${TAG}`
    const pool = new pg.Pool({ connectionString: url.href, max: 4 })
    const sockets = new Set()
    pool.on("connect", (client) => sockets.add(client.connection.stream))
    const lsn = async () => {
      const { rows } = await admin.query("SELECT pg_current_wal_insert_lsn() - '0/0' AS at")
      return Number(rows[0].at)
    }
    return {
      store: new PostgresStore({ pool }),
      measures: {
        "WAL bytes": lsn,
        "bytes sent": () => [...sockets].reduce((n, s) => n + s.bytesWritten, 0),
      },
      async close() {
        await pool.end()
        await admin.query(`DROP DATABASE ${TAG}`)
        await admin.end()
      },
    }
  },
  async redis() {
    const { Redis } = await import("ioredis")
    const { RedisStore } = await import("@toolnexus/durable/redis")
    const client = new Redis(process.env.TOOLNEXUS_TEST_REDIS_URL, { lazyConnect: true })
    await client.connect()
    let commands = 0
    const send = client.sendCommand.bind(client)
    client.sendCommand = (command, ...rest) => {
      commands++
      return send(command, ...rest)
    }
    const keyPrefix = `${TAG}:`
    return {
      store: new RedisStore({ client, keyPrefix }),
      measures: { "bytes sent": () => client.stream.bytesWritten, commands: () => commands },
      async close() {
        const keys = await client.keys(`${keyPrefix}*`)
        if (keys.length > 0) await client.del(...keys)
        await client.quit()
      },
    }
  },
}

const enabled = {
  sqlite: true,
  postgres: Boolean(process.env.TOOLNEXUS_TEST_PG_URL),
  redis: Boolean(process.env.TOOLNEXUS_TEST_REDIS_URL),
}
console.log(`store-bytes: writes per durable turn (ask + one tool call), turns 1–10 vs ${TURNS - 9}–${TURNS}`)
console.log(machineLine())
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length
const fmt = (x) => (Number.isInteger(x) ? String(x) : x.toFixed(1))
for (const name of Object.keys(backends)) {
  if ((values.only !== undefined && values.only !== name) || !enabled[name]) continue
  const backend = await backends[name]()
  const { store, measures } = backend
  let saves = 0
  const save = store.save.bind(store)
  store.save = (...args) => {
    saves++
    return save(...args)
  }
  const client = createInProcessClient({ model: "scripted", generate, store })
  for (let i = 0; i < 20; i++) await client.ask(`warm ${i}`, { toolkit, id: "conv-warm" })
  const rows = Object.fromEntries(Object.keys(measures).map((label) => [label, []]))
  const savesPerTurn = []
  for (let turn = 1; turn <= TURNS; turn++) {
    const before = {}
    for (const [label, mark] of Object.entries(measures)) before[label] = await mark()
    const saves0 = saves
    const result = await client.ask(`turn ${turn}`, { toolkit, id: "conv-main" })
    if (result.text !== "done") throw new Error(`${name} turn ${turn}: ${result.status} ${result.text}`)
    savesPerTurn.push(saves - saves0)
    for (const [label, mark] of Object.entries(measures)) rows[label].push((await mark()) - before[label])
  }
  await store.close()
  await backend.close()
  console.log(`\n${name}: ${fmt(mean(savesPerTurn))} saves per turn`)
  for (const [label, xs] of Object.entries(rows)) {
    const early = xs.slice(0, 10)
    const late = xs.slice(-10)
    console.log(
      `  ${label.padEnd(10)} per turn: turns 1–10 mean ${fmt(mean(early))}, turns ${TURNS - 9}–${TURNS} mean ` +
        `${fmt(mean(late))} (median ${fmt(median(late))}), all turns mean ${fmt(mean(xs))}`,
    )
  }
}
