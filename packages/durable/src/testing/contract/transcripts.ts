import { type Message, StoreError } from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import { encodeMessages } from "../../store-engine/message-codec.js"
import type { WriteStats } from "../../store-engine/write-stats.js"
import {
  type ContractContext,
  uid,
  message,
  turns,
  delta,
  OPENAI_MESSAGES,
  ANTHROPIC_MESSAGES,
} from "./context.js"

/** @internal Registers this topic of `describeStoreContract` for one backend. */
export function describeTranscripts({ open, costIt, writeStats }: ContractContext): void {
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
        const repaired = [...parked.slice(0, 2), { role: "user", content: "repaired" } as Message, message(3)]
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
}
