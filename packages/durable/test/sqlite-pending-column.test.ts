import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SchemaVersionError } from "@toolnexus/core"
import Database from "better-sqlite3"
import { describe, expect, it } from "vitest"
import { SqliteStore } from "../src/sqlite/index.js"
import { SQLITE_MIGRATIONS } from "../src/sqlite/migrations.js"
import { packPending, stampedRequest, unpackPending } from "../src/sqlite/pending-column.js"

const ID = "pnd-0b5c2f4e-7c1d-4a55-9a3e-1f2d3c4b5a69"

function roundTrip(request: Record<string, unknown>) {
  const json = JSON.stringify(request)
  const packed = packPending(json, request.id as string, request.kind as string)
  const back = unpackPending(packed, request.id as string, request.kind as string)
  return { json, packed, back }
}

describe("the SQLite pending column", () => {
  it("drops the id and kind the row's own columns hold, and puts them back", () => {
    const request = { id: ID, kind: "approval", prompt: "approve lookup?", data: { callId: "c1", args: {} } }
    const { json, packed, back } = roundTrip(request)
    expect(packed).toBe('{"prompt":"approve lookup?","data":{"callId":"c1","args":{}}}')
    expect((packed as string).length).toBe(
      json.length - `"id":${JSON.stringify(ID)},"kind":"approval",`.length,
    )
    expect(back).toBe(json)
  })

  it("round-trips a request with only an id and a kind, and ids or kinds that need escaping", () => {
    expect(roundTrip({ id: ID, kind: "approval" })).toMatchObject({
      packed: "{}",
      back: `{"id":"${ID}","kind":"approval"}`,
    })
    const odd = { id: 'a"b\\c', kind: "ki\u00e9nd\n", prompt: "p" }
    const { back } = roundTrip(odd)
    expect(JSON.parse(back as string)).toEqual(odd)
  })

  it("reads a whole request (an older row) as it is", () => {
    const whole = JSON.stringify({ id: ID, kind: "approval", prompt: "p" })
    expect(unpackPending(whole, ID, "approval")).toBe(whole)
  })

  it("stores a request of another key order whole, so it parses to the same request", () => {
    const request = { kind: "approval", prompt: "p", id: ID }
    const { packed, back } = roundTrip(request)
    expect(packed?.startsWith('{"id":')).toBe(true)
    expect(JSON.parse(back as string)).toEqual(request)
  })

  it("keeps the whole text when the columns do not match its id or kind", () => {
    const json = JSON.stringify({ id: ID, kind: "approval", prompt: "p" })
    expect(packPending(json, "other", "approval")).toBe(json)
    expect(packPending(json, ID, "question")).toBe(json)
  })

  it("passes null through, and leaves text alone when a column is null", () => {
    expect(packPending(null, null, null)).toBeNull()
    expect(unpackPending(null, ID, "approval")).toBeNull()
    expect(unpackPending('{"prompt":"p"}', null, null)).toBe('{"prompt":"p"}')
  })
})

