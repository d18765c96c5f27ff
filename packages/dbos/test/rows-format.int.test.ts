import { readFileSync, writeFileSync } from "node:fs"
import { type Message, createClient, createToolkit, defineTool, pending } from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import pg from "pg"
import { until } from "@toolnexus/agents/engine-testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connectDbos, dbosAgent, launchDbos } from "../src/index.js"
import { engineDdl } from "../src/protocol.js"
import { PG_URL, createDatabase } from "./dbos-harness.js"

// The rows `<namespace>.runs`, `.events` and `.requests` hold outlive the workers that wrote
// them (DESIGN §17 "formats are contracts"). fixtures/rows/v1.json was written once
// (TOOLNEXUS_WRITE_GOLDEN=1) by a DBOS worker of this package running a conversation that
// parked on an approval. It is read forever, never regenerated. The un-versioned shape before
// it is the runs table without `parked` (round 3): such a table still reads after today's DDL.

const V1 = new URL("./fixtures/rows/v1.json", import.meta.url)
const RUN_ID = "dbos-golden-1"
const NS = "toolnexus"

interface Golden {
  runs: Record<string, unknown>[]
  events: Record<string, unknown>[]
  requests: Record<string, unknown>[]
}

const skip = PG_URL ? undefined : "TOOLNEXUS_TEST_PG_URL is not set"

let llm: FakeLLMServer
beforeAll(async () => {
  llm = await createFakeLLMServer()
})
afterAll(() => llm.close())

async function withDatabase(fn: (url: string, db: pg.Client) => Promise<void>) {
  const { url, drop } = await createDatabase()
  const db = new pg.Client({ connectionString: url })
  await db.connect()
  try {
    await fn(url, db)
  } finally {
    await db.end()
    await drop()
  }
}

/** The user messages' texts of a (chat-completions) conversation. */
const userTexts = (messages: Message[]) =>
  (messages as { role?: string; content?: unknown }[]).filter((m) => m.role === "user").map((m) => m.content)

/** A JSON column's value: SQL NULL for null. */
const json = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value))

/** Inserts `golden`'s rows as they were stored (JSON columns as JSON). */
async function insert(db: pg.Client, golden: Golden, parked = true) {
  for (const r of golden.runs)
    await db.query(
      parked
        ? `INSERT INTO ${NS}.runs (run_id, agent, turn, kind, transcript, parked) VALUES ($1, $2, $3, $4, $5, $6)`
        : `INSERT INTO ${NS}.runs (run_id, agent, turn, kind, transcript) VALUES ($1, $2, $3, $4, $5)`,
      [r.run_id, r.agent, r.turn, r.kind, json(r.transcript), ...(parked ? [json(r.parked)] : [])],
    )
  for (const e of golden.events)
    await db.query(`INSERT INTO ${NS}.events (workflow_id, event) VALUES ($1, $2)`, [
      e.workflow_id,
      JSON.stringify(e.event),
    ])
  for (const q of golden.requests)
    await db.query(
      `INSERT INTO ${NS}.requests (request_id, run_id, entry, since, decision, workflow_id) VALUES ($1, $2, $3, $4, $5, $6)`,
      [q.request_id, q.run_id, JSON.stringify(q.entry), q.since, json(q.decision), q.workflow_id],
    )
}

