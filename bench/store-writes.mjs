// Store bytes written and time per save, at turn 1 and at turn 200 of one conversation, for
// each durable backend: SQLite (a file in a temp dir), and PostgreSQL and Redis when
// TOOLNEXUS_TEST_PG_URL / TOOLNEXUS_TEST_REDIS_URL are set (a unique schema / key prefix,
// dropped at the end).
//
// A conversation is driven the way an application drives it: `client.ask(prompt, {toolkit,
// id})` on a `createInProcessClient` (a scripted in-process model, no HTTP) whose store is
// the backend. Every turn appends the same-sized four messages (user prompt, assistant tool
// call, tool result, assistant text) and ends with one save of the whole transcript. A
// store that writes only what changed writes as much at turn 200 as at turn 1.
//
// Bytes written per save, two ways:
// - the store's own counter (`store.stats.messageBytesWritten`, an @internal getter of the
//   built stores): UTF-8 bytes of message JSON it wrote;
// - an independent measure: SQLite, the growth of the WAL file (auto-checkpoints off on the
//   connection the store is given, so every committed page stays in the WAL); PostgreSQL,
//   the WAL bytes inserted (`pg_current_wal_insert_lsn()` before and after, read on another
//   connection) and the bytes the store's connections sent; Redis, the bytes the store's
//   connection sent (its socket's `bytesWritten`).
// Figures are medians over --runs conversations (the WAL figures pick up background writes).
//
//   node --expose-gc store-writes.mjs [--runs N] [--turns T] [--only sqlite|postgres|redis]
import { statSync } from "node:fs"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createInProcessClient, createToolkit, defineTool } from "@toolnexus/core"
import { cliOptions, machineLine, median, printRows } from "./harness.mjs"

const options = cliOptions(
  { runs: 5, rounds: 1, warmup: 5 },
  { variants: ["sqlite", "postgres", "redis"], extra: { turns: { type: "string" } } },
)
const TURNS = Number(options.values.turns ?? 200)
if (!Number.isInteger(TURNS) || TURNS < 2)
  throw new Error(`--turns must be an integer ≥ 2, got ${options.values.turns}`)
const PG_URL = process.env.TOOLNEXUS_TEST_PG_URL
const REDIS_URL = process.env.TOOLNEXUS_TEST_REDIS_URL
const TAG = `bench_${process.pid}_${Date.now()}`

// ---- the conversation: fixed-size messages every turn ----------------------------------

const pad = (n) => String(n).padStart(4, "0")
const filler = (label, n, length) =>
  `${label} ${pad(n)}: ${"lorem ipsum dolor sit amet ".repeat(20)}`.slice(0, length)
const promptOf = (turn) => filler("Question", turn, 160)
const LOOKUP = defineTool({
  name: "lookup",
  description: "Looks a question up in the knowledge base.",
  inputSchema: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
  run: ({ query }) => filler(`Found for ${query.slice(0, 13)}`, 0, 400),
})
const toolkit = await createToolkit({ extraTools: [LOOKUP] })

/** The scripted model: a tool call, then (after the tool result) a text answer. */
async function generate({ messages }) {
  const turn = messages.filter((m) => m.role === "user").length
  if (messages.at(-1).role === "tool") {
    return { content: filler("Answer", turn, 240), usage: { promptTokens: 100, completionTokens: 40 } }
  }
  return {
    toolCalls: [{ id: `call_${pad(turn)}`, name: "lookup", arguments: { query: `question ${pad(turn)}` } }],
    usage: { promptTokens: 90, completionTokens: 12 },
  }
}

// ---- the backends ----------------------------------------------------------------------

