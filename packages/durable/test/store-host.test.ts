import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describeHostContract } from "@toolnexus/agents/engine-testing"
import { afterAll } from "vitest"
import { type DurableStore, type StoreHostAgent, createStoreHost } from "../src/index.js"
import { MemoryData, MemoryStore } from "../src/memory/memory-store.js"
import { SqliteStore } from "../src/sqlite/index.js"

const host = (store: DurableStore, agents: unknown[], extra: object) =>
  createStoreHost({ store, agents: agents as StoreHostAgent[], sweepEveryMs: false, ...extra })

// Two stores on one MemoryData behave like two processes over one database.
const data = new MemoryData()
describeHostContract<DurableStore>("createStoreHost on the memory store", {
  store: async () => new MemoryStore({}, data),
  host,
})

const dir = mkdtempSync(join(tmpdir(), "tnx-store-host-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
describeHostContract<DurableStore>("createStoreHost on SQLite", {
  store: async () => new SqliteStore({ path: join(dir, "host.db") }),
  host,
  closeStore: (store) => store.close(),
})
