import { StoreError } from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import { type ContractContext, uid } from "./context.js"

/** @internal Registers this topic of `describeStoreContract` for one backend. */
export function describeSnapshots({ open }: ContractContext): void {
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

    it("createSnapshot stores a value once: of racing creates across stores exactly one wins", async () => {
      const [a, b] = [await open(), await open()]
      const key = uid("once")
      const won = await Promise.all([
        a.createSnapshot(key, { by: "a" }),
        b.createSnapshot(key, { by: "b" }),
        a.createSnapshot(key, { by: "a2" }),
      ])
      expect(won.filter(Boolean)).toHaveLength(1)
      const kept = await b.getSnapshot(key)
      expect([{ by: "a" }, { by: "b" }, { by: "a2" }][won.indexOf(true)]).toEqual(kept)
      expect(await a.createSnapshot(key, { by: "late" })).toBe(false)
      expect(await a.getSnapshot(key)).toEqual(kept)
      await a.deleteSnapshot(key)
      expect(await b.createSnapshot(key, { by: "after delete" })).toBe(true)
      await expect(a.createSnapshot(uid("bad"), () => 1)).rejects.toBeInstanceOf(StoreError)
    })
  })
}
