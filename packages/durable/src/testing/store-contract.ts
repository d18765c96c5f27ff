import { randomUUID } from "node:crypto"
import { setTimeout as sleep } from "node:timers/promises"
import {
  type Answer,
  AnswerConflictError,
  AnswerExpiredError,
  AnswerInvalidError,
  ConfigError,
  type Message,
  type Request,
  SchemaVersionError,
  StoreError,
  UnknownRequestError,
} from "@toolnexus/core"
import { afterEach, describe, expect, it } from "vitest"
import type { DurableStore } from "../durable-store.js"
import { CorruptDataError, RuntimeHeldError } from "../errors.js"
import { encodeMessages } from "../store-engine/message-codec.js"
import type { DurableStoreOptions } from "../store-engine/store-base.js"
import type { WriteStats } from "../store-engine/write-stats.js"
import { CLAIM_CASES, type ClaimCase, type ClaimCaseOutcome } from "./claim-cases.js"
import { startTcpProxy } from "./tcp-proxy.js"

/** How a backend's test file plugs into {@link describeStoreContract}. */
export interface StoreContractInit {
  /**
   * A new store instance on the backend shared by the whole suite: two instances behave like
   * two processes (each has its own cache). Called at least once per test.
   */
  create(extra?: Pick<DurableStoreOptions, "onCorrupt" | "opTimeoutMs">): Promise<DurableStore>
  /** Disposes of a store `create` returned, after its test; default `store.close()`. */
  destroy?(store: DurableStore): Promise<void>
  /** When set, the suite is skipped and this reason printed once. */
  skip?: string
  /** Writes a body that is not JSON over message `index` of conversation `id`, behind the store's back. */
  corrupt?(store: DurableStore, id: string, index: number): Promise<void>
  /** Writes a pending request that is not JSON over conversation `id`'s, behind the store's back. */
  corruptPending?(store: DurableStore, id: string): Promise<void>
  /** For the deadline test: the server's address and a store (with `opTimeoutMs`) reaching it on `port`. */
  viaProxy?: {
    /** The store server's address, which the suite's proxy forwards to. */
    target: {
      /** The server's host name or IP address. */
      host: string
      /** The server's TCP port. */
      port: number
    }
    /**
     * A store reaching the server through the proxy on 127.0.0.1 at `port`, with this `opTimeoutMs` (in
     * ms).
     */
    create(port: number, opTimeoutMs: number): DurableStore
  }
  /** Overwrites the stored schema version behind the store's back. */
  setSchemaVersion?(store: DurableStore, version: number): Promise<void>
  /** The newest schema version the code knows; needed with `setSchemaVersion` to restore it. */
  schemaVersion?: number
  /** A store whose server cannot be reached (or whose file cannot be opened). */
  unreachable?(): Promise<DurableStore>
  /**
   * What the store wrote for transcripts so far. With it the suite also checks that a save
   * costs O(new messages), not O(history); without it those tests are skipped.
   */
  writeStats?(store: DurableStore): WriteStats
}

const warned = new Set<string>()

/**
 * Registers the behaviour every {@link DurableStore} must have, as one vitest `describe` block
 * named `name`, against the backend `init` creates stores on: transcripts, pending requests,
 * the request index, claims (with every row of `CLAIM_CASES`), faults and snapshots. Give it
 * a database (schema, key prefix) of its own: some tests list all the store holds.
 *
 * @example
 * describeStoreContract("MyStore", { create: async (extra) => new MyStore({ url, ...extra }) })
 */