/** Each opens the store and an independent byte measure: `mark()` → a running total in bytes. */
const backends = {
  async sqlite() {
    const { default: Database } = await import("better-sqlite3")
    const { SqliteStore } = await import("@toolnexus/durable/sqlite")
    const dir = await mkdtemp(join(tmpdir(), "toolnexus-bench-"))
    const path = join(dir, "store.db")
    const db = new Database(path)
    db.pragma("journal_mode = WAL")
    db.pragma("wal_autocheckpoint = 0") // every committed page stays in the WAL, which only grows
    const pageSize = db.pragma("page_size", { simple: true })
    const store = new SqliteStore({ db })
    const walSize = () => {
      try {
        return statSync(`${path}-wal`).size
      } catch {
        return 0
      }
    }
    return {
      store,
      measures: [{ label: `WAL growth (${pageSize} B pages)`, mark: walSize }],
      async close() {
        await store.close()
        db.close()
        await rm(dir, { recursive: true, force: true })
      },
    }
  },
  async postgres() {
    const { default: pg } = await import("pg")
    const { PostgresStore } = await import("@toolnexus/durable/postgres")
    const pool = new pg.Pool({ connectionString: PG_URL, max: 4 })
    const sockets = new Set()
    pool.on("connect", (client) => sockets.add(client.connection.stream))
    pool.on("error", () => {})
    const probe = new pg.Client({ connectionString: PG_URL })
    await probe.connect()
    const schema = TAG
    const store = new PostgresStore({ pool, schema })
    const lsn = async () => {
      const { rows } = await probe.query("SELECT pg_current_wal_insert_lsn()::text AS lsn")
      const [hi, lo] = rows[0].lsn.split("/")
      return Number((BigInt(`0x${hi}`) << 32n) + BigInt(`0x${lo}`))
    }
    return {
      store,
      measures: [
        { label: "WAL inserted (pg_current_wal_insert_lsn)", mark: lsn },
        {
          label: "bytes sent on the store's connections",
          mark: () => {
            let total = 0
            for (const s of sockets) total += s.bytesWritten
            return total
          },
        },
      ],
      async close() {
        await store.close()
        await pool.end()
        await probe.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
        await probe.end()
      },
    }
  },
  async redis() {
    const { Redis } = await import("ioredis")
    const { RedisStore } = await import("@toolnexus/durable/redis")
    const client = new Redis(REDIS_URL, { lazyConnect: true })
    await client.connect()
    const keyPrefix = `${TAG}:`
    const store = new RedisStore({ client, keyPrefix })
    return {
      store,
      measures: [{ label: "bytes sent on the store's connection", mark: () => client.stream.bytesWritten }],
      async close() {
        await store.close()
        let cursor = "0"
        do {
          const [next, keys] = await client.scan(cursor, "MATCH", `${keyPrefix}*`, "COUNT", 1000)
          if (keys.length > 0) await client.del(...keys)
          cursor = next
        } while (cursor !== "0")
        await client.quit()
      },
    }
  },
}

const available = {
  sqlite: true,
  postgres: Boolean(PG_URL),
  redis: Boolean(REDIS_URL),
}
const names = Object.keys(backends).filter((name) => options.only === undefined || name === options.only)

console.log(`store-writes: bytes written and time per save, turn 1 vs turn ${TURNS} of one conversation`)
console.log(
  `${machineLine()}, ${options.runs} conversations of ${TURNS} turns per backend ` +
    `(+ ${options.warmup} warm-up turns), 4 messages appended per turn`,
)

/** Drives one conversation; per turn: the counter's bytes, each measure's bytes, ms. */
async function conversation(backend, id, turns) {
  const { store, measures } = backend
  const perTurn = []
  const timed = {
    get: (cid) => store.get(cid),
    async save(cid, messages, meta) {
      const counter0 = store.stats
      const marks0 = []
      for (const m of measures) marks0.push(await m.mark())
      const t0 = performance.now()
      await store.save(cid, messages, meta)
      const ms = performance.now() - t0
      const counter1 = store.stats
      const independent = []
      for (const [i, m] of measures.entries()) independent.push((await m.mark()) - marks0[i])
      perTurn.push({
        messages: messages.length,
        counterBytes: counter1.messageBytesWritten - counter0.messageBytesWritten,
        rowsWritten: counter1.messageRowsWritten - counter0.messageRowsWritten,
        rowsRead: counter1.messageRowsRead - counter0.messageRowsRead,
        independent,
        ms,
      })
    },
  }
  const client = createInProcessClient({ model: "scripted", generate, store: timed })
  for (let turn = 1; turn <= turns; turn++) {
    const result = await client.ask(promptOf(turn), { toolkit, id })
    if (result.status !== "done" || result.messages.length !== turn * 4) {
      throw new Error(
        `${id}: unexpected result at turn ${turn}: ${result.status}, ${result.messages.length} messages`,
      )
    }
  }
  if (perTurn.length !== turns) throw new Error(`${id}: ${perTurn.length} saves for ${turns} turns`)
  return perTurn
}

