import { AnswerConflictError, ConfigError, type Message } from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import type { DurableStore } from "../../durable-store.js"
import { type ContractContext, PATHS, grow, message, request, turns, uid } from "./context.js"

/** A two-level tree parked on one request: its top and deepest conversations, both waiting on it. */
async function parkedTree(store: DurableStore) {
  const top = uid("top")
  const deep = uid("deep")
  const req = request("approval")
  await store.save(deep, turns(3), { pending: req })
  await store.save(top, turns(2), { pending: req })
  return { top, deep, req }
}

/** @internal Registers this topic of `describeStoreContract` for one backend. */
export function describeResumeCommit({ open }: ContractContext): void {
  describe("resume commit", () => {
    for (const path of PATHS) {
      it(`writes the conversations, the snapshot and the claim's consumption together (${path})`, async () => {
        const store = await open()
        const { top, deep, req } = await parkedTree(store)
        const claim = await store.claimAnswer(top, { id: req.id, ok: true })
        // The cold path commits through a store that never read the conversations.
        const committer = path === "warm path" ? store : await open()
        const next = request("approval")
        const key = uid("runtime")
        await committer.commitResume({
          saves: [
            { id: deep, messages: grow[path](turns(3), 5), meta: { pending: null } },
            { id: top, messages: grow[path](turns(2), 4), meta: { pending: next, claim: claim.token } },
          ],
          snapshot: {
            key,
            value: { tree: [top, deep] },
            holds: [{ requestId: next.id, conversationId: top }],
          },
        })
        const reader = await open()
        expect(await reader.get(deep)).toEqual(turns(5))
        expect(await reader.get(top)).toEqual(turns(4))
        expect(await reader.getPending(deep)).toBeUndefined()
        expect(await reader.getPending(top)).toEqual(next)
        expect(await reader.getSnapshot(key)).toEqual({ tree: [top, deep] })
        expect(await reader.getDecision(req.id)).toEqual({ ok: true })
        expect(await reader.findRequest(req.id)).toBeUndefined()
        expect(await reader.findRequest(next.id)).toMatchObject({ runtimeKey: key, conversationId: top })
        await expect(reader.claimAnswer(top, { id: req.id, ok: true })).rejects.toThrow(/already applied/)
        // The stores remember what they committed: the next save appends to it.
        await committer.save(top, [...((await committer.get(top)) ?? []), message(4)], { pending: null })
        expect(await reader.get(top)).toEqual(turns(5))
      })
    }

    for (const path of PATHS) {
      it(`one save and a snapshot without holds (a store host's turn and its record) are written together (${path})`, async () => {
        const store = await open()
        const id = uid("turn")
        const key = uid("record")
        const first = turns(2)
        await store.save(id, first)
        // The cold path commits through a store that never read the conversation.
        const committer = path === "warm path" ? store : await open()
        await committer.commitResume({
          saves: [{ id, messages: grow[path](first, 4), meta: { pending: null } }],
          snapshot: { key, value: { state: "done", turn: 1 } },
        })
        const reader = await open()
        expect(await reader.get(id)).toEqual(turns(4))
        expect(await reader.getSnapshot(key)).toEqual({ state: "done", turn: 1 })
        // Another writer appended since: the committer's remembered transcript is stale, and its
        // next commit still writes the transcript it is given and the snapshot, together.
        await reader.save(id, turns(5))
        await committer.commitResume({
          saves: [{ id, messages: turns(6), meta: { pending: null } }],
          snapshot: { key, value: { state: "done", turn: 2 } },
        })
        const after = await open()
        expect(await after.get(id)).toEqual(turns(6))
        expect(await after.getSnapshot(key)).toEqual({ state: "done", turn: 2 })
      })
    }

    it("one save and a snapshot without holds: nothing written when the save's claim is gone", async () => {
      const store = await open()
      const id = uid("turn")
      const key = uid("record")
      const req = request("approval")
      const first = turns(3)
      await store.save(id, first, { pending: req })
      await store.putSnapshot(key, { state: "pending" })
      const claim = await store.claimAnswer(id, { id: req.id, ok: true })
      await store.releaseClaim(id, claim.token)
      // The transcript as this store saved it, grown: the save's fast path is tried first.
      const commit = store.commitResume({
        saves: [{ id, messages: grow["warm path"](first, 5), meta: { pending: null, claim: claim.token } }],
        snapshot: { key, value: { state: "done" } },
      })
      await expect(commit).rejects.toBeInstanceOf(AnswerConflictError)
      const reader = await open()
      expect(await reader.get(id)).toEqual(turns(3))
      expect(await reader.getPending(id)).toEqual(req)
      expect(await reader.getSnapshot(key)).toEqual({ state: "pending" })
      expect(await reader.getDecision(req.id)).toBeUndefined()
    })

    it("writes nothing when the claim is no longer held", async () => {
      const store = await open()
      const { top, deep, req } = await parkedTree(store)
      const claim = await store.claimAnswer(top, { id: req.id, ok: true })
      await store.releaseClaim(top, claim.token)
      const key = uid("runtime")
      const commit = store.commitResume({
        saves: [
          { id: deep, messages: turns(5), meta: { pending: null } },
          { id: top, messages: turns(4), meta: { pending: null, claim: claim.token } },
        ],
        snapshot: { key, value: { v: 1 } },
      })
      await expect(commit).rejects.toBeInstanceOf(AnswerConflictError)
      const reader = await open()
      expect(await reader.get(deep)).toEqual(turns(3))
      expect(await reader.get(top)).toEqual(turns(2))
      expect(await reader.getPending(deep)).toEqual(req)
      expect(await reader.getSnapshot(key)).toBeUndefined()
      expect(await reader.getDecision(req.id)).toBeUndefined()
      // The released claim keeps its answer: the next delivery takes it over and commits.
      const again = await reader.claimAnswer(top, { id: req.id, ok: true })
      await reader.commitResume({
        saves: [{ id: top, messages: turns(4), meta: { pending: null, claim: again.token } }],
      })
      expect(await store.getDecision(req.id)).toEqual({ ok: true })
    })

    it("a commit and a racing delivery: exactly one applies the answer", async () => {
      const [a, b] = [await open({ opTimeoutMs: 15_000 }), await open({ opTimeoutMs: 15_000 })]
      const { top, deep, req } = await parkedTree(a)
      const claim = await a.claimAnswer(top, { id: req.id, ok: true })
      const commit = a.commitResume({
        saves: [
          { id: top, messages: turns(4), meta: { pending: null, claim: claim.token } },
          { id: deep, messages: turns(5), meta: { pending: null } },
        ],
      })
      const racing = b.claimAnswer(top, { id: req.id, ok: true })
      const [committed, raced] = await Promise.allSettled([commit, racing])
      expect(committed.status).toBe("fulfilled")
      expect(raced.status).toBe("rejected")
      expect((raced as PromiseRejectedResult).reason).toBeInstanceOf(AnswerConflictError)
      expect(await b.getDecision(req.id)).toEqual({ ok: true })
    })

    it("refuses a checkpoint, an id saved twice and bad input, writing nothing", async () => {
      const store = await open()
      const id = uid("refused")
      const transcript: Message[] = turns(2)
      await store.save(id, transcript)
      await expect(
        store.commitResume({ saves: [{ id, messages: turns(3), meta: { checkpoint: true } }] }),
      ).rejects.toBeInstanceOf(ConfigError)
      await expect(
        store.commitResume({
          saves: [
            { id, messages: turns(3) },
            { id, messages: turns(4) },
          ],
        }),
      ).rejects.toBeInstanceOf(ConfigError)
      await expect(store.commitResume(undefined as never)).rejects.toBeInstanceOf(ConfigError)
      await expect(
        store.commitResume({
          saves: [{ id, messages: "x" as never }],
          snapshot: { key: uid("k"), value: 1 },
        }),
      ).rejects.toBeInstanceOf(ConfigError)
      expect(await (await open()).get(id)).toEqual(turns(2))
    })
  })
}
