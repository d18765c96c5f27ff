import { readFileSync, writeFileSync } from "node:fs"
import { type Request, SchemaVersionError } from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import { type DurableStore, createMemoryStore, createNotificationOutbox } from "../src/index.js"

// What an outbox records per request (its state per notification kind, one record per
// attempt, a heartbeat, the raised warning) outlives the processes that wrote it (DESIGN §17
// "formats are contracts", §19). fixtures/notify/v1.json was written once
// (TOOLNEXUS_WRITE_GOLDEN=1) by an outbox on a virtual clock: a first attempt that failed, a
// retry that was delivered, and a raised expiry warning whose notification was delivered. It
// is read forever, never regenerated; so is unversioned.json, the same run's records before
// the attempt, heartbeat and warning records carried `v`.

const V1 = new URL("./fixtures/notify/v1.json", import.meta.url)
// The same records as written before the attempt, heartbeat and warning records carried `v` (read as v1).
const UNVERSIONED = new URL("./fixtures/notify/unversioned.json", import.meta.url)
const T0 = Date.UTC(2026, 0, 1)
const REQUEST: Request = {
  id: "req-notify-golden",
  kind: "approval",
  prompt: "Refund order 9?",
  expiresAt: new Date(T0 + 3_600_000).toISOString(),
}
const KEYS = [
  `tnx-notify/new/${REQUEST.id}`,
  `tnx-notify/expiring/${REQUEST.id}`,
  `tnx-notify-attempt/new/${REQUEST.id}/1`,
  `tnx-notify-attempt/new/${REQUEST.id}/2`,
  `tnx-notify-attempt/expiring/${REQUEST.id}/1`,
  `tnx-notify-beat/new/${REQUEST.id}`,
  `tnx-notify-beat/expiring/${REQUEST.id}`,
  `tnx-notify-warned/${REQUEST.id}`,
]

async function parkedStore(): Promise<DurableStore> {
  const store = createMemoryStore()
  await store.save("conv-notify-golden", [{ role: "user", content: "refund order 9" }], { pending: REQUEST })
  return store
}
const read = (url = V1) => JSON.parse(readFileSync(url, "utf8")) as Record<string, unknown>

describe("the notification delivery records, format v1", () => {
  it.runIf(process.env.TOOLNEXUS_WRITE_GOLDEN === "1")("writes the golden records (once)", async () => {
    const store = await parkedStore()
    let now = T0
    let fail = true
    const outbox = createNotificationOutbox(store, {
      clock: { now: () => now },
      warnBeforeMs: 600_000,
      notify: async () => {
        if (fail) throw new Error("pager down")
      },
    })
    await outbox.parked(REQUEST.id)
    fail = false
    now += 60_000
    await outbox.sweep()
    now = T0 + 3_600_000 - 300_000
    await outbox.sweep()
    const golden: Record<string, unknown> = {}
    for (const key of KEYS) golden[key] = await store.getSnapshot(key)
    const file = process.env.TOOLNEXUS_GOLDEN_FILE === "unversioned" ? UNVERSIONED : V1
    writeFileSync(file, `${JSON.stringify(golden, null, 2)}\n`, { flag: "wx" })
  })

  for (const [name, url] of [
    ["unversioned (read as v1)", UNVERSIONED],
    ["v1", V1],
  ] as const)
    it(`${name}: read by today's outbox: attempts, delivery and the warning`, async () => {
      const store = await parkedStore()
      for (const [key, value] of Object.entries(read(url))) await store.putSnapshot(key, value)
      const sent: string[] = []
      const outbox = createNotificationOutbox(store, {
        clock: { now: () => T0 + 3_600_000 - 60_000 },
        warnBeforeMs: 600_000,
        notify: async (_entry, info) => {
          sent.push(`${info.kind}#${info.attempt}`)
        },
      })
      expect(await outbox.getDelivery(REQUEST.id)).toEqual({
        requestId: REQUEST.id,
        attempts: 2,
        lastAttemptAt: new Date(T0 + 60_000).toISOString(),
        deliveredAt: new Date(T0 + 60_000).toISOString(),
        expiring: {
          warnedAt: new Date(T0 + 3_300_000).toISOString(),
          attempts: 1,
          deliveredAt: new Date(T0 + 3_300_000).toISOString(),
        },
      })
      // Honoured: what was delivered is never sent again, and the warning is not raised twice.
      await outbox.parked(REQUEST.id)
      await outbox.sweep()
      expect(sent).toEqual([])
    })

  it("refuses a record of an unknown version with SchemaVersionError naming it", async () => {
    const store = await parkedStore()
    const golden = read()
    const key = `tnx-notify/new/${REQUEST.id}`
    for (const [k, value] of Object.entries({ ...golden, [key]: { ...(golden[key] as object), v: 2 } }))
      await store.putSnapshot(k, value)
    const outbox = createNotificationOutbox(store, { clock: { now: () => T0 } })
    const refused = await outbox.getDelivery(REQUEST.id).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(SchemaVersionError)
    expect(refused).toMatchObject({ found: 2, supported: [1] })
    expect((refused as Error).message).toContain(key)
  })
})