export function describeStoreContract(name: string, init: StoreContractInit): void {
  if (init.skip !== undefined && !warned.has(name)) {
    warned.add(name)
    console.warn(`[toolnexus durable] skipping the ${name} contract: ${init.skip}`)
  }
  describe.skipIf(init.skip !== undefined)(`${name} contract`, () => {
    const opened: DurableStore[] = []
    const open = async (extra?: Pick<DurableStoreOptions, "opTimeoutMs">) => {
      const store = await init.create(extra)
      opened.push(store)
      return store
    }
    afterEach(async () => {
      for (const store of opened.splice(0)) await (init.destroy ? init.destroy(store) : store.close())
    })
    // The write-cost tests need the store to count what it writes.
    const costIt = it.runIf(init.writeStats !== undefined)
    const writeStats = (store: DurableStore): WriteStats => {
      if (!init.writeStats) throw new TypeError("this store does not count its writes")
      return init.writeStats(store)
    }

    describe("transcripts", () => {
      it("round-trips messages as fresh objects", async () => {
        const store = await open()
        const id = uid("round-trip")
        const messages = turns(3)
        await store.save(id, messages)
        const first = await store.get(id)
        expect(first).toEqual(messages)
        expect(first?.[0]).not.toBe(messages[0])
        const second = await store.get(id)
        expect(second?.[0]).not.toBe(first?.[0])
      })

      it("keeps OpenAI and Anthropic messages JSON-identical", async () => {
        const store = await open()
        const other = await open()
        for (const [label, messages] of [
          ["openai", OPENAI_MESSAGES],
          ["anthropic", ANTHROPIC_MESSAGES],
        ] as const) {
          const id = uid(label)
          await store.save(id, [...messages])
          const got = await other.get(id)
          expect(JSON.stringify(got)).toBe(JSON.stringify(messages))
          expect(got).toEqual(messages)
        }
      })

      it("answers undefined for unknown ids", async () => {
        const store = await open()
        const id = uid("unknown")
        expect(await store.get(id)).toBeUndefined()
        expect(await store.getPending(id)).toBeUndefined()
        expect(await store.getSnapshot(id)).toBeUndefined()
        await expect(store.releaseClaim(id, "no-such-token")).resolves.toBeUndefined()
        await expect(store.deleteSnapshot(id)).resolves.toBeUndefined()
      })

      it("stores an empty transcript as empty, not unknown", async () => {
        const store = await open()
        const id = uid("empty")
        await store.save(id, [])
        expect(await store.get(id)).toEqual([])
        const messages = turns(2)
        await store.save(id, messages)
        expect(await (await open()).get(id)).toEqual(messages)
      })

      costIt("writes only the new messages: turn 200 costs what turn 1 costs", async () => {
        const store = await open()
        const id = uid("append-only")
        const messages: Message[] = []
        const costs: WriteStats[] = []
        for (let turn = 0; turn < 200; turn++) {
          messages.push(message(turn))
          const before = writeStats(store)
          await store.save(id, messages)
          costs.push(delta(before, writeStats(store)))
        }
        // The bytes of each message's stored body (compact or JSON).
        const size = (m: Message) => Buffer.byteLength(encodeMessages(id, [m])[0] as string)
        const first = costs[0] as WriteStats
        const last = costs[199] as WriteStats
        expect(first.messageRowsWritten).toBe(1)
        expect(last.messageRowsWritten).toBe(1)
        expect(first.messageBytesWritten).toBe(size(messages[0] as Message))
        expect(last.messageBytesWritten).toBe(size(messages[199] as Message))
        // The warm path never reads the stored transcript back.
        expect(
          costs.slice(1).every((cost) => cost.messageRowsRead === 0 && cost.messageRowsDeleted === 0),
        ).toBe(true)
        const total = costs.reduce((sum, cost) => sum + cost.messageBytesWritten, 0)
        expect(total).toBe(messages.reduce((sum, m) => sum + size(m), 0))
        expect(await (await open()).get(id)).toEqual(messages)
      })

      costIt("appends after a cold start by writing only the tail", async () => {
        const writer = await open()
        const id = uid("cold")
        await writer.save(id, turns(5))
        const restarted = await open()
        const loaded = (await restarted.get(id)) as Message[]
        const before = writeStats(restarted)
        await restarted.save(id, [...loaded, message(5), message(6)])
        const cost = delta(before, writeStats(restarted))
        expect(cost.messageRowsWritten).toBe(2)
        expect(cost.messageRowsRead).toBe(0)
        // A store that never saw the conversation compares bodies instead of identities.
        const stranger = await open()
        const beforeStranger = writeStats(stranger)
        await stranger.save(id, [...turns(7), message(7)])
        const strangerCost = delta(beforeStranger, writeStats(stranger))
        expect(strangerCost.messageRowsWritten).toBe(1)
        expect(strangerCost.messageRowsDeleted).toBe(0)
        expect(await writer.get(id)).toEqual(turns(8))
      })

      costIt(
        "replaces only the last message when a resumed run repairs its placeholder, then appends",
        async () => {
          const store = await open()
          const id = uid("repair")
          const parked = turns(3)
          await store.save(id, parked)
          const repaired = [
            ...parked.slice(0, 2),
            { role: "user", content: "repaired" } as Message,
            message(3),
          ]
          const before = writeStats(store)
          await store.save(id, repaired)
          expect(delta(before, writeStats(store)).messageRowsWritten).toBe(2)
          expect(await (await open()).get(id)).toEqual(repaired)
          const next = [...repaired, message(4)]
          const beforeNext = writeStats(store)
          await store.save(id, next)
          expect(delta(beforeNext, writeStats(store))).toMatchObject({
            messageRowsWritten: 1,
            messageRowsDeleted: 0,
          })
          expect(await (await open()).get(id)).toEqual(next)
          // A shorter transcript that drops the last message keeps the rest.
          await store.save(id, next.slice(0, 4))
          expect(await (await open()).get(id)).toEqual(repaired)
        },
      )

      costIt("stays correct when another instance wrote since (stale cache)", async () => {
        const first = await open()
        const second = await open()
        const id = uid("stale")
        const mine = turns(3)
        await first.save(id, mine)
        const theirs = (await second.get(id)) as Message[]
        await second.save(id, [...theirs, message(3), message(4)])
        // `first` still remembers revision 1 and its own objects: it must notice the change.
        const before = writeStats(first)
        const appended = [...mine, message(3), message(4), message(5)]
        await first.save(id, appended)
        expect(delta(before, writeStats(first)).messageRowsWritten).toBe(1)
        expect(await second.get(id)).toEqual(appended)
        // And a writer that overrides the other's messages gets exactly what it saved.
        const override = [...mine, { role: "user", content: "instead" } as Message]
        await second.save(id, [...((await second.get(id)) as Message[])])
        await first.save(id, override)
        expect(await second.get(id)).toEqual(override)
        await first.save(id, [...override, message(9)])
        expect(await (await open()).get(id)).toEqual([...override, message(9)])
      })

      it("serialises concurrent saves of one conversation: one whole transcript wins", async () => {
        const stores = [await open(), await open(), await open()]
        const id = uid("concurrent")
        const candidates = stores.map((_, i) => [
          ...turns(2),
          { role: "user", content: `writer ${i}` } as Message,
        ])
        await Promise.all(stores.map((store, i) => store.save(id, candidates[i] as Message[])))
        const stored = await (await open()).get(id)
        expect(candidates).toContainEqual(stored)
        await Promise.all(
          stores.map((store, i) => store.save(id, [...(candidates[i] as Message[]), message(i + 10)])),
        )
        const final = (await (await open()).get(id)) as Message[]
        expect(candidates.map((c, i) => [...c, message(i + 10)])).toContainEqual(final)
      })

      costIt("replaces a rewritten or compacted transcript", async () => {
        const store = await open()
        const id = uid("compact")
        const history = turns(10)
        await store.save(id, history)
        const summary: Message = { role: "user", content: "Summary of turns 0-6." }
        const compacted = [summary, ...history.slice(7)]
        let before = writeStats(store)
        await store.save(id, compacted)
        let cost = delta(before, writeStats(store))
        expect(cost.messageRowsDeleted).toBe(10)
        expect(cost.messageRowsWritten).toBe(4)
        expect(await (await open()).get(id)).toEqual(compacted)

        const edited = [...compacted]
        edited[2] = { role: "assistant", content: "edited" }
        before = writeStats(store)
        await store.save(id, edited)
        cost = delta(before, writeStats(store))
        expect(cost.messageRowsDeleted).toBe(2)
        expect(cost.messageRowsWritten).toBe(2)

        const truncated = edited.slice(0, 2)
        await store.save(id, truncated)
        expect(await (await open()).get(id)).toEqual(truncated)

        // Equal JSON under new objects is not a change.
        before = writeStats(store)
        await store.save(id, structuredClone(truncated))
        expect(delta(before, writeStats(store)).messageRowsWritten).toBe(0)
        expect(await store.get(id)).toEqual(truncated)
      })

      it("rejects messages that have no JSON form, writing nothing", async () => {
        const store = await open()
        const id = uid("unserialisable")
        await store.save(id, turns(1))
        const cyclic: Record<string, unknown> = { role: "user" }
        cyclic.content = cyclic
        await expect(store.save(id, [...turns(1), cyclic as unknown as Message])).rejects.toBeInstanceOf(
          StoreError,
        )
        expect(await store.get(id)).toEqual(turns(1))
      })
    })

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
        const claim = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<DurableStore["claimAnswer"]>>>)
          .value
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
        await store.putSnapshot(
          key,
          {},
          { holds: [{ requestId: leaf.id, conversationId: ids[2] as string }] },
        )
        for (const id of ids) {
          const attempt = store.claimAnswer(id, { id: leaf.id, ok: true })
          await expect(attempt).rejects.toBeInstanceOf(RuntimeHeldError)
          await expect(attempt).rejects.toMatchObject({ runtimeKey: key, code: "TNX_RUNTIME_HELD" })
        }
        expect(await store.findRequest(leaf.id)).toMatchObject({ state: "open", attempts: 0 })
        await expect(
          store.claimAnswer(ids[0] as string, { id: leaf.id, ok: true }, { runtimeKey: uid("other") }),
        ).rejects.toBeInstanceOf(RuntimeHeldError)
        const claim = await store.claimAnswer(
          ids[0] as string,
          { id: leaf.id, ok: true },
          { runtimeKey: key },
        )
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

    describe("the claim rule, case by case (CLAIM_CASES)", () => {
      for (const claimCase of CLAIM_CASES) {
        it(claimCase.name, async () => {
          await checkClaimCase(await open(), claimCase)
        })
      }
    })

    describe("snapshots", () => {
      it("stores, replaces and deletes opaque JSON by key", async () => {
        const store = await open()
        const key = uid("snapshot")
        const value = { version: 1, agents: [{ name: "a", inbox: ["x", "y"] }], nested: { n: 1.5, f: false } }
        await store.putSnapshot(key, value)
        expect(await (await open()).getSnapshot(key)).toEqual(value)
        await store.putSnapshot(key, { version: 2 })
        expect(await store.getSnapshot(key)).toEqual({ version: 2 })
        await store.putSnapshot(key, null)
        expect(await store.getSnapshot(key)).toBeNull()
        await store.deleteSnapshot(key)
        expect(await store.getSnapshot(key)).toBeUndefined()
        await expect(store.putSnapshot(key, () => 1)).rejects.toBeInstanceOf(StoreError)
        expect(await store.getSnapshot(key)).toBeUndefined()
      })
    })

    describe("arguments and lifecycle", () => {
      it("rejects bad arguments with ConfigError", async () => {
        const store = await open()
        const id = uid("args")
        await expect(store.get("")).rejects.toBeInstanceOf(ConfigError)
        await expect(store.save(id, "nope" as unknown as Message[])).rejects.toBeInstanceOf(ConfigError)
        await expect(store.save(id, [], { pending: { id: 1 } as unknown as Request })).rejects.toBeInstanceOf(
          ConfigError,
        )
        await expect(store.claimAnswer(id, { ok: true } as unknown as Answer)).rejects.toBeInstanceOf(
          AnswerInvalidError,
        )
        await expect(store.claimAnswer(id, { id: "r", ok: true }, { leaseMs: -1 })).rejects.toThrow(/leaseMs/)
        await expect(store.listPending({ limit: 1.5 })).rejects.toThrow(/limit/)
        await expect(store.listExpiredClaims({ limit: -1 })).rejects.toThrow(/limit/)
        expect(await store.get(id)).toBeUndefined()
      })

      it("fails with StoreError once closed", async () => {
        const store = await init.create()
        await store.save(uid("closing"), turns(1))
        await store.close()
        await store.close()
        await expect(store.get(uid("closed"))).rejects.toBeInstanceOf(StoreError)
        await expect(store.save(uid("closed"), [])).rejects.toBeInstanceOf(StoreError)
      })
    })

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
          opened.push(reporting)
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
            await store.save(id, turns(1))
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
  })
}