describe("the stamped form of the pending column (form 3)", () => {
  const golden = JSON.parse(
    readFileSync(join(import.meta.dirname, "fixtures", "sqlite-pending-column.json"), "utf8"),
  ) as {
    rows: {
      form: number
      pending_id: string
      pending_kind: string
      pending: string
      request: Record<string, unknown>
    }[]
  }

  it("reads every golden form back to its request, and writes form 3 as the golden text", () => {
    for (const row of golden.rows) {
      const back = unpackPending(row.pending, row.pending_id, row.pending_kind)
      expect(back).toBe(JSON.stringify(row.request))
      if (row.form === 3) {
        expect(packPending(JSON.stringify(row.request), row.pending_id, row.pending_kind)).toBe(row.pending)
      }
    }
  })

  it("stores a tool suspension's request without key names, byte for byte the same when read", () => {
    const request = {
      id: ID,
      kind: "approval",
      prompt: "approve lookup?",
      data: { callId: "call_2", tool: "lookup", args: {} },
    }
    const { packed, back } = roundTrip(request)
    expect(packed).toBe('["approve lookup?","call_2","lookup",{}]')
    expect(back).toBe(JSON.stringify(request))
  })

  it("keeps the tool's own data keys, and their order, in a fifth element", () => {
    const request = {
      id: ID,
      kind: "approval",
      prompt: "p",
      data: { callId: "c", tool: "t", args: { a: 1 }, runId: "run-1", note: { deep: [1, "x"] } },
    }
    const { packed, back } = roundTrip(request)
    expect(packed).toBe('["p","c","t",{"a":1},{"runId":"run-1","note":{"deep":[1,"x"]}}]')
    expect(back).toBe(JSON.stringify(request))
  })

  it("falls back to the keyed form for any request the stamped form cannot give back exactly", () => {
    const keyed = (request: Record<string, unknown>) => roundTrip(request).packed?.startsWith("{")
    // Other top-level keys, stamps missing or out of order, a stamp that is not a string.
    expect(
      keyed({ id: ID, kind: "k", prompt: "p", data: { callId: "c", tool: "t", args: {} }, url: "https://x" }),
    ).toBe(true)
    expect(keyed({ id: ID, kind: "k", prompt: "p", data: { callId: "c", args: {} } })).toBe(true)
    expect(keyed({ id: ID, kind: "k", prompt: "p", data: { tool: "t", callId: "c", args: {} } })).toBe(true)
    expect(keyed({ id: ID, kind: "k", prompt: "p", data: { callId: "c", tool: 1, args: {} } })).toBe(true)
    expect(keyed({ id: ID, kind: "k", data: { callId: "c", tool: "t", args: {} }, prompt: "p" })).toBe(true)
    for (const request of [
      { id: ID, kind: "k", prompt: "p", data: { callId: "c", tool: "t", args: {} }, url: "https://x" },
      { id: ID, kind: "k", prompt: "p", data: { tool: "t", callId: "c", args: {} } },
    ]) {
      expect(roundTrip(request).back).toBe(JSON.stringify(request))
    }
  })

  it("leaves a text that is not a stamped form as it is, for the reader to refuse", () => {
    expect(unpackPending('["p","c"]', ID, "approval")).toBe('["p","c"]')
    expect(unpackPending("[not json", ID, "approval")).toBe("[not json")
    expect(unpackPending('["p","c","t",{},[1]]', ID, "approval")).toBe('["p","c","t",{},[1]]')
  })

  it("is what SqliteStore writes for a parked tool call, and a golden row reads through every reader", async () => {
    const db = new Database(":memory:")
    const store = new SqliteStore({ db })
    const messages = [{ role: "user" as const, content: "go" }]
    const [first, second] = golden.rows as [(typeof golden.rows)[0], (typeof golden.rows)[0]]
    await store.save("conv", messages, { pending: first.request as never })
    const stored = db.prepare("SELECT pending FROM tnx_conversations WHERE id = 'conv'").get() as {
      pending: string
    }
    expect(stored.pending).toBe(first.pending)
    // A row as the golden fixture holds it (written by this version) reads back whole.
    await store.save("other", messages, { pending: { ...second.request, id: "pnd-x" } as never })
    db.prepare(
      "UPDATE tnx_conversations SET pending = ?, pending_id = ?, pending_kind = ? WHERE id = 'other'",
    ).run(second.pending, second.pending_id, second.pending_kind)
    expect(await store.getPending("other")).toEqual(second.request)
    expect((await store.findRequest(second.pending_id))?.request).toEqual(second.request)
    expect((await store.listPending({ kind: "question" })).map((e) => e.request)).toEqual([second.request])
    await store.close()
    db.close()
  })
})

describe("a stamped request read without its JSON text (stampedRequest)", () => {
  const golden = JSON.parse(
    readFileSync(join(import.meta.dirname, "fixtures", "sqlite-pending-column.json"), "utf8"),
  ) as { rows: { form: number; pending_id: string; pending_kind: string; pending: string }[] }

  it("is the request the text reader parses, key for key and in the same order; other forms read as text", () => {
    let stamped = 0
    for (const row of golden.rows) {
      const request = stampedRequest(row.pending, row.pending_id, row.pending_kind)
      const text = unpackPending(row.pending, row.pending_id, row.pending_kind) as string
      if (row.form !== 3) {
        expect(request).toBeUndefined()
        continue
      }
      stamped++
      expect(request).toEqual(JSON.parse(text))
      expect(JSON.stringify(request)).toBe(text)
    }
    expect(stamped).toBeGreaterThan(0)
    // Not a stamped form: left to the text reader, which refuses it.
    for (const text of ['["p","c"]', "[not json", '["p","c","t",{},[1]]', '{"prompt":"p"}'])
      expect(stampedRequest(text, ID, "approval")).toBeUndefined()
    expect(stampedRequest('["p","c","t",{}]', null, "approval")).toBeUndefined()
  })

  it("getPending and the claim give the request as saved; a broken stamped text is still corrupt", async () => {
    const db = new Database(":memory:")
    const store = new SqliteStore({ db })
    const request = {
      id: ID,
      kind: "approval",
      prompt: "p",
      data: { callId: "c", tool: "t", args: { a: [1, { b: null }] }, runId: "run-1", note: "n" },
    }
    const messages = [{ role: "user" as const, content: "go" }]
    await store.save("conv", messages, { pending: request })
    expect(JSON.stringify(await store.getPending("conv"))).toBe(JSON.stringify(request))
    const claim = await store.claimAnswer("conv", { id: ID, ok: true, data: { when: "now" } })
    expect(JSON.stringify(claim.request)).toBe(JSON.stringify(request))
    expect(claim.answer).toEqual({ id: ID, ok: true, data: { when: "now" } })
    await store.save("bad", messages, { pending: { ...request, id: "pnd-bad" } })
    db.prepare("UPDATE tnx_conversations SET pending = '[\"p\",\"c\"]' WHERE id = 'bad'").run()
    await expect(store.getPending("bad")).rejects.toMatchObject({ name: "CorruptDataError" })
    await store.close()
    db.close()
  })
})

