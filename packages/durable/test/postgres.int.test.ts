import { readWriteStats } from "../src/store-engine/write-stats.js"
import { randomUUID } from "node:crypto"
import { setTimeout as sleep } from "node:timers/promises"
import { AnswerExpiredError, StoreError, UnknownRequestError } from "@toolnexus/core"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { PostgresStore } from "../src/postgres/index.js"
import { POSTGRES_MIGRATIONS } from "../src/postgres/migrations.js"
import { describeStoreContract } from "../src/testing/store-contract.js"
import { parkAndResume, request, turns, uid } from "../src/testing/contract/context.js"
import { deliverToParkedTree } from "./two-level-tree.js"

const url = process.env.TOOLNEXUS_TEST_PG_URL
const skip = url ? undefined : "TOOLNEXUS_TEST_PG_URL is not set"
/**
 * The stores under test skip waiting for the WAL flush at commit: the suite commits a few
 * hundred times and checks what is written, never whether it survives a power cut.
 */
const storeUrl = url === undefined ? undefined : withoutCommitFlush(url)
// A namespace of our own per run: parallel runs never meet, and dropping it cleans up.
const schema = `tnx_test_${randomUUID().replaceAll("-", "").slice(0, 20)}`
let adminPool: pg.Pool | undefined
const admin = () => {
  adminPool ??= new pg.Pool({ connectionString: url, max: 3 })
  return adminPool
}

afterAll(async () => {
  if (url === undefined) return
  try {
    await admin().query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  } finally {
    await admin().end()
  }
})

describeStoreContract("PostgresStore", {
  writeStats: readWriteStats,
  skip,
  create: async (extra) =>
    new PostgresStore({ connectionString: storeUrl, schema, opTimeoutMs: 1000, ...extra }),
  corruptPending: async (_store, id) => {
    await admin().query(`UPDATE "${schema}".tnx_conversations SET pending = '{not json' WHERE id = $1`, [id])
  },
  viaProxy: {
    target: { host: "127.0.0.1", port: Number(new URL(storeUrl ?? "postgres://x:5432").port || 5432) },
    create: (port, opTimeoutMs) => {
      const url = new URL(storeUrl as string)
      url.port = String(port)
      return new PostgresStore({ connectionString: url.toString(), schema, opTimeoutMs })
    },
  },
  corrupt: async (_store, id, index) => {
    await admin().query(
      `UPDATE "${schema}".tnx_messages SET body = 'not json {' WHERE conversation_id = $1 AND seq = $2`,
      [id, index],
    )
  },
  setSchemaVersion: async (_store, version) => {
    await admin().query(`UPDATE "${schema}".tnx_meta SET value = $1 WHERE key = 'schema_version'`, [
      String(version),
    ])
  },
  schemaVersion: POSTGRES_MIGRATIONS.length,
  unreachable: async () =>
    new PostgresStore({ connectionString: "postgres://postgres@127.0.0.1:1/test", schema }),
})

