import {
  type Answer,
  AnswerInvalidError,
  ConfigError,
  type Message,
  type Request,
  StoreError,
} from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import { type ContractContext, uid, turns } from "./context.js"

/** @internal Registers this topic of `describeStoreContract` for one backend. */
export function describeLifecycle({ init, open }: ContractContext): void {
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
}