describe("the schema version of the stamped form (migration 6)", () => {
  it("a version-5 database's parked run reads after the upgrade; a version-5 store then refuses the file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tnx-pending-form-"))
    const file = join(dir, "v5.db")
    const request = {
      id: ID,
      kind: "approval",
      prompt: "approve lookup?",
      data: { callId: "c1", tool: "t", args: {} },
    }
    try {
      // Parked by a version-5 store, whose pending column held the keyed form (2).
      const old = new SqliteStore({ path: file, migrations: SQLITE_MIGRATIONS.slice(0, 5) })
      await old.save("conv", [{ role: "user", content: "go" }], { pending: request })
      await old.close()
      const raw = new Database(file)
      raw
        .prepare("UPDATE tnx_conversations SET pending = ? WHERE id = 'conv'")
        .run('{"prompt":"approve lookup?","data":{"callId":"c1","tool":"t","args":{}}}')
      expect(raw.prepare("SELECT value FROM tnx_meta WHERE key = 'schema_version'").get()).toEqual({
        value: "5",
      })
      raw.close()
      const store = new SqliteStore({ path: file })
      expect(await store.getPending("conv")).toEqual(request)
      await store.save("conv2", [{ role: "user", content: "go" }], { pending: { ...request, id: "pnd-2" } })
      await store.close()
      const db = new Database(file)
      const rows = db.prepare("SELECT id, pending FROM tnx_conversations ORDER BY id").all()
      const version = db.prepare("SELECT value FROM tnx_meta WHERE key = 'schema_version'").get()
      db.close()
      expect(rows).toEqual([
        { id: "conv", pending: '{"prompt":"approve lookup?","data":{"callId":"c1","tool":"t","args":{}}}' },
        { id: "conv2", pending: '["approve lookup?","c1","t",{}]' },
      ])
      expect(version).toEqual({ value: "6" })
      // A store that cannot read form 3 stops at open, not at the first parked run it reads.
      const stale = new SqliteStore({ path: file, migrations: SQLITE_MIGRATIONS.slice(0, 5) })
      await expect(stale.getPending("conv2")).rejects.toBeInstanceOf(SchemaVersionError)
      await stale.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("SqliteStore's pending column", () => {
  const request = {
    id: ID,
    kind: "approval",
    prompt: "approve lookup?",
    data: { callId: "c1", tool: "t", args: {} },
  }
  const messages = [{ role: "user" as const, content: "go" }]

  it("stores the request once per row and reads it back whole through every reader", async () => {
    const db = new Database(":memory:")
    const store = new SqliteStore({ db })
    await store.save("conv", messages, { pending: request })
    const raw = db.prepare("SELECT pending FROM tnx_conversations WHERE id = 'conv'").get() as {
      pending: string
    }
    expect(raw.pending).not.toContain(ID)
    expect(await store.getPending("conv")).toEqual(request)
    expect((await store.listPending()).map((e) => e.request)).toEqual([request])
    // Parked by its first save: the wait began with the conversation, and is read from it.
    const times = db.prepare("SELECT pending_since, created_at FROM tnx_conversations").get() as {
      pending_since: number | null
      created_at: number
    }
    expect(times.pending_since).toBeNull()
    const since = (await store.listPending())[0]?.since
    expect(since).toBe(new Date(times.created_at).toISOString())
    // A later save that keeps the request keeps when it began.
    await store.save("conv", [...messages, { role: "user", content: "more" }])
    expect((await store.listPending())[0]?.since).toBe(since)
    expect((await store.findRequest(ID))?.request).toEqual(request)
    const claim = await store.claimAnswer("conv", { id: ID, ok: true })
    expect(claim.request).toEqual(request)
    // A released claim is expired at once: the sweeper's listing reads the request too.
    await store.releaseClaim("conv", claim.token)
    expect((await store.listExpiredClaims()).map((c) => c.request)).toEqual([request])
    await store.close()
    db.close()
  })

  it("reads a row an older version wrote with the whole request", async () => {
    const db = new Database(":memory:")
    const store = new SqliteStore({ db })
    await store.save("conv", messages, { pending: request })
    db.prepare("UPDATE tnx_conversations SET pending = ? WHERE id = 'conv'").run(JSON.stringify(request))
    expect(await store.getPending("conv")).toEqual(request)
    expect((await store.listPending())[0]?.request).toEqual(request)
    const stored = () =>
      (db.prepare("SELECT pending FROM tnx_conversations WHERE id = 'conv'").get() as { pending: string })
        .pending
    // A save that only appends messages leaves the row as it is.
    await store.save("conv", [...messages, { role: "user", content: "more" }])
    expect(stored()).toBe(JSON.stringify(request))
    expect(await store.getPending("conv")).toEqual(request)
    // A save that writes the row and keeps the request stores it in the short form, same content.
    await store.save("conv", messages)
    expect(stored()).not.toContain(ID)
    expect(await store.getPending("conv")).toEqual(request)
    await store.close()
    db.close()
  })
})