/** What each refusal of the claim table throws. */
const REFUSALS: Record<Exclude<ClaimCaseOutcome, "claim" | "takeover">, { name: string; message: RegExp }> = {
  "no-conversation": { name: "UnknownRequestError", message: /does not exist/ },
  "unknown-request": { name: "UnknownRequestError", message: /is not waiting on it/ },
  "already-applied": { name: "AnswerConflictError", message: /already applied/ },
  busy: { name: "AnswerConflictError", message: /being applied by another delivery/ },
  "runtime-held": { name: "RuntimeHeldError", message: /held by the saved runtime/ },
  failed: { name: "AnswerConflictError", message: /failed too often.*retryFailed/ },
  exhausted: { name: "AnswerConflictError", message: /failed too often.*retryFailed/ },
  expired: { name: "AnswerExpiredError", message: /expired at/ },
}

/**
 * How long after the case starts a `passes-after-history` request expires: its history's
 * claims must come before that. A machine too busy to take them in time gets the next, longer
 * limit (a fresh conversation each try), so the case proves the rule, not the machine's speed.
 */
const PASSES_AFTER_MS = [250, 2_000, 10_000]

/** The history of a `passes-after-history` case could not be taken before its expiry. */
class HistoryTooSlow extends Error {}

/**
 * Builds one row of the claim table on `store` (a request parked on a leaf and its parent,
 * the history's claims through the parent) and checks what the delivery ends in.
 */
