import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { SqliteStore } from "../src/sqlite/index.js"
import { type ResumeBackend, describeResumeSuite } from "./resume-suite.js"
import { describeTreeIdentitySuite } from "./tree-identity-suite.js"

const dir = mkdtempSync(join(tmpdir(), "tnx-resume-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const sqlite: ResumeBackend = {
  open: async (extra) => new SqliteStore({ path: join(dir, "resume.db"), opTimeoutMs: 200, ...extra }),
}
describeResumeSuite("SQLite (file)", sqlite)
describeTreeIdentitySuite("SQLite (file)", sqlite)
