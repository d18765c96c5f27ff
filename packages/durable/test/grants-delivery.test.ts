import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { createMemoryStore } from "../src/index.js"
import { SqliteStore } from "../src/sqlite/index.js"
import { describeGrantsAndDelivery } from "./grants-delivery-suite.js"

describeGrantsAndDelivery("the memory store", { store: async () => createMemoryStore() })

const dir = mkdtempSync(join(tmpdir(), "tnx-grants-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
describeGrantsAndDelivery("SQLite", {
  store: async () => new SqliteStore({ path: join(dir, `${randomUUID()}.db`) }),
  closeStore: (store) => store.close(),
})
