// Store bytes written and time per save, at turn 1 and at turns 191–200 of one conversation
// against a hand-written floor (the same messages appended with hand-written SQL / commands), for
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

const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length

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
    // The floor's tables live in the same file: the same WAL measures both sides.
    db.exec(`CREATE TABLE floor_conversations (id TEXT PRIMARY KEY, revision INTEGER NOT NULL,
        message_count INTEGER NOT NULL, pending TEXT, updated_at INTEGER NOT NULL);
      CREATE TABLE floor_messages (conversation_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (conversation_id, seq));`)
    const insert = db.prepare("INSERT INTO floor_messages (conversation_id, seq, body) VALUES (?, ?, ?)")
    const upsert = db.prepare(
      "INSERT INTO floor_conversations VALUES (?, 1, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET " +
        "revision = revision + 1, message_count = excluded.message_count, pending = excluded.pending, " +
        "updated_at = excluded.updated_at",
    )
    const append = db.transaction((id, from, messages) => {
      for (let i = from; i < messages.length; i++) insert.run(id, i, JSON.stringify(messages[i]))
      upsert.run(id, messages.length, null, Date.now())
    })
    return {
      store,
      floorAppend: async (id, from, messages) => append.immediate(id, from, messages),
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
    await probe.query(`CREATE SCHEMA IF NOT EXISTS "${schema}_floor"`)
    const f = `"${schema}_floor"`
    await probe.query(`CREATE TABLE ${f}.conversations (id TEXT PRIMARY KEY, revision INTEGER NOT NULL,
        message_count INTEGER NOT NULL, pending TEXT, updated_at BIGINT NOT NULL);
      CREATE TABLE ${f}.messages (conversation_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (conversation_id, seq))`)
    // One statement, one round trip: the new rows and the conversation row together.
    const floorSql = `WITH m AS (INSERT INTO ${f}.messages (conversation_id, seq, body)
        SELECT $1, $2::int + ord - 1, body FROM unnest($3::text[]) WITH ORDINALITY AS t(body, ord))
      INSERT INTO ${f}.conversations VALUES ($1, 1, $4, NULL, $5) ON CONFLICT (id) DO UPDATE SET
        revision = ${f}.conversations.revision + 1, message_count = excluded.message_count,
        pending = excluded.pending, updated_at = excluded.updated_at`
    return {
      store,
      floorAppend: async (id, from, messages) => {
        const bodies = messages.slice(from).map((m) => JSON.stringify(m))
        await pool.query(floorSql, [id, from, bodies, messages.length, Date.now()])
      },
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
        await probe.query(`DROP SCHEMA IF EXISTS "${schema}_floor" CASCADE`)
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
      // The floor: the new bodies pushed and the conversation hash updated, in one MULTI.
      floorAppend: async (id, from, messages) => {
        const bodies = messages.slice(from).map((m) => JSON.stringify(m))
        await client
          .multi()
          .rpush(`${keyPrefix}floor:m:${id}`, ...bodies)
          .hset(`${keyPrefix}floor:c:${id}`, "count", messages.length, "updatedAt", Date.now())
          .hincrby(`${keyPrefix}floor:c:${id}`, "rev", 1)
          .exec()
      },
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

console.log(
  `store-writes: bytes written and time per save, turn 1 vs turns ${Math.max(2, TURNS - 9)}–${TURNS} of one conversation, vs a hand-written floor`,
)
console.log(
  `${machineLine()}, ${options.runs} conversations of ${TURNS} turns per backend ` +
    `(+ ${options.warmup} warm-up turns), 4 messages appended per turn`,
)

/** Drives one conversation; per turn: the counter's bytes, each measure's bytes, ms. */
async function conversation(backend, id, turns, side = "sdk") {
  const { store, measures } = backend
  const perTurn = []
  // The floor keeps the transcript in memory and appends what is new: a store that never
  // reads back. Its saves are measured with the same independent measures.
  let floorTranscript
  const floorStore = {
    get: async () => floorTranscript,
    async save(cid, messages) {
      const marks0 = []
      for (const m of measures) marks0.push(await m.mark())
      const t0 = performance.now()
      await backend.floorAppend(cid, floorTranscript?.length ?? 0, messages)
      const ms = performance.now() - t0
      floorTranscript = messages
      const independent = []
      for (const [i, m] of measures.entries()) independent.push((await m.mark()) - marks0[i])
      const bytes = messages
        .slice(perTurn.length * 4)
        .reduce((n, m) => n + Buffer.byteLength(JSON.stringify(m)), 0)
      perTurn.push({
        messages: messages.length,
        counterBytes: bytes,
        rowsWritten: 4,
        rowsRead: 0,
        independent,
        ms,
      })
    },
  }
  const timed =
    side === "floor"
      ? floorStore
      : {
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
const timings = []
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
    const floorRuns = []
    for (let c = 0; c < options.runs; c++) {
      // Alternate which side goes first, so both see the same file and the same drift.
      const sides = c % 2 === 0 ? ["sdk", "floor"] : ["floor", "sdk"]
      for (const side of sides) {
        const out = side === "sdk" ? runs : floorRuns
        out.push(await conversation(backend, `${side}-${c}-${TAG}`, TURNS, side))
      }
    }
    const from = Math.max(2, TURNS - 9)
    // Bytes per turn over the last 10 turns: the mean, because page splits come periodically.
    const lastTurns = (rs, pick) => mean(rs.flatMap((r) => r.slice(from - 1, TURNS).map(pick)))
    const turn1 = (rs, pick) => median(rs.map((r) => pick(r[0])))
    const row = (label, pick) => {
      const t1 = turn1(runs, pick)
      const late = lastTurns(runs, pick)
      const floorLate = lastTurns(floorRuns, pick)
      return [
        label,
        t1,
        Math.round(late),
        `${(late / t1).toFixed(2)}x`,
        Math.round(floorLate),
        `${(late / floorLate).toFixed(2)}x`,
      ]
    }
    rows.push([name, ...row("store counter: message JSON bytes", (t) => t.counterBytes)])
    for (const [i, m] of backend.measures.entries()) rows.push(["", ...row(m.label, (t) => t.independent[i])])
    const msOver = (rs, a, b) => median(rs.flatMap((r) => r.slice(a - 1, b).map((t) => t.ms))).toFixed(2)
    timings.push([
      name,
      msOver(runs, 1, 1),
      msOver(runs, 2, Math.min(11, TURNS)),
      msOver(runs, from, TURNS),
      msOver(floorRuns, from, TURNS),
    ])
    for (const [i, m] of backend.measures.entries()) {
      const later = runs.flatMap((r) => r.slice(1).map((t) => t.independent[i]))
      notes.push(
        `${name}, ${m.label}: ${Math.min(...later)}–${Math.max(...later)} B per save over turns 2–${TURNS}, ` +
          `median ${median(later)}`,
      )
    }
    const read = runs.reduce((sum, r) => sum + r.slice(1).reduce((s, t) => s + t.rowsRead, 0), 0)
    if (read > 0) notes.push(`${name}: saves after turn 1 read ${read} stored messages back (the slow path)`)
    const rowsPerSave = median(runs.map((r) => r[TURNS - 1].rowsWritten))
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
    `turns ${Math.max(2, TURNS - 9)}–${TURNS}`,
    "vs turn 1",
    "floor",
    "vs floor",
  ],
  rows,
)
console.log(
  `(turn 1: median over the conversations; turns ${Math.max(2, TURNS - 9)}–${TURNS}: mean per save over them and`,
)
console.log(" the conversations; floor: the hand-written save of the same messages, same measure)")
printRows(
  [
    "backend",
    "ms/save turn 1",
    `turns 2–${Math.min(11, TURNS)}`,
    `turns ${Math.max(2, TURNS - 9)}–${TURNS}`,
    "floor, same turns",
  ],
  timings,
)
console.log("(ms/save: wall time of the save, medians)")
for (const note of notes) console.log(`- ${note}`)
console.log(`(${((Date.now() - started) / 1000).toFixed(1)} s)`)