async function checkClaimCase(store: DurableStore, c: ClaimCase): Promise<void> {
  for (const [i, passesAfterMs] of PASSES_AFTER_MS.entries()) {
    try {
      return await checkClaimCaseOnce(store, c, passesAfterMs)
    } catch (e) {
      if (!(e instanceof HistoryTooSlow) || i === PASSES_AFTER_MS.length - 1) throw e
    }
  }
}

async function checkClaimCaseOnce(store: DurableStore, c: ClaimCase, passesAfterMs: number): Promise<void> {
  const parent = uid("claim-case")
  const leaf = `${parent}/leaf.1`
  const expiresAt = {
    none: undefined,
    future: new Date(Date.now() + 3_600_000).toISOString(),
    past: new Date(Date.now() - 3_600_000).toISOString(),
    unreadable: "whenever",
    "passes-after-history": new Date(Date.now() + passesAfterMs).toISOString(),
  }[c.expiry]
  const req: Request = { ...request("approval"), ...(expiresAt !== undefined ? { expiresAt } : {}) }
  await store.save(leaf, turns(2), { pending: req })
  await store.save(parent, turns(2), { pending: { ...req, data: { ...req.data, path: ["root", "leaf.1"] } } })
  const runtimeKey = uid("runtime")
  if (c.runtime)
    await store.putSnapshot(runtimeKey, {}, { holds: [{ requestId: req.id, conversationId: leaf }] })
  const maxAttempts = c.maxAttempts ?? 3
  const first: Answer = { id: req.id, ok: true, data: { from: "the first claim" } }
  const held = { maxAttempts, ...(c.runtime ? { runtimeKey } : {}) }
  const inTime = c.expiry === "passes-after-history" ? Date.parse(expiresAt as string) : Infinity
  for (const step of c.history) {
    const claim = await store.claimAnswer(parent, first, held).catch((e: unknown) => {
      throw e instanceof AnswerExpiredError && Date.now() >= inTime ? new HistoryTooSlow() : e
    })
    if (step === "release") await store.releaseClaim(parent, claim.token)
    if (step === "fail") {
      await store.releaseClaim(parent, claim.token, { error: new Error("the resume failed"), maxAttempts })
    }
    if (step === "apply") {
      await store.save(leaf, turns(3), { pending: null })
      await store.save(parent, turns(3), { pending: null, claim: claim.token })
    }
  }
  if (c.expiry === "passes-after-history") {
    await sleep(Math.max(0, Date.parse(expiresAt as string) - Date.now()) + 20)
  }
  let through = { parent, leaf, "an unknown conversation": uid("unknown") }[c.through as string]
  if (c.through === "a conversation waiting on nothing") {
    through = uid("idle")
    await store.save(through, turns(1))
  }
  const answer: Answer = {
    id: c.answer.to === "another request" ? uid("req") : req.id,
    ok: c.answer.ok,
    data: { from: "this delivery" },
  }
  const claimFor = c.runtime?.claimFor
  const opts = {
    maxAttempts,
    ...(claimFor === "the holder"
      ? { runtimeKey }
      : claimFor === "another runtime"
        ? { runtimeKey: uid("runtime") }
        : {}),
  }
  const before = await store.findRequest(req.id)
  const attempt = store.claimAnswer(through as string, answer, opts)
  if (c.outcome === "claim" || c.outcome === "takeover") {
    const claim = await attempt
    expect(claim.takeover).toBe(c.outcome === "takeover")
    expect(claim.request.id).toBe(req.id)
    // A takeover completes the answer stored by the first claim, never the new one.
    expect(claim.answer).toEqual(c.outcome === "takeover" ? first : answer)
    expect(await store.findRequest(req.id)).toMatchObject({
      state: "claimed",
      attempts: (before?.attempts ?? 0) + 1,
    })
    return
  }
  const refusal = REFUSALS[c.outcome]
  const error = await attempt.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toMatchObject({ name: refusal.name })
  expect((error as Error).message).toMatch(refusal.message)
  if (c.outcome === "already-applied") expect(error).toMatchObject({ decision: { ok: true } })
  // A request being applied names the claimed decision: the first, whatever this answer says.
  if (c.outcome === "busy") expect(error).toMatchObject({ decision: { ok: true } })
  if (c.outcome === "exhausted" || c.outcome === "failed") {
    expect((await store.listFailed()).map((entry) => entry.request.id)).toContain(req.id)
  } else {
    // Any other refusal changes nothing.
    expect(await store.findRequest(req.id)).toEqual(before)
  }
}

