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
  const data = mkdtempSync(join(tmpdir(), "tnx-mcp-files-"))
  dirs.push(data)
  const run = (...args: string[]) => {
    const env: Record<string, string | undefined> = { ...process.env, MCP_FILES_DATA: data }
    for (const key of ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"]) delete env[key]
    const child = spawnSync(process.execPath, [main, ...args], { env, encoding: "utf8", timeout: 60_000 })
    return { code: child.status, out: child.stdout, err: child.stderr }
  }
  return { notes: join(data, "workspace", "notes.md"), run }
}

it("the demo parks the write in one process and performs it after approval in another", () => {
  const { notes, run } = workspace()
  const { code, out, err } = run()
  expect(err).toBe("")
  expect(code).toBe(0)
  const pids = [...out.matchAll(/pid (\d+)/g)].map((m) => m[1])
  expect(pids).toHaveLength(2)
  expect(pids[0]).not.toBe(pids[1])
  expect(out).toMatch(/MCP server files: ready, \d+ tools/)
  expect(out).toMatch(/it waits for a human: approval of files\/write_file on .*notes\.md/)
  expect(out).toMatch(/agent: Done\. # Today/)
  expect(readFileSync(notes, "utf8")).toContain("- [ ] water the plants")
})

it("nothing is written before the answer, and a decline writes nothing", () => {
  const { notes, run } = workspace()
  expect(run("ask").code).toBe(0)
  expect(existsSync(notes)).toBe(false)
  expect(run("ask").out).toMatch(/already waits on "Allow MCP server "files" to run write_file/)
  const declined = run("answer", "decline")
  expect(declined.out).toMatch(
    /agent: Done\. declined: Allow MCP server "files" to run write_file .*\(declined\)/,
  )
  expect(existsSync(notes)).toBe(false)
  const again = run("answer", "approve")
  expect(again.code).toBe(1)
  expect(again.out).toMatch(/nothing is waiting/)
})

it("a step whose files server cannot start stops with the reason and exit code 1, acting on nothing", () => {
  // The answer step does not create the folder; the filesystem server refuses a missing one.
  const { notes, run } = workspace()
  const { code, out } = run("answer", "approve")
  expect(code).toBe(1)
  expect(out).toMatch(/\[answer\] MCP server files did not start: .+/)
  expect(out).not.toMatch(/resumed|nothing is waiting/)
  expect(existsSync(notes)).toBe(false)
})