describe.skipIf(skip)("the DBOS engine's rows", () => {
  it.runIf(process.env.TOOLNEXUS_WRITE_GOLDEN === "1")(
    "writes the golden rows (once)",
    async () => {
      await withDatabase(async (url, db) => {
        const ship = defineTool({
          name: "ship",
          description: "ships an order once approved",
          inputSchema: { type: "object", properties: {} },
          run: (_args, ctx) =>
            ctx.answer ? "shipped" : pending({ kind: "approval", prompt: "Ship order 7?" }),
        })
        const client = createClient({ baseUrl: `${llm.url}/v1`, style: "openai", model: "m", apiKey: "k" })
        const agent = dbosAgent({
          name: "shipper",
          client,
          toolkit: await createToolkit({ extraTools: [ship] }),
        })
        llm.enqueue({ text: "Looking." }, { toolCalls: [{ id: "c1", name: "ship", arguments: {} }] })
        const worker = await launchDbos({ agents: [agent], systemDatabaseUrl: url })
        const host = connectDbos({ systemDatabaseUrl: url })
        try {
          await host.start("shipper", RUN_ID, "hello")
          await host.result(RUN_ID, { timeoutMs: 30_000 })
          await host.send(RUN_ID, "ship order 7")
          // A parked DBOS turn is a workflow waiting in `recv`: its request is listed once saved.
          await until(async () => (await host.listPending()).length === 1, "the parked request")
          await until(async () => (await host.transcript(RUN_ID))?.length === 4, "the parked conversation")
          const rows = async (table: string, where: string) =>
            (await db.query(`SELECT * FROM ${NS}.${table} WHERE ${where} ORDER BY 1`, [RUN_ID])).rows
          const golden: Golden = {
            runs: await rows("runs", "run_id = $1"),
            events: (await rows("events", "workflow_id LIKE $1 || '%'")).map(({ seq: _, ...e }) => e),
            requests: (await rows("requests", "run_id = $1")).map((q) => ({
              ...q,
              since: (q.since as Date).toISOString(),
            })),
          }
          writeFileSync(V1, `${JSON.stringify(golden, null, 2)}\n`, { flag: "wx" })
        } finally {
          await host.close()
          await worker.close()
        }
      })
    },
    120_000,
  )

  const golden = () => JSON.parse(readFileSync(V1, "utf8")) as Golden

  it("v1: today's connection reads the run's conversation, its open request and its events", async () => {
    await withDatabase(async (url, db) => {
      await db.query(engineDdl(NS))
      const rows = golden()
      await insert(db, rows)
      const host = connectDbos({ systemDatabaseUrl: url })
      try {
        const transcript = (await host.transcript(RUN_ID)) as Message[]
        expect(transcript[0]).toMatchObject({ role: "user", content: "hello" })
        // The parked turn's conversation, its halted call included (OpenAI wire shape).
        expect(transcript.at(-1)).toMatchObject({
          role: "assistant",
          tool_calls: [{ id: "c1", function: { name: "ship" } }],
        })
        expect(userTexts(transcript)).toEqual(["hello", "ship order 7"])
        const [open] = await host.listPending()
        expect(open).toMatchObject({
          conversationId: RUN_ID,
          request: { kind: "approval", prompt: "Ship order 7?" },
        })
        expect(await host.findRequest(open?.request.id as string)).toEqual(open)
        // The event log's rows (tailing them needs DBOS's own tables, absent here): the parked
        // turn's log ends with the pending request the connection lists.
        const turn2 = rows.events.filter((e) => e.workflow_id === `${RUN_ID}~2`).map((e) => e.event)
        expect(turn2.map((e) => (e as { type: string }).type)).toEqual([
          "usage",
          "turn",
          "tool_call",
          "pending",
        ])
        expect(turn2.at(-1)).toEqual({ type: "pending", request: open?.request })
      } finally {
        await host.close()
      }
    })
  })

  it("the shape before `parked` (round 3's runs table) still reads after today's DDL", async () => {
    await withDatabase(async (url, db) => {
      // Round 3's tables: `runs` had no `parked` column.
      await db.query(
        engineDdl(NS).replace(/ALTER TABLE \S+\.runs ADD COLUMN IF NOT EXISTS parked jsonb;/, ""),
      )
      const columns = await db.query(
        `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'runs'`,
        [NS],
      )
      expect(columns.rows.map((c) => c.column_name)).not.toContain("parked")
      const rows = golden()
      const done = { ...rows, runs: rows.runs.map((r) => ({ ...r, transcript: r.parked ?? r.transcript })) }
      await insert(db, done, false)
      const host = connectDbos({ systemDatabaseUrl: url })
      try {
        const transcript = (await host.transcript(RUN_ID)) as Message[]
        expect(userTexts(transcript)).toEqual(["hello", "ship order 7"])
      } finally {
        await host.close()
      }
    })
  })
})
