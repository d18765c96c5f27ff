import type { DurableStore } from "../durable-store.js"
import type { DurableStoreOptions } from "../store-engine/store-base.js"
import type { WriteStats } from "../store-engine/write-stats.js"
import { afterEach, describe, it } from "vitest"
import { describeClaimTable } from "./contract/claim-table.js"
import { describeClaims } from "./contract/claims.js"
import type { ContractContext } from "./contract/context.js"
import { describeFaults } from "./contract/faults.js"
import { describeLifecycle } from "./contract/lifecycle.js"
import { describePending } from "./contract/pending.js"
import { describeRequestIndex } from "./contract/request-index.js"
import { describeResumeCommit } from "./contract/resume-commit.js"
import { describeSnapshots } from "./contract/snapshots.js"
import { describeTranscripts } from "./contract/transcripts.js"

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
    const adopt = (store: DurableStore) => {
      opened.push(store)
    }
    const context: ContractContext = { init, open, adopt, costIt, writeStats }
    describeTranscripts(context)
    describePending(context)
    describeClaims(context)
    describeRequestIndex(context)
    describeClaimTable(context)
    describeSnapshots(context)
    describeResumeCommit(context)
    describeLifecycle(context)
    describeFaults(context)
  })
}
