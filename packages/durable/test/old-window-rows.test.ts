import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AnswerConflictError } from "@toolnexus/core"
import { createFakeLLMServer, type FakeLLMServer } from "@toolnexus/core/testing"
import Database from "better-sqlite3"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { deliverAnswer } from "../src/resume/deliver-answer.js"
import { loadRuntime, saveRuntime } from "../src/resume/runtime-persistence.js"
import { SqliteStore } from "../src/sqlite/index.js"
import { migrateSqlite } from "../src/sqlite/migrate-sqlite.js"
import { SQLITE_MIGRATIONS } from "../src/sqlite/migrations.js"
import type { GoldenRows } from "./rows-format-kit.js"
import { tree } from "./rows-format-kit.js"
import { createRuntime } from "@toolnexus/agents"

// Stored data of the window a resume no longer has (DESIGN §17 "a resume writes once"): before
// round 5 a resumed cascade saved each handle's conversation, then the runtime snapshot, in
// separate calls. A worker that died between them left the rows of
// fixtures/old-window/sqlite-v6.json: the tree "order-1" (lead → payer) whose answer to
// `req-golden-tree` was applied — both conversations saved, the claim consumed — while its
// snapshot still holds both handles parked on it. Such rows are read forever: the tree is
// repaired from the store (nothing runs again), and a redelivery is refused with the first
// decision. The file was written once (TOOLNEXUS_WRITE_GOLDEN=1) by the old resume's own
// steps: claim, `Runtime.resume` under the claim on the store, no snapshot save. Never edited.

const FIXTURE = new URL("./fixtures/old-window/sqlite-v6.json", import.meta.url)
// The other window: the worker died between the payer's save and the lead's (the top's, which
// consumes the claim): the payer applied the answer, the lead still waits under a claim whose
// lease ran out. The redelivery's cascade finds the payer's turn settled in the store (its
// tool result recorded, its answer given), so it runs no tool and asks no model for it.
const MID_CASCADE = new URL("./fixtures/old-window/sqlite-v6-mid-cascade.json", import.meta.url)
const TABLES = ["tnx_meta", "tnx_conversations", "tnx_messages", "tnx_requests", "tnx_snapshots"]

const dir = mkdtempSync(join(tmpdir(), "tnx-old-window-"))
let server: FakeLLMServer
beforeAll(async () => {
  server = await createFakeLLMServer()
})
afterAll(async () => {
  await server.close()
  rmSync(dir, { recursive: true, force: true })
})
let files = 0
const newFile = () => join(dir, `db-${files++}.db`)

/** Writes the old window's rows as the previous resume left them when its worker died. */
async function writeOldWindow(file: string, midCascade = false): Promise<GoldenRows> {
  // A short lease, so that the mid-cascade claim has run out when the rows are read.
  const store = new SqliteStore({ path: file, opTimeoutMs: 50 })
  try {
    server.reset()
    const { opts } = tree(server, store)
    const parked = createRuntime({ ...opts, namespace: "order-1" })
    const lead = parked.spawn(parked.root, "lead")
    parked.wake(lead, "go")
    expect(await parked.wait(lead)).toMatchObject({ status: "pending" })
    await saveRuntime(store, "order-1", parked)
    // The previous resume: claim on the top holder, the cascade saving on the store itself.
    // Mid-cascade, the worker dies at the top's save (the one fenced by the claim).
    const dying = new Proxy(store, {
      get(target, name) {
        const value = Reflect.get(target, name, target)
        if (name !== "save" || !midCascade) return typeof value === "function" ? value.bind(target) : value
        return (id: string, messages: unknown, meta?: { claim?: string; checkpoint?: boolean }) =>
          meta?.claim !== undefined && !meta.checkpoint
            ? Promise.reject(new Error("the worker died"))
            : target.save(id, messages as never, meta)
      },
    })
    const rt = await loadRuntime(store, "order-1", { ...opts, store: dying })
    const top = rt.parked()[0]?.topConversationId as string
    const claim = await store.claimAnswer(
      top,
      { id: "req-golden-tree", ok: true },
      { runtimeKey: "order-1", leaseMs: 100 },
    )
    const cascade = await rt.resume(claim.answer, { claim: claim.token })
    expect(cascade.status).toBe(midCascade ? "error" : "done")
    // … and the worker died here, before `saveRuntime`.
  } finally {
    await store.close()
  }
  const db = new Database(file, { readonly: true })
  try {
    const tables: GoldenRows["tables"] = {}
    for (const t of TABLES)
      tables[t] = db.prepare(`SELECT * FROM ${t} ORDER BY 1`).all() as Record<string, unknown>[]
    return { schemaVersion: SQLITE_MIGRATIONS.length, tables }
  } finally {
    db.close()
  }
}

