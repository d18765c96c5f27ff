import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { SqliteStore } from "../src/sqlite/index.js"
import { describeResumeSuite } from "./resume-suite.js"

const dir = mkdtempSync(join(tmpdir(), "tnx-resume-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describeResumeSuite("SQLite (file)", {
  open: async () => new SqliteStore({ path: join(dir, "resume.db"), opTimeoutMs: 200 }),
})