describe.skipIf(skip !== undefined)("PostgresStore on a live server", () => {
  it("rolls a save back whole when its connection is lost mid-transaction", async () => {
    const store = new PostgresStore({ connectionString: storeUrl, schema })
    try {
      const id = uid("killed")
      await store.save(id, turns(3))
      // Another transaction holds an uncommitted row at seq 4: our save inserts seq 3, then
      // waits on seq 4, and is killed there with one message already written.
      const blocker = await admin().connect()
      try {
        await blocker.query("BEGIN")
        await blocker.query(
          `INSERT INTO "${schema}".tnx_messages (conversation_id, seq, body) VALUES ($1, 4, '{}')`,
          [id],
        )
        const save = store.save(id, turns(6)).then(
          () => undefined,
          (error: unknown) => error,
        )
        const pid = await waitForLockedBackend(id)
        await admin().query("SELECT pg_terminate_backend($1)", [pid])
        const error = await save
        expect(error).toBeInstanceOf(StoreError)
        expect((error as StoreError).cause).toBeDefined()
      } finally {
        await blocker.query("ROLLBACK")
        blocker.release()
      }
      expect(await store.get(id)).toEqual(turns(3))
      expect(await new PostgresStore({ pool: admin(), schema }).get(id)).toEqual(turns(3))
      // The store recovers on a fresh connection and still appends incrementally.
      await store.save(id, turns(4))
      expect(await store.get(id)).toEqual(turns(4))
    } finally {
      await store.close()
    }
  })

  it("two stores preparing one fresh schema at once both succeed (regression: stale catalog after lock)", async () => {
    const fresh = `${schema}_race`
    const stores = [0, 1, 2].map(() => new PostgresStore({ connectionString: url, schema: fresh }))
    try {
      const outcomes = await Promise.allSettled(stores.map((s) => s.listPending()))
      expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "fulfilled", "fulfilled"])
    } finally {
      await Promise.all(stores.map((s) => s.close()))
      await admin().query(`DROP SCHEMA IF EXISTS "${fresh}" CASCADE`)
    }
  })

  it("uses a host pool without ending it", async () => {
    const pool = new pg.Pool({ connectionString: url, max: 2 })
    try {
      const store = new PostgresStore({ pool, schema })
      const id = uid("host-pool")
      await store.save(id, turns(2))
      await store.close()
      expect((await pool.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }])
      expect(await new PostgresStore({ pool, schema }).get(id)).toEqual(turns(2))
    } finally {
      await pool.end()
    }
  })

  it("resumes in three round trips: claim (with the transcript), checkpoint, final save (regression: it took 14, then 4)", async () => {
    const pool = new pg.Pool({ connectionString: storeUrl, max: 2 })
    const calls: string[] = []
    const counting = countingPool(pool, calls)
    try {
      const store = new PostgresStore({ pool: counting, schema })
      const reader = new PostgresStore({ pool: counting, schema })
      expect(await parkAndResume(store, reader, uid("round-trips"), calls)).toEqual([
        "query",
        "query",
        "query",
      ])
    } finally {
      await pool.end()
    }
  })

  it("resumes a saved two-level tree in 11 round trips, the claim reading the leaf (regression: it took 13)", async () => {
    const pool = new pg.Pool({ connectionString: storeUrl, max: 2 })
    const sent: string[] = []
    let counting = false
    // Every round trip is a query on a pooled client (pool.query runs on one too): named
    // statements by their key, the rest (BEGIN, COMMIT) by their text.
    pool.on("connect", (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown
      ;(client as { query: unknown }).query = (...args: unknown[]) => {
        const [q] = args as [string | { name?: string; text: string }]
        if (counting)
          sent.push(typeof q === "string" ? q : (q.name?.replace(/^tnx_[0-9a-f]+_/, "") ?? q.text))
        return query(...args)
      }
    })
    try {
      const store = new PostgresStore({ pool, schema })
      // The first tree prepares the schema and this pool's statements; the second is counted.
      await deliverToParkedTree(store)
      await deliverToParkedTree(store, (delivering) => {
        if (delivering) sent.length = 0
        counting = delivering
      })
      expect(sent).toEqual([
        "holdersOf", // findRequest
        "getSnapshot",
        "claimFirst", // the claim, with the leaf's transcript the cascade loads first
        "appendMessages", // the leaf's checkpoint: the first LLM request follows
        "transcript", // the lead, loaded once the leaf has answered
        "appendMessages", // its checkpoint, fenced by the claim
        "BEGIN", // commitResume: both conversations, the snapshot and its holds
        "appendMessages",
        "appendMessages",
        "putSnapshotHolds",
        "COMMIT",
      ])
    } finally {
      await pool.end()
    }
  })

  it("commits one save and a snapshot without holds (a store host's turn and its record) in one round trip", async () => {
    const pool = new pg.Pool({ connectionString: storeUrl, max: 2 })
    const calls: string[] = []
    const counting = countingPool(pool, calls)
    try {
      const store = new PostgresStore({ pool: counting, schema })
      const id = uid("turn-commit")
      const key = uid("record")
      const first = turns(2)
      await store.save(id, first)
      calls.length = 0
      // The transcript this store saved, grown (what a turn's final save is).
      await store.commitResume({
        saves: [{ id, messages: [...first, ...turns(4).slice(2)], meta: { pending: null } }],
        snapshot: { key, value: { state: "done" } },
      })
      // One statement, not BEGIN, the save, the snapshot and COMMIT on a checked-out client.
      expect(calls).toEqual(["query"])
      const reader = new PostgresStore({ connectionString: storeUrl, schema })
      expect(await reader.get(id)).toEqual(turns(4))
      expect(await reader.getSnapshot(key)).toEqual({ state: "done" })
      await reader.close()
    } finally {
      await pool.end()
    }
  })

  it("a first claim reads the transcript after its locks: a save committed while it waited is in it", async () => {
    const store = new PostgresStore({ connectionString: storeUrl, schema })
    try {
      const id = uid("waited")
      const req = request("approval")
      await store.save(id, turns(3), { pending: req })
      const blocker = await admin().connect()
      let claimed: ReturnType<typeof store.claimAnswer> | undefined
      try {
        // Another writer holds the conversation's row and appends a message, keeping the request.
        await blocker.query("BEGIN")
        await blocker.query(
          `UPDATE "${schema}".tnx_conversations SET revision = revision + 1, message_count = 4 WHERE id = $1`,
          [id],
        )
        await blocker.query(
          `INSERT INTO "${schema}".tnx_messages (conversation_id, seq, body) VALUES ($1, 3, $2)`,
          [id, JSON.stringify(turns(4)[3])],
        )
        claimed = store.claimAnswer(id, { id: req.id, ok: true })
        await waitForLockedBackend(id, "%tnx_claim_first_read%")
        await blocker.query("COMMIT")
      } catch (error) {
        await blocker.query("ROLLBACK")
        throw error
      } finally {
        blocker.release()
      }
      await claimed
      // The claim's read stands for this load (no query of its own), and holds the fourth message.
      expect(await store.get(id)).toEqual(turns(4))
    } finally {
      await store.close()
    }
  })

  it("a first claim the one-statement path does not grant leaves no request row behind", async () => {
    const store = new PostgresStore({ connectionString: storeUrl, schema })
    try {
      const rows = async (requestId: string) =>
        (await admin().query(`SELECT 1 FROM "${schema}".tnx_requests WHERE request_id = $1`, [requestId]))
          .rowCount
      const late = uid("late")
      const past = { ...request("approval"), expiresAt: new Date(Date.now() - 1000).toISOString() }
      await store.save(late, turns(1), { pending: past })
      await expect(store.claimAnswer(late, { id: past.id, ok: true })).rejects.toBeInstanceOf(
        AnswerExpiredError,
      )
      expect(await rows(past.id)).toBe(0)
      await expect(store.claimAnswer(late, { id: "not-waited-on", ok: true })).rejects.toBeInstanceOf(
        UnknownRequestError,
      )
      expect(await rows("not-waited-on")).toBe(0)
    } finally {
      await store.close()
    }
  })

  it("upgrades a schema left at an older version", async () => {
    const upgraded = `${schema}_up`
    try {
      const v1 = new PostgresStore({ connectionString: url, schema: upgraded })
      const id = uid("old")
      await v1.save(id, turns(2))
      await v1.close()
      const v2 = new PostgresStore({
        connectionString: url,
        schema: upgraded,
        migrations: [
          ...POSTGRES_MIGRATIONS,
          (s) => `ALTER TABLE ${s}.tnx_conversations ADD COLUMN note text`,
        ],
      })
      expect(await v2.get(id)).toEqual(turns(2))
      await v2.close()
      const { rows } = await admin().query(`SELECT value FROM "${upgraded}".tnx_meta`)
      expect(rows).toEqual([{ value: String(POSTGRES_MIGRATIONS.length + 1) }])
      await expect(new PostgresStore({ pool: admin(), schema: upgraded }).get(id)).rejects.toThrow(
        /schema version/,
      )
    } finally {
      await admin().query(`DROP SCHEMA IF EXISTS "${upgraded}" CASCADE`)
    }
  })

  it("migration 2 moves version-1 claims and applied requests into the request index", async () => {
    const old = `${schema}_v1`
    try {
      const v1 = new PostgresStore({
        connectionString: url,
        schema: old,
        migrations: POSTGRES_MIGRATIONS.slice(0, 1),
      })
      await v1.get("nothing")
      await v1.close()
      const answer = JSON.stringify({ id: "r-claimed", ok: true, data: { by: "v1" } })
      const pending = JSON.stringify({ id: "r-claimed", kind: "approval", prompt: "ok?" })
      const past = "now() - interval '1 minute'"
      await admin().query(
        `INSERT INTO "${old}".tnx_conversations (id, revision, message_count, pending, pending_id, pending_kind,
           pending_since, consumed_id, claim_token, claim_request_id, claim_answer, claim_expires_at, created_at, updated_at)
         VALUES ('claimed', 1, 0, $1, 'r-claimed', 'approval', ${past}, NULL, 'tok', 'r-claimed', $2, ${past}, now(), now()),
                ('done', 1, 0, NULL, NULL, NULL, NULL, 'r-done', NULL, NULL, NULL, NULL, now(), now())`,
        [pending, answer],
      )
      const store = new PostgresStore({ connectionString: url, schema: old })
      try {
        expect(await store.listExpiredClaims()).toEqual([
          { id: "claimed", request: JSON.parse(pending), answer: JSON.parse(answer) },
        ])
        expect(await store.findRequest("r-claimed")).toMatchObject({ state: "claimed", attempts: 1 })
        await expect(store.claimAnswer("done", { id: "r-done", ok: true })).rejects.toThrow(/already applied/)
        const taken = await store.claimAnswer("claimed", { id: "r-claimed", ok: false })
        expect(taken).toMatchObject({ takeover: true, answer: JSON.parse(answer) })
        await store.save("claimed", turns(1), { pending: null, claim: taken.token })
        expect(await store.getDecision("r-claimed")).toEqual({ ok: true })
      } finally {
        await store.close()
      }
    } finally {
      await admin().query(`DROP SCHEMA IF EXISTS "${old}" CASCADE`)
    }
  })
})

/** The pid of the backend waiting on a lock while working on conversation `id` (its query LIKE `like`). */
async function waitForLockedBackend(id: string, like = "%tnx_messages%"): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const { rows } = await admin().query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1 " +
        "AND datname = current_database()",
      [like],
    )
    if (rows[0] !== undefined) return rows[0].pid
    await sleep(10)
  }
  throw new Error(`no backend is waiting on a lock for ${id}`)
}

function withoutCommitFlush(connectionString: string): string {
  const parsed = new URL(connectionString)
  parsed.searchParams.set("options", "-c synchronous_commit=off")
  return parsed.toString()
}

/**
 * `pool` as a store sees it, with every round trip noted in `calls`: a query, or a connect
 * (a transaction's client).
 */
function countingPool(pool: pg.Pool, calls: string[]) {
  return {
    query: (query: string | pg.QueryConfig, values?: unknown[]) => {
      calls.push("query")
      return pool.query(query as pg.QueryConfig, values)
    },
    connect: () => {
      calls.push("connect")
      return pool.connect()
    },
  }
}
