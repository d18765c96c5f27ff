import { setTimeout as sleep } from "node:timers/promises"
import {
  type Answer,
  AnswerConflictError,
  AnswerExpiredError,
  ConfigError,
  SchemaVersionError,
  StoreError,
} from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import type { DurableStore } from "../../durable-store.js"
import { CorruptDataError } from "../../errors.js"
import { startTcpProxy } from "../tcp-proxy.js"
import type { StoreContractInit } from "../store-contract.js"
import { type ContractContext, uid, turns, request } from "./context.js"

/** @internal Registers this topic of `describeStoreContract` for one backend. */
export function describeFaults({ init, open, adopt }: ContractContext): void {
  describe("faults (§9)", () => {
    it("renews a held claim, and tells a lost one", async () => {
      const first = await open()
      const second = await open()
      const id = uid("renew")
      const req = request("approval")
      await first.save(id, turns(1), { pending: req })
      const short = 2 * first.opTimeoutMs
      const claim = await first.claimAnswer(id, { id: req.id, ok: true }, { leaseMs: short })
      await sleep(short + 60)
      // Nobody took it over: renewing keeps it, and a delivery is refused again.
      expect(await first.renewClaim(id, claim.token, { leaseMs: 30_000 })).toBe(true)
      await expect(second.claimAnswer(id, { id: req.id, ok: true })).rejects.toThrow(/another delivery/)
      await first.releaseClaim(id, claim.token)
      const taken = await second.claimAnswer(id, { id: req.id, ok: false })
      expect(taken.takeover).toBe(true)
      expect(await first.renewClaim(id, claim.token)).toBe(false)
      expect(await second.renewClaim(id, taken.token)).toBe(true)
      await expect(first.renewClaim(id, "")).rejects.toBeInstanceOf(ConfigError)
    })

    for (const how of ["a release", "a failed release"] as const) {
      it(`refuses to renew a claim given up by ${how}: the next delivery takes it over at once`, async () => {
        const store = await open()
        const other = await open()
        const id = uid("renew-released")
        const req = request("approval")
        await store.save(id, turns(1), { pending: req })
        const answer: Answer = { id: req.id, ok: true }
        const claim = await store.claimAnswer(id, answer, { leaseMs: 30_000 })
        const error = how === "a failed release" ? new Error("resume failed") : undefined
        await store.releaseClaim(id, claim.token, error ? { error, maxAttempts: 5 } : undefined)
        // A heartbeat that ticks after the release must not take the claim back.
        expect(await store.renewClaim(id, claim.token, { leaseMs: 30_000 })).toBe(false)
        expect((await other.listExpiredClaims()).filter((entry) => entry.id === id)).toEqual([
          { id, request: req, answer },
        ])
        const taken = await other.claimAnswer(id, { id: req.id, ok: false })
        expect(taken).toMatchObject({ takeover: true, answer })
        expect(await store.renewClaim(id, claim.token)).toBe(false)
        expect(await other.renewClaim(id, taken.token)).toBe(true)
      })
    }

    it("counts attempts: failed releases up to maxAttempts make the request failed, reopenFailed re-opens it", async () => {
      const store = await open()
      const id = uid("attempts")
      const req = request("approval")
      await store.save(id, turns(1), { pending: req })
      const approval: Answer = { id: req.id, ok: true, data: { first: true } }
      const failure = Object.assign(new Error("model said 400"), { code: "TNX_LLM_HTTP" })
      const one = await store.claimAnswer(id, approval, { maxAttempts: 2 })
      await store.releaseClaim(id, one.token, { error: failure, maxAttempts: 2 })
      expect(await store.findRequest(req.id)).toMatchObject({ attempts: 1, state: "claimed" })
      const two = await store.claimAnswer(id, { id: req.id, ok: false }, { maxAttempts: 2 })
      expect(two.answer).toEqual(approval)
      await store.releaseClaim(id, two.token, { error: failure, maxAttempts: 2 })

      expect(await store.findRequest(req.id)).toBeUndefined()
      expect((await store.listPending()).some((e) => e.request.id === req.id)).toBe(false)
      expect((await store.listExpiredClaims()).some((e) => e.id === id)).toBe(false)
      const failed = (await store.listFailed()).filter((e) => e.request.id === req.id)
      expect(failed).toEqual([
        {
          request: req,
          conversationId: id,
          since: expect.any(String),
          attempts: 2,
          state: "failed",
          lastError: { name: "Error", code: "TNX_LLM_HTTP", message: "model said 400" },
        },
      ])
      await expect(store.claimAnswer(id, { id: req.id, ok: true })).rejects.toThrow(/retryFailed/)
      expect(await store.reopenFailed(uid("not-failed"))).toBeUndefined()

      expect(await store.reopenFailed(req.id)).toEqual(approval)
      expect(await store.findRequest(req.id)).toMatchObject({ attempts: 0, state: "claimed" })
      const three = await store.claimAnswer(id, { id: req.id, ok: false })
      expect(three).toMatchObject({ takeover: true, answer: approval })
      await store.save(id, turns(2), { pending: null, claim: three.token })
      expect(await store.getDecision(req.id)).toEqual({ ok: true })
      expect((await store.listFailed()).some((e) => e.request.id === req.id)).toBe(false)
    })

    it("marks a request failed when its claims keep expiring (dead workers) past maxAttempts", async () => {
      const store = await open()
      const id = uid("dead-workers")
      const req = request("approval")
      await store.save(id, turns(1), { pending: req })
      const short = 2 * store.opTimeoutMs
      await store.claimAnswer(id, { id: req.id, ok: true }, { leaseMs: short, maxAttempts: 2 })
      await sleep(short + 60)
      await store.claimAnswer(id, { id: req.id, ok: true }, { leaseMs: short, maxAttempts: 2 })
      await sleep(short + 60)
      await expect(
        store.claimAnswer(id, { id: req.id, ok: true }, { maxAttempts: 2 }),
      ).rejects.toBeInstanceOf(AnswerConflictError)
      const [failed] = (await store.listFailed()).filter((e) => e.request.id === req.id)
      expect(failed?.lastError.name).toBe("LeaseExpired")
    })

    it("judges expiresAt at the first claim: late approvals refused, declines accepted, claims taken in time honoured", async () => {
      const store = await open()
      const late = uid("late")
      const past = { ...request("approval"), expiresAt: new Date(Date.now() - 1000).toISOString() }
      await store.save(late, turns(1), { pending: past })
      await expect(store.claimAnswer(late, { id: past.id, ok: true })).rejects.toBeInstanceOf(
        AnswerExpiredError,
      )
      expect(await store.findRequest(past.id)).toMatchObject({ attempts: 0, state: "open" })
      const declined = await store.claimAnswer(late, { id: past.id, ok: false, reason: "expired" })
      expect(declined.answer).toEqual({ id: past.id, ok: false, reason: "expired" })

      const unreadable = uid("unreadable")
      const garbled = { ...request("approval"), expiresAt: "whenever" }
      await store.save(unreadable, turns(1), { pending: garbled })
      await expect(store.claimAnswer(unreadable, { id: garbled.id, ok: true })).rejects.toThrow(/expired/)

      const inTime = uid("in-time")
      const short = 2 * store.opTimeoutMs
      const soon = { ...request("approval"), expiresAt: new Date(Date.now() + short + 200).toISOString() }
      await store.save(inTime, turns(1), { pending: soon })
      await store.claimAnswer(inTime, { id: soon.id, ok: true, data: { by: "first" } }, { leaseMs: short })
      await sleep(short + 300) // both the lease and the request's deadline are past now
      const taken = await store.claimAnswer(inTime, { id: soon.id, ok: true })
      expect(taken).toMatchObject({
        takeover: true,
        answer: { id: soon.id, ok: true, data: { by: "first" } },
      })
    })

    it("checkpoints under a claim: fenced, the pending request and the claim kept", async () => {
      const store = await open()
      const id = uid("checkpoint")
      const req = request("approval")
      await store.save(id, turns(1), { pending: req })
      const claim = await store.claimAnswer(id, { id: req.id, ok: true })
      await store.save(id, turns(2), { claim: claim.token, checkpoint: true })
      await expect(
        store.save(id, turns(3), { claim: "not-the-claim", checkpoint: true }),
      ).rejects.toBeInstanceOf(AnswerConflictError)
      expect(await store.get(id)).toEqual(turns(2))
      expect(await store.getPending(id)).toEqual(req)
      expect(await store.findRequest(req.id)).toMatchObject({ state: "claimed" })
      expect(await store.renewClaim(id, claim.token)).toBe(true)
      await store.save(id, turns(3), { pending: null, claim: claim.token })
      expect(await store.getDecision(req.id)).toEqual({ ok: true })
    })

    it("refuses a lease shorter than twice the operation deadline", async () => {
      const store = await open()
      const id = uid("lease")
      await expect(
        store.claimAnswer(id, { id: "r", ok: true }, { leaseMs: 2 * store.opTimeoutMs - 1 }),
      ).rejects.toThrow(/at least 2 × opTimeoutMs/)
      await expect(store.renewClaim(id, "t", { leaseMs: 1 })).rejects.toBeInstanceOf(ConfigError)
    })

    it.runIf(init.corruptPending !== undefined)(
      "skips, keeps and reports a corrupt row in listings; a direct read names it",
      async () => {
        const reports: { table: string; key: string }[] = []
        const store = await open()
        const kind = uid("kind")
        const [good, bad] = [uid("good"), uid("bad")]
        const requests = [request(kind), request(kind)] as const
        await store.save(good, turns(1), { pending: requests[0] })
        await store.save(bad, turns(1), { pending: requests[1] })
        const claim = await store.claimAnswer(
          bad,
          { id: requests[1].id, ok: true },
          { leaseMs: 2 * store.opTimeoutMs },
        )
        await init.corruptPending?.(store, bad)
        await sleep(2 * store.opTimeoutMs + 60)
        const reporting = await init.create({ onCorrupt: (row) => reports.push(row) })
        adopt(reporting)
        const listed = await reporting.listPending({ kind })
        expect(listed.map((e) => e.conversationId)).toEqual([good])
        expect(reports).toContainEqual({ table: "tnx_conversations", key: bad })
        reports.length = 0
        const expired = await reporting.listExpiredClaims()
        expect(expired.some((e) => e.id === bad)).toBe(false)
        expect(reports).toContainEqual({ table: "tnx_conversations", key: bad })
        const direct = store.getPending(bad)
        await expect(direct).rejects.toBeInstanceOf(CorruptDataError)
        await expect(direct).rejects.toMatchObject({ table: "tnx_conversations", key: bad })
        await expect(direct).rejects.toBeInstanceOf(StoreError)
        expect(claim.token).toBeTruthy()
      },
    )

    it.runIf(init.viaProxy !== undefined)(
      "fails with StoreError, never hangs, on a blackholed connection",
      async () => {
        const proxy = await startTcpProxy(
          (init.viaProxy as NonNullable<StoreContractInit["viaProxy"]>).target,
        )
        const store = init.viaProxy?.create(proxy.port, 300) as DurableStore
        try {
          const id = uid("blackhole")
          await (await open()).save(id, turns(1))
          // The proxied store's first calls connect and check the schema, which a loaded machine
          // can make slower than the 300 ms it allows a call: it is read until one call answers
          // in time, so the blackhole below meets a store that works. A store that never answers
          // in time fails here, naming its last error, not as a test timeout.
          let lastError: unknown
          for (let attempt = 0; ; attempt++) {
            try {
              await store.get(id)
              break
            } catch (error) {
              lastError = error
            }
            if (attempt === 40) {
              throw new Error(
                `the proxied store never answered within its 300 ms before the blackhole: ${String(lastError)}`,
              )
            }
          }
          proxy.blackhole()
          const started = Date.now()
          await expect(store.get(id)).rejects.toBeInstanceOf(StoreError)
          expect(Date.now() - started).toBeLessThan(5_000)
          await expect(store.renewClaim(id, "token", { leaseMs: 600 })).rejects.toBeInstanceOf(StoreError)
        } finally {
          await proxy.close()
          await Promise.race([store.close(), sleep(1_000)]).catch(() => {})
        }
      },
    )
  })

  describe.runIf(init.corrupt !== undefined)("corrupt rows", () => {
    it("fails loudly, naming the conversation and position", async () => {
      const store = await open()
      const id = uid("corrupt")
      await store.save(id, turns(3))
      await init.corrupt?.(store, id, 1)
      for (const reader of [store, await open()]) {
        const read = reader.get(id)
        await expect(read).rejects.toBeInstanceOf(StoreError)
        await expect(read).rejects.toThrow(new RegExp(`${id}.*message 1`))
      }
      // Saving a good transcript over it repairs it.
      await store.save(id, turns(3))
      expect(await store.get(id)).toEqual(turns(3))
    })
  })

  describe.runIf(init.setSchemaVersion !== undefined && init.schemaVersion !== undefined)("schema", () => {
    it("refuses a schema from the future and writes nothing", async () => {
      const current = await open()
      const id = uid("future")
      await current.get(id)
      await init.setSchemaVersion?.(current, (init.schemaVersion ?? 0) + 1)
      try {
        const newer = await open()
        await expect(newer.save(id, turns(2), { pending: request("approval") })).rejects.toBeInstanceOf(
          SchemaVersionError,
        )
        await expect(newer.get(id)).rejects.toBeInstanceOf(SchemaVersionError)
        await expect(newer.putSnapshot(id, { x: 1 })).rejects.toBeInstanceOf(SchemaVersionError)
      } finally {
        await init.setSchemaVersion?.(current, init.schemaVersion ?? 0)
      }
      const after = await open()
      expect(await after.get(id)).toBeUndefined()
      expect(await after.getSnapshot(id)).toBeUndefined()
    })
  })

  describe.runIf(init.unreachable !== undefined)("server errors", () => {
    it("fail with StoreError carrying the cause", async () => {
      const store = (await init.unreachable?.()) as DurableStore
      try {
        for (const call of [
          () => store.get("x"),
          () => store.save("x", turns(1)),
          () => store.claimAnswer("x", { id: "r", ok: true }),
          () => store.listPending(),
          () => store.putSnapshot("x", 1),
        ]) {
          const error = await call().then(
            () => undefined,
            (e: unknown) => e,
          )
          expect(error).toBeInstanceOf(StoreError)
          expect((error as StoreError).cause).toBeDefined()
        }
      } finally {
        await store.close()
      }
    })
  })
}