const started = Date.now()
const rows = []
const notes = []
for (const name of names) {
  if (!available[name]) {
    console.log(
      `${name}: skipped (${name === "postgres" ? "TOOLNEXUS_TEST_PG_URL" : "TOOLNEXUS_TEST_REDIS_URL"} is not set)`,
    )
    continue
  }
  const backend = await backends[name]()
  try {
    // Warm-up: schema creation, prepared statements and scripts, compiled code.
    await conversation(backend, `warm-${TAG}`, options.warmup)
    const runs = []
    for (let c = 0; c < options.runs; c++) runs.push(await conversation(backend, `conv-${c}-${TAG}`, TURNS))
    const at = (turn, pick) => median(runs.map((r) => pick(r[turn - 1])))
    const first = (pick) => at(1, pick)
    const last = (pick) => at(TURNS, pick)
    const ratio = (pick) => `${(last(pick) / first(pick)).toFixed(2)}x`
    // Time per save: turn 1 alone, and the median of 10 turns at each end (a lone save is noisy).
    const msOver = (from, to) =>
      median(runs.flatMap((r) => r.slice(from - 1, to).map((t) => t.ms))).toFixed(2)
    rows.push([
      name,
      "store counter: message JSON bytes",
      first((t) => t.counterBytes),
      last((t) => t.counterBytes),
      ratio((t) => t.counterBytes),
      msOver(1, 1),
      msOver(2, Math.min(11, TURNS)),
      msOver(Math.max(2, TURNS - 9), TURNS),
    ])
    for (const [i, m] of backend.measures.entries()) {
      rows.push([
        "",
        m.label,
        first((t) => t.independent[i]),
        last((t) => t.independent[i]),
        ratio((t) => t.independent[i]),
        "",
        "",
        "",
      ])
    }
    for (const [i, m] of backend.measures.entries()) {
      const later = runs.flatMap((r) => r.slice(1).map((t) => t.independent[i]))
      notes.push(
        `${name}, ${m.label}: ${Math.min(...later)}–${Math.max(...later)} B per save over turns 2–${TURNS}, ` +
          `median ${median(later)}`,
      )
    }
    const read = runs.reduce((sum, r) => sum + r.slice(1).reduce((s, t) => s + t.rowsRead, 0), 0)
    if (read > 0) notes.push(`${name}: saves after turn 1 read ${read} stored messages back (the slow path)`)
    const rowsPerSave = last((t) => t.rowsWritten)
    if (rowsPerSave !== 4) notes.push(`${name}: ${rowsPerSave} message rows written at turn ${TURNS}, not 4`)
  } finally {
    await backend.close()
  }
}

printRows(
  [
    "backend",
    "bytes written per save",
    "turn 1",
    `turn ${TURNS}`,
    `${TURNS}/1`,
    "ms/save turn 1",
    `turns 2–${Math.min(11, TURNS)}`,
    `turns ${Math.max(2, TURNS - 9)}–${TURNS}`,
  ],
  rows,
)
console.log("(bytes: medians over the conversations at that turn; ms/save: wall time of store.save,")
console.log(" medians over the conversations of turn 1 alone and of the first and last 10 later turns)")
for (const note of notes) console.log(`- ${note}`)
console.log(`(${((Date.now() - started) / 1000).toFixed(1)} s)`)
