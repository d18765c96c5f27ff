import { setTimeout as sleep } from "node:timers/promises"
import { type Answer, AnswerConflictError, type Request, UnknownRequestError } from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import type { DurableStore } from "../../durable-store.js"
import { type ContractContext, uid, message, turns, request, PATHS, grow } from "./context.js"

/** @internal Registers this topic of `describeStoreContract` for one backend. */
export function describeClaims({ open }: ContractContext): void {
  describe("answer claims", () => {
    it("grants exactly one of many concurrent claims across two instances", async () => {
      // Ten claims queue on one request's lock; under a loaded CI machine the last of them can
      // wait past the contract's 1 s deadline, which is not what this test is about.
      const a = await open({ opTimeoutMs: 15_000 })
      const b = await open({ opTimeoutMs: 15_000 })
      const id = uid("race")
      const req = request("approval")
      await a.save(id, turns(2), { pending: req })
      await b.get(id)
      const attempts = Array.from({ length: 10 }, (_, i) =>
        (i % 2 === 0 ? a : b).claimAnswer(id, { id: req.id, ok: true, data: { delivery: i } }),
      )
      const results = await Promise.allSettled(attempts)
      const won = results.filter((r) => r.status === "fulfilled")
      const lost = results.filter((r): r is PromiseRejectedResult => r.status === "rejected")
      expect(won).toHaveLength(1)
      expect(lost).toHaveLength(9)
      for (const failure of lost) expect(failure.reason).toBeInstanceOf(AnswerConflictError)
      const claim = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<DurableStore["claimAnswer"]>>>).value
      expect(claim.takeover).toBe(false)
      expect(claim.request).toEqual(req)
      expect(claim.answer.id).toBe(req.id)
    })

    for (const path of PATHS) {
      it(`consumes the claim on a fenced save (${path})`, async () => {
        const store = await open()
        const id = uid("consume")
        const req = request("approval")
        const transcript = turns(2)
        await store.save(id, transcript, { pending: req })
        const claim = await store.claimAnswer(id, { id: req.id, ok: true })
        const forged = store.save(id, grow[path](transcript, 3), { pending: null, claim: "forged" })
        await expect(forged).rejects.toBeInstanceOf(AnswerConflictError)
        expect(await (await open()).get(id)).toEqual(turns(2))
        const next = request("approval")
        await store.save(id, grow[path](transcript, 4), { pending: next, claim: claim.token })
        expect(await (await open()).get(id)).toEqual(turns(4))
        expect(await store.getPending(id)).toEqual(next)
        await expect(store.claimAnswer(id, { id: req.id, ok: true })).rejects.toThrow(/already applied/)
        // The consumed token fences nothing any more, and the new request is free to claim.
        await expect(
          store.save(id, grow[path](turns(4), 5), { pending: null, claim: claim.token }),
        ).rejects.toBeInstanceOf(AnswerConflictError)
        await expect(store.claimAnswer(id, { id: next.id, ok: true })).resolves.toMatchObject({
          takeover: false,
        })
      })
    }

    it("refuses an answer already applied, and unknown requests or conversations", async () => {
      const store = await open()
      const id = uid("applied")
      const req = request("approval")
      await store.save(id, turns(2), { pending: req })
      const answer: Answer = { id: req.id, ok: true, data: { approved: true } }
      const claim = await store.claimAnswer(id, answer)
      expect(claim).toMatchObject({ answer, request: req, takeover: false })
      expect(typeof claim.token).toBe("string")
      const next = request("approval")
      await store.save(id, turns(4), { pending: next, claim: claim.token })
      expect(await store.getPending(id)).toEqual(next)

      const again = store.claimAnswer(id, answer)
      await expect(again).rejects.toBeInstanceOf(AnswerConflictError)
      await expect(again).rejects.toThrow(/already applied/)
      await expect((await open()).claimAnswer(id, answer)).rejects.toBeInstanceOf(AnswerConflictError)
      await expect(store.claimAnswer(id, { id: uid("req"), ok: true })).rejects.toBeInstanceOf(
        UnknownRequestError,
      )
      // A decision is per request id: applied once, refused through any conversation.
      await expect(store.claimAnswer(uid("nobody"), answer)).rejects.toMatchObject({
        name: "AnswerConflictError",
        decision: { ok: true },
      })
      await expect(store.claimAnswer(uid("nobody"), { id: uid("req"), ok: true })).rejects.toBeInstanceOf(
        UnknownRequestError,
      )
      // The new request is claimable as usual.
      await expect(
        store.claimAnswer(id, { id: next.id, ok: false, reason: "declined" }),
      ).resolves.toMatchObject({
        takeover: false,
      })
    })

    it("hands an expired claim over with the stored answer and fences the old holder", async () => {
      const first = await open()
      const second = await open()
      const id = uid("takeover")
      const req = request("approval")
      const transcript = turns(2)
      await first.save(id, transcript, { pending: req })
      const original: Answer = { id: req.id, ok: true, data: { from: "first delivery" } }
      // Long enough for the refused claim below to land inside it even on a slow machine.
      const lease = Math.max(300, 2 * first.opTimeoutMs)
      const stale = await first.claimAnswer(id, original, { leaseMs: lease })
      await expect(second.claimAnswer(id, { id: req.id, ok: true })).rejects.toThrow(/another delivery/)
      await sleep(lease + 100)
      const retry: Answer = { id: req.id, ok: false, reason: "cancelled" }
      const taken = await second.claimAnswer(id, retry, { leaseMs: 30_000 })
      expect(taken.takeover).toBe(true)
      expect(taken.answer).toEqual(original)
      expect(taken.request).toEqual(req)
      expect(taken.token).not.toBe(stale.token)

      // `first` still holds the transcript it saved, so this tries the warm path first.
      const late = first.save(id, [...transcript, message(2)], { pending: null, claim: stale.token })
      await expect(late).rejects.toBeInstanceOf(AnswerConflictError)
      expect(await second.get(id)).toEqual(turns(2))
      expect(await second.getPending(id)).toEqual(req)
      await expect(first.claimAnswer(id, original)).rejects.toThrow(/another delivery/)

      await second.save(id, turns(3), { pending: null, claim: taken.token })
      expect(await first.get(id)).toEqual(turns(3))
      expect(await first.getPending(id)).toBeUndefined()
    })

    it("lets the holder of an expired claim save while nobody took it over", async () => {
      const store = await open()
      const id = uid("slow-holder")
      const req = request("approval")
      await store.save(id, turns(1), { pending: req })
      const short = 2 * store.opTimeoutMs
      const claim = await store.claimAnswer(id, { id: req.id, ok: true }, { leaseMs: short })
      await sleep(short + 60)
      await store.save(id, turns(2), { pending: null, claim: claim.token })
      expect(await store.getPending(id)).toBeUndefined()
      await expect(store.claimAnswer(id, { id: req.id, ok: true })).rejects.toThrow(/already applied/)
    })

    it("refuses a fenced save without a claim and writes nothing", async () => {
      const store = await open()
      const id = uid("no-claim")
      const req = request("approval")
      await store.save(id, turns(2), { pending: req })
      const attempt = store.save(id, turns(5), { pending: null, claim: "forged-token" })
      await expect(attempt).rejects.toBeInstanceOf(AnswerConflictError)
      expect(await store.get(id)).toEqual(turns(2))
      expect(await store.getPending(id)).toEqual(req)
      await expect(store.save(uid("fresh"), turns(1), { claim: "forged-token" })).rejects.toBeInstanceOf(
        AnswerConflictError,
      )
    })

    it("leaves the claim alone on a save without one", async () => {
      const store = await open()
      const id = uid("unfenced")
      const req = request("approval")
      const transcript = turns(1)
      await store.save(id, transcript, { pending: req })
      const claim = await store.claimAnswer(id, { id: req.id, ok: true })
      await store.save(id, [...transcript, message(1)])
      await expect(store.claimAnswer(id, { id: req.id, ok: true })).rejects.toThrow(/another delivery/)
      await store.save(id, turns(3), { pending: null, claim: claim.token })
      expect(await store.get(id)).toEqual(turns(3))
    })

    it("voids a claim whose request was replaced by an unfenced save", async () => {
      const store = await open()
      const id = uid("replaced")
      const req = request("approval")
      await store.save(id, turns(1), { pending: req })
      await store.claimAnswer(id, { id: req.id, ok: true })
      const next = request("input")
      await store.save(id, turns(2), { pending: next })
      await expect(store.claimAnswer(id, { id: req.id, ok: true })).rejects.toBeInstanceOf(
        UnknownRequestError,
      )
      const claim = await store.claimAnswer(id, { id: next.id, ok: true })
      expect(claim).toMatchObject({ takeover: false, request: next })
    })

    it("releaseClaim expires the claim at once and keeps its answer", async () => {
      const store = await open()
      const other = await open()
      const id = uid("release")
      const req = request("approval")
      await store.save(id, turns(1), { pending: req })
      const answer: Answer = { id: req.id, ok: true, data: { n: 1 } }
      const claim = await store.claimAnswer(id, answer)
      await store.releaseClaim(id, "someone-elses-token")
      await expect(other.claimAnswer(id, answer)).rejects.toThrow(/another delivery/)

      await store.releaseClaim(id, claim.token)
      const expired = await other.listExpiredClaims()
      expect(expired.filter((entry) => entry.id === id)).toEqual([{ id, request: req, answer }])
      const taken = await other.claimAnswer(id, { id: req.id, ok: false, reason: "declined" })
      expect(taken).toMatchObject({ takeover: true, answer, request: req })
      // The released token no longer fences anything.
      await expect(store.save(id, turns(2), { pending: null, claim: claim.token })).rejects.toBeInstanceOf(
        AnswerConflictError,
      )
    })

    it("lists only claims whose lease ran out", async () => {
      const store = await open()
      const lapsed = uid("lapsed")
      const live = uid("live")
      const answers: Record<string, Answer> = {}
      const requests: Record<string, Request> = {}
      const short = 2 * store.opTimeoutMs
      for (const [id, leaseMs] of [
        [lapsed, short],
        [live, 30_000],
      ] as const) {
        requests[id] = request("approval")
        answers[id] = { id: requests[id].id, ok: true, data: { id } }
        await store.save(id, turns(1), { pending: requests[id] })
        await store.claimAnswer(id, answers[id], { leaseMs })
      }
      await sleep(short + 60)
      const listed = await store.listExpiredClaims()
      const ours = listed.filter((entry) => entry.id === lapsed || entry.id === live)
      expect(ours).toEqual([{ id: lapsed, request: requests[lapsed], answer: answers[lapsed] }])
      expect((await store.listExpiredClaims({ limit: 1 })).length).toBeLessThanOrEqual(1)
      expect(await store.listExpiredClaims({ limit: 0 })).toEqual([])

      // Completing the run (the sweeper's job) takes it off the list.
      const swept = await store.claimAnswer(lapsed, answers[lapsed] as Answer)
      expect(swept.takeover).toBe(true)
      await store.save(lapsed, turns(2), { pending: null, claim: swept.token })
      const after = await store.listExpiredClaims()
      expect(after.some((entry) => entry.id === lapsed)).toBe(false)
    })
  })
}
