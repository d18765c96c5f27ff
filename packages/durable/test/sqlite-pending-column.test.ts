import Database from "better-sqlite3"
import { describe, expect, it } from "vitest"
import { SqliteStore } from "../src/sqlite/index.js"
import { packPending, unpackPending } from "../src/sqlite/pending-column.js"

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
