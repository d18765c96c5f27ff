import { readFileSync, writeFileSync } from "node:fs"
import { type ApprovalGrant, SchemaVersionError } from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import { findGrant, listGrants, recordGrant, revokeGrant } from "../src/host/grants.js"
import { type DurableStore, createMemoryStore } from "../src/index.js"

// Approval grants live in a store's snapshots (the grant, a pointer per scope and tool, a log
// of ids) and outlive the hosts that wrote them (DESIGN §17 "formats are contracts", §19).
// The fixtures were written once (TOOLNEXUS_WRITE_GOLDEN=1, which never overwrites one) by `recordGrant`:
// fixtures/grants/unversioned.json before the records carried `v` (read as v1), v1.json today's.
// Both are read forever, never regenerated.

const UNVERSIONED = new URL("./fixtures/grants/unversioned.json", import.meta.url)
const V1 = new URL("./fixtures/grants/v1.json", import.meta.url)

const BY_CONVERSATION: ApprovalGrant = {
  id: "grant-req-golden-1",
  tool: "refund",
  scope: "conversation",
  conversationId: "conv-golden",
  grantedBy: "req-golden-1",
  createdAt: "2026-01-01T00:00:00.000Z",
}
const BY_PRINCIPAL: ApprovalGrant = {
  id: "grant-req-golden-2",
  tool: "ship",
  scope: "principal",
  principal: "alice",
  grantedBy: "req-golden-2",
  createdAt: "2026-01-01T00:01:00.000Z",
}
const KEYS = [
  "tnx-grant-log/0",
  "tnx-grant-log/1",
  `tnx-grant/${BY_CONVERSATION.id}`,
  `tnx-grant/${BY_PRINCIPAL.id}`,
  "tnx-grant-for/conversation/conv-golden/refund",
  "tnx-grant-for/principal/alice/ship",
]

async function storeWith(snapshots: Record<string, unknown>): Promise<DurableStore> {
  const store = createMemoryStore()
  for (const [key, value] of Object.entries(snapshots)) await store.putSnapshot(key, value)
  return store
}
const read = (url: URL) => JSON.parse(readFileSync(url, "utf8")) as Record<string, unknown>

describe("the approval grant records", () => {
  it.runIf(process.env.TOOLNEXUS_WRITE_GOLDEN === "1")("writes the golden records (once)", async () => {
    const store = createMemoryStore()
    await recordGrant(store, BY_CONVERSATION)
    await recordGrant(store, BY_PRINCIPAL)
    const golden: Record<string, unknown> = {}
    for (const key of KEYS) golden[key] = await store.getSnapshot(key)
    const file = process.env.TOOLNEXUS_GOLDEN_FILE === "unversioned" ? UNVERSIONED : V1
    writeFileSync(file, `${JSON.stringify(golden, null, 2)}\n`, { flag: "wx" })
  })

  for (const [name, url] of [
    ["unversioned (read as v1)", UNVERSIONED],
    ["v1", V1],
  ] as const)
    it(`${name}: listed, found for a call and revoked by today's code`, async () => {
      const store = await storeWith(read(url))
      expect(await listGrants(store)).toEqual([BY_CONVERSATION, BY_PRINCIPAL])
      expect(await listGrants(store, { principal: "alice" })).toEqual([BY_PRINCIPAL])
      expect(await findGrant(store, { conversationId: "conv-golden", tool: "refund" })).toEqual(
        BY_CONVERSATION,
      )
      expect(await findGrant(store, { conversationId: "conv-golden", tool: "ship" })).toBeUndefined()
      expect(await revokeGrant(store, BY_CONVERSATION.id)).toBe(true)
      expect(await findGrant(store, { conversationId: "conv-golden", tool: "refund" })).toBeUndefined()
      expect(await listGrants(store)).toEqual([BY_PRINCIPAL])
    })

  it("refuses a record of an unknown version with SchemaVersionError naming it", async () => {
    const golden = read(V1)
    const key = `tnx-grant/${BY_CONVERSATION.id}`
    const store = await storeWith({ ...golden, [key]: { ...(golden[key] as object), v: 2 } })
    const refused = await listGrants(store).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(SchemaVersionError)
    expect(refused).toMatchObject({ found: 2, supported: [1] })
    expect((refused as Error).message).toContain(key)
    await expect(findGrant(store, { conversationId: "conv-golden", tool: "refund" })).rejects.toBeInstanceOf(
      SchemaVersionError,
    )
  })
})
