import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { describeProcessSuite } from "./process-suite.js"

const dir = mkdtempSync(join(tmpdir(), "tnx-proc-sqlite-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describeProcessSuite("SQLite", { storeUrl: () => `sqlite:${join(dir, "shared.db")}` })