/** A database holding exactly the fixture's rows. */
function databaseOf(g: GoldenRows): string {
  const file = newFile()
  const db = new Database(file)
  migrateSqlite(db, SQLITE_MIGRATIONS.slice(0, g.schemaVersion), `a version-${g.schemaVersion} database`)
  for (const [table, rows] of Object.entries(g.tables)) {
    if (table === "tnx_meta") continue
    for (const row of rows) {
      const columns = Object.keys(row)
      db.prepare(
        `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
      ).run(...columns.map((c) => row[c]))
    }
  }
  db.close()
  return file
}

function golden(file = FIXTURE): GoldenRows {
  return JSON.parse(readFileSync(file, "utf8")) as GoldenRows
}

describe("rows of the old window between a resume's writes", () => {
  it.runIf(process.env.TOOLNEXUS_WRITE_GOLDEN === "1")("writes the fixtures once", async () => {
    for (const [file, mid] of [
      [FIXTURE, false],
      [MID_CASCADE, true],
    ] as const) {
      try {
        readFileSync(file)
        continue // an existing fixture is never written again
      } catch {}
      const rows = await writeOldWindow(newFile(), mid)
      writeFileSync(file, `${JSON.stringify(rows, null, 2)}\n`, { flag: "wx" })
    }
  })

  it("the fixture holds the window: the answer applied, the snapshot still parked on it", () => {
    const g = golden()
    const requests = g.tables.tnx_requests ?? []
    expect(requests.find((r) => r.request_id === "req-golden-tree")).toMatchObject({ state: "applied" })
    const snapshot = JSON.parse(String(g.tables.tnx_snapshots?.[0]?.body)) as { handles: { state: string }[] }
    expect(snapshot.handles.filter((h) => h.state === "suspended")).toHaveLength(2)
  })

  it("a redelivery repairs the tree from the store, runs nothing, and is refused with the first decision", async () => {
    const store = new SqliteStore({ path: databaseOf(golden()) })
    try {
      server.reset()
      const { moves, opts } = tree(server, store)
      const delivered = deliverAnswer(store, { id: "req-golden-tree", ok: false }, { runtime: opts })
      await expect(delivered).rejects.toBeInstanceOf(AnswerConflictError)
      await expect(delivered).rejects.toMatchObject({ decision: { ok: true } })
      expect(moves).toEqual([])
      expect(server.requests).toHaveLength(0)
      // The snapshot was saved again in line with the store: nothing parked, the lead done.
      const rt = await loadRuntime(store, "order-1", opts)
      expect(rt.parked()).toEqual([])
      expect(await rt.wait(rt.handle("root/lead.1")!)).toMatchObject({
        status: "done",
        text: "lead: payer: moved",
      })
      expect(server.requests).toHaveLength(0)
    } finally {
      await store.close()
    }
  })

  it("loadRuntime repairs the tree from the store and saves it again", async () => {
    const store = new SqliteStore({ path: databaseOf(golden()) })
    try {
      server.reset()
      const { moves, opts } = tree(server, store)
      const rt = await loadRuntime(store, "order-1", opts)
      expect(rt.parked()).toEqual([])
      expect(await rt.wait(rt.handle("root/lead.1")!)).toMatchObject({
        status: "done",
        text: "lead: payer: moved",
      })
      expect(moves).toEqual([])
      expect(server.requests).toHaveLength(0)
      const again = await loadRuntime(store, "order-1", opts)
      expect(again.parked()).toEqual([])
    } finally {
      await store.close()
    }
  })

  it("mid-cascade: a redelivery runs nothing again for the applied step and finishes the rest once", async () => {
    const g = golden(MID_CASCADE)
    const payer = g.tables.tnx_conversations?.find((c) => String(c.id).endsWith("payer.1"))
    expect(payer).toMatchObject({ pending_id: null })
    const store = new SqliteStore({ path: databaseOf(g) })
    try {
      server.reset()
      const { moves, opts } = tree(server, store)
      const delivered = await deliverAnswer(store, { id: "req-golden-tree", ok: true }, { runtime: opts })
      expect(delivered.result).toMatchObject({ status: "done", text: "lead: payer: moved" })
      expect(moves).toEqual([]) // the transfer ran in the dead worker, never again
      expect(server.requests.map((r) => r.system)).toEqual(["lead"])
      expect(await store.getDecision("req-golden-tree")).toEqual({ ok: true })
      expect((await loadRuntime(store, "order-1", opts)).parked()).toEqual([])
    } finally {
      await store.close()
    }
  })
})
