import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, expect, it } from "vitest"

const main = fileURLToPath(new URL("../dist/main.js", import.meta.url))
const data = mkdtempSync(join(tmpdir(), "tnx-quickstart-"))
afterAll(() => rmSync(data, { recursive: true, force: true }))

function run(...args: string[]) {
  const env: Record<string, string | undefined> = { ...process.env, QUICKSTART_DATA: data }
  for (const key of ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"]) delete env[key]
  const child = spawnSync(process.execPath, [main, ...args], { env, encoding: "utf8" })
  return { code: child.status, out: child.stdout, err: child.stderr }
}

it("the demo parks the run in one process and finishes it in another", () => {
  const { code, out, err } = run()
  expect(err).toBe("")
  expect(code).toBe(0)
  const pids = [...out.matchAll(/pid (\d+)/g)].map((m) => m[1])
  expect(pids).toHaveLength(2)
  expect(pids[0]).not.toBe(pids[1])
  expect(out).toMatch(/it waits for a human: approval — "Transfer \$120 to ACME GmbH for INV-7\?"/)
  expect(out).toMatch(/agent: Done\. Transferred \$120 to ACME GmbH \(payment ref invoice-INV-7:call_/)
})

it("a decline by hand is applied, and a second answer finds nothing waiting", () => {
  expect(run("ask").code).toBe(0)
  expect(run("ask").out).toMatch(/already waits on "Transfer \$120 to ACME GmbH for INV-7\?"/)
  const declined = run("answer", "decline")
  expect(declined.out).toMatch(/agent: Done\. declined: Transfer \$120 to ACME GmbH for INV-7\? \(declined\)/)
  const again = run("answer", "approve")
  expect(again.code).toBe(1)
  expect(again.out).toMatch(/nothing is waiting/)
})
