import type { Message } from "@toolnexus/core"
import Database from "better-sqlite3"
import type BetterSqlite3 from "better-sqlite3"
import { describe, expect, it } from "vitest"
import { SqliteStore } from "../src/sqlite/index.js"
import { request, turns } from "../src/testing/contract/context.js"

// A claim reads the conversation, its request's index row and its transcript in one statement;
// the resume's load right after it (askWithAnswer loads in the same run of promise jobs) takes
// that read instead of making its own. A load after those jobs ran reads the database again.

/** A database whose statement executions are counted (each `run`/`get`/`all` call). */
function countedDatabase() {
  const db = new Database(":memory:")
  const executed: string[] = []
  /** The transaction control statements run (BEGIN IMMEDIATE, COMMIT, ROLLBACK). */
  const control: string[] = []
  /** The sources of the statements switched to raw rows (arrays). */
  const raw: string[] = []
  const prepare = db.prepare.bind(db)
  db.prepare = ((source: string) => {
    const statement = prepare(source)
    const toRaw = statement.raw.bind(statement)
    statement.raw = (on?: boolean) => {
      if (on !== false) raw.push(source)
      return toRaw(on)
    }
    for (const method of ["run", "get", "all"] as const) {
      const call = statement[method].bind(statement) as (...args: unknown[]) => unknown
      ;(statement as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
        // Transaction control (the store's BEGIN IMMEDIATE, COMMIT) is counted apart.
        ;(/^(BEGIN|COMMIT|ROLLBACK)\b/.test(source) ? control : executed).push(source)
        return call(...args)
      }
    }
    return statement
  }) as typeof db.prepare
  return { db, executed, control, raw }
}