/**
 * How a test extends a transcript: `warm` keeps the objects already saved (the store may
 * append on its fast path), `cold` hands over new, equal objects (the store must compare).
 */
const PATHS = ["warm path", "cold path"] as const
const grow: Record<(typeof PATHS)[number], (transcript: Message[], length: number) => Message[]> = {
  "warm path": (transcript, length) => [...transcript, ...turns(length).slice(transcript.length)],
  "cold path": (_transcript, length) => turns(length),
}

/** @internal A unique id, so tests sharing a backend never see each other's rows. */
export function uid(label: string): string {
  return `${label}-${randomUUID()}`
}

/** @internal Message `i` of a deterministic conversation: equal JSON for equal `i`. */
export function message(i: number): Message {
  return i % 2 === 0
    ? { role: "user", content: `question ${i}: ${"lorem ipsum ".repeat(8)}` }
    : { role: "assistant", content: `answer ${i}: ${"dolor sit amet ".repeat(8)}` }
}

/** @internal The first `n` messages of the deterministic conversation, as new objects. */
export function turns(n: number): Message[] {
  return Array.from({ length: n }, (_, i) => message(i))
}

/**
 * @internal Parks a run on `writer`, then resumes it on `reader` the way `deliverAnswer` does (claim,
 * load, checkpoint of the repaired transcript, final save releasing the claim) and checks the
 * stored result. `calls` is the caller's log of round trips: it is cleared after the reader's
 * first load, and what the resume itself added is returned.
 */
