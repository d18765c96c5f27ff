import { setTimeout as sleep } from "node:timers/promises"
import { describe, expect, it } from "vitest"
import { type ContractContext, uid, turns, request, PATHS, grow } from "./context.js"

/** @internal Registers this topic of `describeStoreContract` for one backend. */
export function describePending({ open }: ContractContext): void {
  describe("pending requests", () => {
    for (const path of PATHS) {
      it(`sets, keeps and clears the pending request (${path})`, async () => {
        const store = await open()
        const id = uid("pending")
        const req = request("approval")
        let transcript = turns(2)
        await store.save(id, transcript, { pending: req })
        expect(await store.getPending(id)).toEqual(req)
        transcript = grow[path](transcript, 3)
        await store.save(id, transcript)
        expect(await (await open()).getPending(id)).toEqual(req)
        transcript = grow[path](transcript, 3)
        await store.save(id, transcript, {})
        expect(await store.getPending(id)).toEqual(req)
        const since = (await store.listPending({ kind: "approval" })).find(
          (entry) => entry.conversationId === id,
        )?.since
        await sleep(5)
        transcript = grow[path](transcript, 4)
        await store.save(id, transcript, { pending: req })
        const listed = (await store.listPending({ kind: "approval" })).find(
          (entry) => entry.conversationId === id,
        )
        expect(listed?.since).toBe(since)
        const next = request("input")
        transcript = grow[path](transcript, 5)
        await store.save(id, transcript, { pending: next })
        expect(await (await open()).getPending(id)).toEqual(next)
        transcript = grow[path](transcript, 6)
        await store.save(id, transcript, { pending: null })
        expect(await store.getPending(id)).toBeUndefined()
        expect(await (await open()).get(id)).toEqual(turns(6))
      })
    }

    it("lists pending requests oldest first, filtered by kind and limited", async () => {
      const store = await open()
      const kind = uid("kind")
      const ids = [uid("p0"), uid("p1"), uid("p2")]
      const requests = ids.map(() => request(kind))
      for (const [i, id] of ids.entries()) {
        await store.save(id, turns(1), { pending: requests[i] })
        await sleep(15)
      }
      await store.save(uid("other-kind"), turns(1), { pending: request(uid("kind")) })

      const listed = await store.listPending({ kind })
      expect(listed.map((entry) => entry.conversationId)).toEqual(ids)
      expect(listed.map((entry) => entry.request)).toEqual(requests)
      for (const entry of listed) {
        expect(entry.since).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/)
        expect(Math.abs(Date.parse(entry.since) - Date.now())).toBeLessThan(60_000)
      }
      const sinces = listed.map((entry) => Date.parse(entry.since))
      expect([...sinces].sort((a, b) => a - b)).toEqual(sinces)
      expect((await store.listPending({ kind, limit: 2 })).map((entry) => entry.conversationId)).toEqual(
        ids.slice(0, 2),
      )
      expect(await store.listPending({ kind, limit: 0 })).toEqual([])
      const all = await store.listPending()
      expect(all.map((entry) => entry.conversationId)).toEqual(expect.arrayContaining(ids))

      // Saving the same halt again keeps its age; clearing removes it from the list.
      await store.save(ids[0] as string, turns(2), { pending: requests[0] })
      await store.save(ids[1] as string, turns(2), { pending: null })
      const after = await store.listPending({ kind })
      expect(after.map((entry) => entry.conversationId)).toEqual([ids[0], ids[2]])
      expect(after[0]?.since).toBe(listed[0]?.since)
    })
  })
}