async function parked(store: SqliteStore, id: string, messages: Message[]) {
  const req = { ...request("approval"), id: `req-${id}` }
  await store.save(id, messages, { pending: req })
  return req
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

describe("SQLite claim read", () => {
  it("the load right after a granted claim runs no statement, and only once", async () => {
    const { db, executed } = countedDatabase()
    const store = new SqliteStore({ db })
    const req = await parked(store, "c", turns(3))
    await store.claimAnswer("c", { id: req.id, ok: true })
    const before = executed.length
    expect(await store.get("c")).toEqual(turns(3))
    expect(executed.length).toBe(before)
    // Taken once: the next load reads.
    expect(await store.get("c")).toEqual(turns(3))
    expect(executed.length).toBe(before + 1)
    await store.close()
  })

  it("a first claim runs two statements and no transaction (the grant, then the read), a takeover the locked claim after the first try; neither writes the conversation row", async () => {
    const { db, executed, control } = countedDatabase()
    const store = new SqliteStore({ db })
    const req = await parked(store, "c", turns(3))
    const row = () => db.prepare("SELECT * FROM tnx_conversations WHERE id = 'c'").get()
    const parkedRow = row()
    let before = executed.length
    let beforeControl = control.length
    const claim = await store.claimAnswer("c", { id: req.id, ok: true })
    expect(executed.slice(before)).toEqual([
      expect.stringContaining("INSERT INTO tnx_requests"),
      expect.stringContaining("LEFT JOIN tnx_requests r ON r.request_id = @answer"),
    ])
    expect(control.length - beforeControl).toBe(0)
    expect(row()).toEqual(parkedRow)
    await store.releaseClaim("c", claim.token)
    before = executed.length
    beforeControl = control.length
    const takeover = await store.claimAnswer("c", { id: req.id, ok: true })
    expect(takeover).toMatchObject({ takeover: true })
    // The one-statement grant writes nothing here (a claimed request); BEGIN, read, grant, COMMIT.
    expect(executed.length - before).toBe(3)
    expect(control.slice(beforeControl)).toEqual(["BEGIN IMMEDIATE", "COMMIT"])
    expect(row()).toEqual(parkedRow)
    // The request row alone fences: the released token saves nothing, the new one saves.
    await expect(store.save("c", turns(4), { claim: claim.token, checkpoint: true })).rejects.toMatchObject({
      name: "AnswerConflictError",
    })
    await store.save("c", turns(4), { claim: takeover.token, pending: null })
    expect(await store.getPending("c")).toBeUndefined()
    expect(await store.getDecision(req.id)).toMatchObject({ ok: true })
    await store.close()
  })

  it("a first claim whose conversation moves on between its grant and its read is refused (the claim judged on what is there now)", async () => {
    const { db } = countedDatabase()
    const store = new SqliteStore({ db })
    const req = await parked(store, "c", turns(3))
    // Another process's unfenced save lands right after the one-statement grant.
    const grant = db.prepare.bind(db)
    let moved = false
    db.prepare = ((source: string) => {
      const statement = grant(source)
      if (!source.includes("SELECT @request_id, 'claimed'")) return statement
      const run = statement.run.bind(statement) as (...args: unknown[]) => BetterSqlite3.RunResult
      ;(statement as unknown as { run: typeof run }).run = (...args) => {
        const result = run(...args)
        if (!moved) {
          moved = true
          db.exec("UPDATE tnx_conversations SET pending = NULL, pending_id = NULL, pending_kind = NULL")
        }
        return result
      }
      return statement
    }) as typeof db.prepare
    await expect(store.claimAnswer("c", { id: req.id, ok: true })).rejects.toMatchObject({
      name: "UnknownRequestError",
    })
    expect(moved).toBe(true)
    await store.close()
  })

  it("getPending reads the pending columns only, and the claim's read returns arrays (row objects cost more to build)", async () => {
    const { db, executed, raw } = countedDatabase()
    const store = new SqliteStore({ db })
    const req = await parked(store, "c", turns(3))
    const before = executed.length
    expect(await store.getPending("c")).toEqual(req)
    expect(executed.slice(before)).toEqual([
      "SELECT pending, pending_id, pending_kind FROM tnx_conversations WHERE id = ?",
    ])
    await store.claimAnswer("c", { id: req.id, ok: true })
    expect(raw).toEqual([expect.stringContaining("LEFT JOIN tnx_requests r ON r.request_id = @answer")])
    expect(await store.get("c")).toEqual(turns(3))
    await store.close()
  })

  it("a claim taken by a store that pointed the conversation at it (schema 6 before this change) is fenced and consumed", async () => {
    const { db } = countedDatabase()
    const store = new SqliteStore({ db })
    const req = await parked(store, "c", turns(3))
    const claim = await store.claimAnswer("c", { id: req.id, ok: true })
    // What such a store wrote besides the request row.
    db.prepare("UPDATE tnx_conversations SET claim_token = ?, claim_request_id = ? WHERE id = 'c'").run(
      claim.token,
      req.id,
    )
    await store.save("c", turns(4), { claim: claim.token, checkpoint: true })
    await store.save("c", turns(5), { claim: claim.token, pending: null })
    expect(
      db.prepare("SELECT claim_token, claim_request_id, consumed_id FROM tnx_conversations").get(),
    ).toEqual({
      claim_token: null,
      claim_request_id: null,
      consumed_id: req.id,
    })
    expect(await store.getDecision(req.id)).toMatchObject({ ok: true })
    await store.close()
  })

  it("a load in a later event-loop turn reads what another writer saved meanwhile", async () => {
    const { db, executed } = countedDatabase()
    const store = new SqliteStore({ db })
    const other = new SqliteStore({ db })
    const req = await parked(store, "c", turns(3))
    await store.claimAnswer("c", { id: req.id, ok: true })
    await nextTurn()
    await other.save("c", turns(5))
    const before = executed.length
    expect(await store.get("c")).toEqual(turns(5))
    expect(executed.length).toBeGreaterThan(before)
    await store.close()
    await other.close()
  })

  it("a load after the claim's promise jobs have run (a tick later, same event-loop turn) reads the database", async () => {
    const { db, executed } = countedDatabase()
    const store = new SqliteStore({ db })
    const other = new SqliteStore({ db })
    const req = await parked(store, "c", turns(3))
    await store.claimAnswer("c", { id: req.id, ok: true })
    // Scheduled after the claim's own drop, so it runs after it; no I/O phase in between.
    await new Promise<void>((resolve) => process.nextTick(resolve))
    await other.save("c", turns(5))
    const before = executed.length
    expect(await store.get("c")).toEqual(turns(5))
    expect(executed.length).toBeGreaterThan(before)
    await store.close()
    await other.close()
  })

  it("a save or a release before the load drops the claim's read", async () => {
    const { db } = countedDatabase()
    const store = new SqliteStore({ db })
    const other = new SqliteStore({ db })
    const req = await parked(store, "c", turns(3))
    const claim = await store.claimAnswer("c", { id: req.id, ok: true })
    await store.save("c", turns(4), { claim: claim.token, checkpoint: true })
    expect(await store.get("c")).toEqual(turns(4))

    const req2 = await parked(store, "d", turns(2))
    const claim2 = await store.claimAnswer("d", { id: req2.id, ok: true })
    await store.releaseClaim("d", claim2.token)
    // Written behind the store's back in the same turn: a kept read would hide it.
    await other.save("d", turns(6))
    expect(await store.get("d")).toEqual(turns(6))
    await store.close()
    await other.close()
  })

  it("a claim of a conversation without messages, and a refused claim, keep nothing stale", async () => {
    const { db } = countedDatabase()
    const store = new SqliteStore({ db })
    const other = new SqliteStore({ db })
    const req = await parked(store, "empty", [])
    await store.claimAnswer("empty", { id: req.id, ok: true })
    expect(await store.get("empty")).toEqual([])

    const req2 = await parked(store, "e", turns(2))
    await expect(store.claimAnswer("e", { id: "not-the-request", ok: true })).rejects.toThrow()
    await other.save("e", turns(4))
    expect(await store.get("e")).toEqual(turns(4))
    // The request is still open: the right answer is granted, with the transcript as stored.
    await store.claimAnswer("e", { id: req2.id, ok: true })
    expect(await store.get("e")).toEqual(turns(4))
    await store.close()
    await other.close()
  })

  it("a claim on a database without the conversation reads the request on its own", async () => {
    const { db } = countedDatabase()
    const store = new SqliteStore({ db })
    await expect(store.claimAnswer("missing", { id: "req-x", ok: true })).rejects.toMatchObject({
      name: "UnknownRequestError",
    })
    await store.close()
  })

  it("a checkpoint that replaces the placeholder is fenced by the claim and by the stored version", async () => {
    const { db } = countedDatabase()
    const store = new SqliteStore({ db })
    const other = new SqliteStore({ db })
    const repaired = (messages: Message[]) => [
      ...messages.slice(0, -1),
      { role: "user" as const, content: "fixed" },
    ]

    // Held: one statement writes the row, the repaired message replaces the stored one.
    const req = await parked(store, "c", turns(3))
    const claim = await store.claimAnswer("c", { id: req.id, ok: true })
    const loaded = (await store.get("c")) as Message[]
    await store.save("c", repaired(loaded), { claim: claim.token, checkpoint: true })
    expect(await other.get("c")).toEqual(repaired(turns(3)))
    expect(await other.getPending("c")).toEqual(req)

    // Released (the token is revoked): the fenced checkpoint is refused and nothing is written.
    const req2 = await parked(store, "d", turns(3))
    const claim2 = await store.claimAnswer("d", { id: req2.id, ok: true })
    const loaded2 = (await store.get("d")) as Message[]
    await store.releaseClaim("d", claim2.token)
    await expect(
      store.save("d", repaired(loaded2), { claim: claim2.token, checkpoint: true }),
    ).rejects.toMatchObject({
      name: "AnswerConflictError",
      message: expect.stringContaining("no longer held"),
    })
    expect(await other.get("d")).toEqual(turns(3))

    // Another writer appended meanwhile: the cached version is stale, so the save compares the
    // stored rows instead of keeping the other writer's message behind the new end.
    const req3 = await parked(store, "e", turns(3))
    const claim3 = await store.claimAnswer("e", { id: req3.id, ok: true })
    const loaded3 = (await store.get("e")) as Message[]
    await other.save("e", [...turns(3), { role: "user", content: "behind its back" }])
    await store.save("e", repaired(loaded3), { claim: claim3.token, checkpoint: true })
    expect(await other.get("e")).toEqual(repaired(turns(3)))
    await store.close()
    await other.close()
  })
})
