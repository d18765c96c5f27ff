import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, expect, it } from "vitest"
// The built kit: its workers are separate processes running the built package.
import { runCrashKit } from "@toolnexus/durable/testing"

const dir = mkdtempSync(join(tmpdir(), "tnx-crash-sqlite-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

it("keeps the §9 promise at every crash point on SQLite", { timeout: 240_000 }, async () => {
  const report = await runCrashKit({ store: { url: `sqlite:${join(dir, "kit.db")}` } })
  console.info(JSON.stringify(report.outcomes.map(({ problems: _, ...o }) => o)))
  expect(report.failures).toEqual([])
  expect(report.outcomes.every((o) => o.completed && o.decisionsApplied === 1)).toBe(true)
})