export async function parkAndResume(
  writer: DurableStore,
  reader: DurableStore,
  id: string,
  calls: string[],
): Promise<string[]> {
  const req = request("approval")
  await writer.save(id, turns(3), { pending: req })
  await reader.get(id) // prepares the schema or key layout
  calls.length = 0
  const claim = await reader.claimAnswer(id, { id: req.id, ok: true })
  const loaded = (await reader.get(id)) as Message[]
  const repaired = [...loaded.slice(0, 2), { role: "tool", content: "paid" } as Message]
  await reader.save(id, repaired, { claim: claim.token, checkpoint: true })
  await reader.save(id, [...repaired, message(3)], { pending: null, claim: claim.token })
  const sent = [...calls]
  expect(await writer.get(id)).toEqual([...repaired, message(3)])
  expect(await writer.getDecision(req.id)).toEqual({ ok: true })
  return sent
}

/** @internal A request with a unique id. */
export function request(kind: string): Request {
  return { id: uid("req"), kind, prompt: `please ${kind}`, data: { amount: 42, tags: ["a", "b"] } }
}

function delta(before: WriteStats, after: WriteStats): WriteStats {
  return {
    saves: after.saves - before.saves,
    messageRowsWritten: after.messageRowsWritten - before.messageRowsWritten,
    messageBytesWritten: after.messageBytesWritten - before.messageBytesWritten,
    messageRowsDeleted: after.messageRowsDeleted - before.messageRowsDeleted,
    messageRowsRead: after.messageRowsRead - before.messageRowsRead,
  }
}

