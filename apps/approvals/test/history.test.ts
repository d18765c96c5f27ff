import { afterAll, describe, expect, it } from "vitest"
import { createHistory, type HistoryEntry } from "../src/history.js"
import { sqliteFiles } from "./support.js"

const files = sqliteFiles()
afterAll(() => files.cleanup())

function entry(n: number, extra: Partial<HistoryEntry> = {}): HistoryEntry {
  return {
    requestId: `pnd-${n}`,
    runId: `run-${n}`,
    kind: "approval",
    prompt: `Refund order H-${n}?`,
    answeredBy: "alice",
    via: "page",
    answeredAt: new Date(Date.UTC(2026, 11, 1, 8, 0, n)).toISOString(),
    decision: { ok: true },
    outcome: { status: "done" },
    ...extra,
  }
}
const ids = (entries: HistoryEntry[]) => entries.map((e) => e.requestId)

describe("the history store", () => {
  it("writes pages, keeps the newest ones, and carries on after a restart", async () => {
    const store = files.store()
    const history = createHistory({ store, writerId: "w1", pageSize: 2, keepPages: 2 })
    for (const n of [1, 2, 3, 4, 5]) await history.record(entry(n))
    // Pages [1,2] [3,4] [5]: only two are kept, and the dropped one is gone from the store.
    expect(ids(await history.list())).toEqual(["pnd-5", "pnd-4", "pnd-3"])
    expect(await store.getSnapshot("approvals:history:page:w1:0")).toBeUndefined()

    const restarted = createHistory({ store, writerId: "w1", pageSize: 2, keepPages: 2 })
    await restarted.record(entry(6))
    expect(ids(await restarted.list())).toEqual(["pnd-6", "pnd-5", "pnd-4", "pnd-3"])
  })

  it("a later record of a request replaces the earlier one, also across pages", async () => {
    const history = createHistory({ store: files.store(), pageSize: 2 })
    await history.record(entry(1, { outcome: { status: "error", error: "HTTP 500" } }))
    await history.record(entry(2))
    await history.record(entry(3))
    await history.record({ ...entry(1), answeredAt: new Date(Date.UTC(2026, 11, 1, 9)).toISOString() })
    const listed = await history.list()
    expect(ids(listed)).toEqual(["pnd-1", "pnd-3", "pnd-2"])
    expect(listed[0]?.outcome).toEqual({ status: "done" })
  })

  it("writers on one store see each other's entries, and the version moves with every answer", async () => {
    const store = files.store()
    const a = createHistory({ store, writerId: "a" })
    const b = createHistory({ store, writerId: "b" })
    const before = await a.version()
    await Promise.all([a.record(entry(1)), b.record(entry(2)), a.record(entry(3)), b.record(entry(4))])
    expect(ids(await a.list())).toEqual(["pnd-4", "pnd-3", "pnd-2", "pnd-1"])
    expect(ids(await b.list({ limit: 2 }))).toEqual(["pnd-4", "pnd-3"])
    const after = await b.version()
    expect(after).not.toBe(before)
    await b.record(entry(5))
    expect(await a.version()).not.toBe(after)
  })
})
