import { spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterEach, expect, it } from "vitest"

const main = fileURLToPath(new URL("../dist/main.js", import.meta.url))
const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function workspace() {
  const data = mkdtempSync(join(tmpdir(), "tnx-ops-agent-"))
  dirs.push(data)
  const run = (...args: string[]) => {
    const env: Record<string, string | undefined> = { ...process.env, OPS_AGENT_DATA: data }
    for (const key of ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"]) delete env[key]
    const child = spawnSync(process.execPath, [main, ...args], { env, encoding: "utf8", timeout: 60_000 })
    return { code: child.status, out: child.stdout, err: child.stderr }
  }
  return { report: join(data, "scratch", "report.md"), run }
}

it("the demo runs offline: bash and write each wait in the inbox, then run after approval in another process", () => {
  const { report, run } = workspace()
  const { code, out, err } = run()
  expect(err).toBe("")
  expect(code).toBe(0)
  expect(out).toMatch(/\[ask\] waiting for approval: bash \{"command":"du -sk \* \| sort -n"\}/)
  expect(out).toMatch(/\[inbox\] pnd-\S+ approval bash /)
  expect(out).toMatch(/\[answer\] waiting for approval: write \{"path":"report.md"/)
  expect(out).toMatch(/\[inbox\] pnd-\S+ approval write /)
  expect(out).toMatch(/\[answer\] agent: Done\. Wrote \d+ bytes to report\.md/)
  const text = readFileSync(report, "utf8")
  expect(text).toMatch(/^# Disk usage \(KiB\)\n\n\d+\tcache\n\d+\tlogs\n$/)
})

it("nothing runs before the answer, a decline runs nothing, and a redelivery is refused", () => {
  const { report, run } = workspace()
  expect(run("ask").code).toBe(0)
  const inbox = run("inbox").out
  const id = /\[inbox\] (pnd-\S+) approval bash/.exec(inbox)?.[1] as string
  expect(id).toBeDefined()
  const approved = run("answer", "approve", id)
  expect(approved.code).toBe(0)
  expect(existsSync(report)).toBe(false)
  const again = run("answer", "approve", id)
  expect(again.code).toBe(2)
  expect(again.out).toMatch(/already decided/)
  const declined = run("answer", "decline")
  expect(declined.out).toMatch(/agent: Done\. declined: Approve builtin tool write/)
  expect(existsSync(report)).toBe(false)
  expect(run("inbox").out).toMatch(/nothing is waiting/)
})