const OPENAI_MESSAGES: Message[] = [
  { role: "system", content: "You are terse." },
  { role: "user", content: 'Book a table for 2 🍝 "tonight" — ok?\n\\ tab\there, nul \u0000 end' },
  {
    role: "assistant",
    content: null,
    tool_calls: [
      {
        id: "call_1",
        type: "function",
        function: { name: "book", arguments: '{"people":2,"time":"20:00"}' },
      },
      { id: "call_2", type: "function", function: { name: "notify", arguments: "{}" } },
    ],
  },
  { role: "tool", tool_call_id: "call_1", content: '{"ok":true}' },
  { role: "tool", tool_call_id: "call_2", content: "" },
  { role: "assistant", content: "Booked. Ünïcödé ✓ 日本語" },
]

const ANTHROPIC_MESSAGES: Message[] = [
  { role: "user", content: "Look up order 7." },
  {
    role: "assistant",
    content: [
      { type: "text", text: "Checking." },
      {
        type: "tool_use",
        id: "toolu_01",
        name: "lookup",
        input: { order: 7, filters: { status: ["open", "held"], limit: 2.5, exact: true, note: null } },
      },
    ],
  },
  {
    role: "user",
    content: [{ type: "tool_result", tool_use_id: "toolu_01", content: "order 7: shipped", is_error: false }],
  },
  { role: "assistant", content: [{ type: "text", text: "It shipped." }] },
]
