import type { ApprovalGrant } from "@toolnexus/core"
import { expect, it } from "vitest"
import { findGrant, listGrants, recordGrant, revokeGrant } from "../src/host/grants.js"
import { MemoryData, MemoryStore } from "../src/memory/memory-store.js"

const grant = (n: number, conversationId = `c-${n}`): ApprovalGrant => ({
  id: `grant-r-${n}`,
  tool: "pay",
  scope: "conversation",
  conversationId,
  grantedBy: `r-${n}`,
  createdAt: "2030-01-01T00:00:00.000Z",
})

it("two processes recording grants into one store keep every one, in order; a newer grant replaces its scope's", async () => {
  const data = new MemoryData()
  const one = new MemoryStore({}, data)
  for (let n = 0; n < 5; n++) await recordGrant(one, grant(n))
  // A second process starts with no hint: it finds the first free log slot and takes it.
  const two = new MemoryStore({}, data)
  await recordGrant(two, grant(5))
  await recordGrant(one, grant(6))
  expect((await listGrants(two)).map((g) => g.id)).toEqual([0, 1, 2, 3, 4, 5, 6].map((n) => `grant-r-${n}`))
  // The same conversation and tool again: the newer grant is the one in force.
  await recordGrant(two, grant(7, "c-1"))
  expect((await findGrant(one, { tool: "pay", conversationId: "c-1" }))?.id).toBe("grant-r-7")
  expect((await listGrants(one, { conversationId: "c-1" })).map((g) => g.id)).toEqual(["grant-r-7"])
  expect(await revokeGrant(one, "grant-r-7")).toBe(true)
  expect(await findGrant(two, { tool: "pay", conversationId: "c-1" })).toBeUndefined()
  expect(await listGrants(two, { tool: "other" })).toEqual([])
})
