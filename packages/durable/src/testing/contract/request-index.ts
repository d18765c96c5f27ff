import { setTimeout as sleep } from "node:timers/promises"
import { type Answer, AnswerConflictError, ConfigError, UnknownRequestError } from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import type { DurableStore } from "../../durable-store.js"
import { RuntimeHeldError } from "../../errors.js"
import { type ContractContext, uid, turns, request } from "./context.js"

/** @internal Registers this topic of `describeStoreContract` for one backend. */
export function describeRequestIndex({ open }: ContractContext): void {
  describe("request index", () => {
    /** Parks one request on a three-level tree: the leaf saves first, as a cascade does. */
    async function parkTree(store: DurableStore) {
      const base = uid("tree")
      const ids = [`${base}/lead.1`, `${base}/lead.1/mid.1`, `${base}/lead.1/mid.1/asker.1`]
      const leaf = request(uid("kind"))
      const escalated = { ...leaf, data: { ...leaf.data, path: ["root", "lead.1", "mid.1", "asker.1"] } }
      await store.save(ids[2] as string, turns(2), { pending: leaf })
      for (const id of [ids[1], ids[0]]) await store.save(id as string, turns(2), { pending: escalated })
      return { ids, leaf, escalated }
    }

    it("lists a request held by a whole tree once, with its deepest holder", async () => {
      const store = await open()
      const { ids, leaf } = await parkTree(store)
      const listed = await store.listPending({ kind: leaf.kind })
      expect(listed).toEqual([
        {
          request: { ...leaf, data: { ...leaf.data, path: ["root", "lead.1", "mid.1", "asker.1"] } },
          conversationId: ids[2],
          path: ["root", "lead.1", "mid.1", "asker.1"],
          since: expect.any(String),
          attempts: 0,
          state: "open",
        },
      ])
      expect(await (await open()).findRequest(leaf.id)).toEqual(listed[0])
      expect(await store.findRequest(uid("req"))).toBeUndefined()
    })

    it("records a saved runtime's holds and replaces them on the next save", async () => {
      const store = await open()
      const { ids, leaf } = await parkTree(store)
      const key = uid("runtime")
      const path = ["root", "lead.1", "mid.1", "asker.1"]
      await store.putSnapshot(
        key,
        { v: 1 },
        { holds: [{ requestId: leaf.id, conversationId: ids[2] as string, path }] },
      )
      expect(await store.findRequest(leaf.id)).toMatchObject({
        runtimeKey: key,
        conversationId: ids[2],
        path,
      })
      expect(await store.getSnapshot(key)).toEqual({ v: 1 })
      await store.putSnapshot(key, { v: 2 }, { holds: [] })
      expect((await store.findRequest(leaf.id))?.runtimeKey).toBeUndefined()
      await expect(
        store.putSnapshot(key, {}, { holds: [{ requestId: "", conversationId: "c" }] }),
      ).rejects.toBeInstanceOf(ConfigError)
    })

    it("claims per request id: one claim across the tree, and once applied refused everywhere with the decision", async () => {
      const store = await open()
      const other = await open()
      const { ids, leaf } = await parkTree(store)
      const answer: Answer = { id: leaf.id, ok: false, reason: "declined" }
      const claim = await store.claimAnswer(ids[0] as string, answer)
      expect((await store.findRequest(leaf.id))?.state).toBe("claimed")
      for (const id of ids.slice(1)) {
        await expect(other.claimAnswer(id, { id: leaf.id, ok: true })).rejects.toThrow(/another delivery/)
      }
      // The leaf moves on unfenced (as a cascade's first save does); the claim still holds.
      await store.save(ids[2] as string, turns(3), { pending: null })
      await expect(other.claimAnswer(ids[2] as string, { id: leaf.id, ok: true })).rejects.toBeInstanceOf(
        AnswerConflictError,
      )
      await store.save(ids[1] as string, turns(3), { pending: null })
      await store.save(ids[0] as string, turns(3), { pending: null, claim: claim.token })
      expect(await store.findRequest(leaf.id)).toBeUndefined()
      expect(await other.getDecision(leaf.id)).toEqual({ ok: false, reason: "declined" })
      for (const id of [...ids, uid("elsewhere")]) {
        await expect(other.claimAnswer(id, { id: leaf.id, ok: true })).rejects.toMatchObject({
          name: "AnswerConflictError",
          decision: { ok: false, reason: "declined" },
        })
      }
      expect(await store.getDecision(uid("req"))).toBeUndefined()
    })

    it("refuses a runtime-held request to a plain claim with RuntimeHeldError and claims nothing", async () => {
      const store = await open()
      const { ids, leaf } = await parkTree(store)
      const key = uid("runtime")
      await store.putSnapshot(key, {}, { holds: [{ requestId: leaf.id, conversationId: ids[2] as string }] })
      for (const id of ids) {
        const attempt = store.claimAnswer(id, { id: leaf.id, ok: true })
        await expect(attempt).rejects.toBeInstanceOf(RuntimeHeldError)
        await expect(attempt).rejects.toMatchObject({ runtimeKey: key, code: "TNX_RUNTIME_HELD" })
      }
      expect(await store.findRequest(leaf.id)).toMatchObject({ state: "open", attempts: 0 })
      await expect(
        store.claimAnswer(ids[0] as string, { id: leaf.id, ok: true }, { runtimeKey: uid("other") }),
      ).rejects.toBeInstanceOf(RuntimeHeldError)
      const claim = await store.claimAnswer(ids[0] as string, { id: leaf.id, ok: true }, { runtimeKey: key })
      expect(claim.takeover).toBe(false)
    })

    it("counts an attempt per claim, takeovers included", async () => {
      const store = await open()
      const id = uid("attempts")
      const req = request("approval")
      await store.save(id, turns(1), { pending: req })
      const first = await store.claimAnswer(id, { id: req.id, ok: true })
      await store.releaseClaim(id, first.token)
      await store.claimAnswer(id, { id: req.id, ok: true })
      expect(await store.findRequest(req.id)).toMatchObject({
        attempts: 2,
        state: "claimed",
        conversationId: id,
      })
      expect(await store.listFailed()).toEqual([])
      expect(await store.listFailed({ limit: 0 })).toEqual([])
    })

    it("orders by since then request id, pages with after and limit", async () => {
      const store = await open()
      const kind = uid("kind")
      const requests = [request(kind), request(kind), request(kind)]
      for (const req of requests) {
        await store.save(uid("page"), turns(1), { pending: req })
        await sleep(15)
      }
      const all = await store.listPending({ kind })
      expect(all.map((e) => e.request.id)).toEqual(requests.map((r) => r.id))
      const first = await store.listPending({ kind, limit: 1 })
      expect(first.map((e) => e.request.id)).toEqual([requests[0]?.id])
      const rest = await store.listPending({ kind, after: first[0]?.request.id })
      expect(rest.map((e) => e.request.id)).toEqual([requests[1]?.id, requests[2]?.id])
      expect(await store.listPending({ kind, after: requests[2]?.id })).toEqual([])
      await expect(store.listPending({ after: "" })).rejects.toBeInstanceOf(ConfigError)
    })

    it("deleteConversation removes the conversation with its request and claim", async () => {
      const store = await open()
      const id = uid("delete")
      const req = request("approval")
      await store.save(id, turns(3), { pending: req })
      await store.claimAnswer(id, { id: req.id, ok: true })
      await store.deleteConversation(id)
      const fresh = await open()
      expect(await fresh.get(id)).toBeUndefined()
      expect(await fresh.getPending(id)).toBeUndefined()
      expect(await fresh.findRequest(req.id)).toBeUndefined()
      expect((await fresh.listExpiredClaims()).some((c) => c.id === id)).toBe(false)
      await expect(fresh.claimAnswer(id, { id: req.id, ok: true })).rejects.toBeInstanceOf(
        UnknownRequestError,
      )
      // The id can be used again from scratch, and deleting an unknown id is a no-op.
      await store.save(id, turns(1))
      expect(await (await open()).get(id)).toEqual(turns(1))
      await store.deleteConversation(uid("never"))
      await expect(store.deleteConversation("")).rejects.toBeInstanceOf(ConfigError)
    })
  })
}
