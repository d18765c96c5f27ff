import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterEach, expect, it } from "vitest"

// The two-process flow, offline on the scripted models: the built app (`turbo run build`).

const main = fileURLToPath(new URL("../dist/main.js", import.meta.url))
const dirs: string[] = []
const servers: ChildProcess[] = []
afterEach(() => {
  for (const s of servers.splice(0)) if (s.exitCode === null) s.kill("SIGKILL")
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function workspace() {
  const data = mkdtempSync(join(tmpdir(), "tnx-a2a-agents-"))
  dirs.push(data)
  const env = { ...process.env, A2A_AGENTS_DATA: data }
  const run = (...args: string[]) => {
    const child = spawnSync(process.execPath, [main, ...args], { env, encoding: "utf8", timeout: 60_000 })
    return { code: child.status, out: child.stdout, err: child.stderr }
  }
  const travel = () =>
    new Promise<ChildProcess>((resolve, reject) => {
      const child = spawn(process.execPath, [main, "travel"], { env, stdio: ["ignore", "pipe", "inherit"] })
      servers.push(child)
      let out = ""
      child.stdout?.on("data", (chunk: Buffer) => {
        out += chunk.toString()
        if (out.includes("READY")) resolve(child)
      })
      child.on("exit", (code) => reject(new Error(`travel exited ${code}`)))
    })
  return {
    data,
    run,
    travel,
    bookings: () => readFileSync(join(data, "bookings.log"), "utf8").split("\n").filter(Boolean),
  }
}

it("the demo: the approval reaches the coordinator's inbox, survives a SIGKILL of the travel agent, one answer finishes both", () => {
  const { run } = workspace()
  const { code, out, err } = run()
  expect(err).toBe("")
  expect(code).toBe(0)
  expect(out).toMatch(
    /\[coordinator\] the travel agent's task \S+ waits: "Book flight TP1351 to Lisbon for EUR 180\?"/,
  )
  expect(out).toMatch(/\[inbox\] 1 open request\(s\)/)
  expect(out).toMatch(/\(input, remote approval from travel\): Book flight TP1351/)
  expect(out).toMatch(/was killed with SIGKILL/)
  expect(out).toMatch(/\[answer\] Coordinator: Your trip is set: booked TP1351, confirmation TNX-TP1351\./)
  expect(out).toMatch(/\[demo\] bookings made: 1 /)
  const travelPids = [...out.matchAll(/\[travel\] pid (\d+)/g)].map((m) => m[1])
  expect(travelPids).toHaveLength(2)
  expect(travelPids[0]).not.toBe(travelPids[1])
})

it("nothing is booked before the answer; a second answer applies nothing; a decline books nothing", async () => {
  const { run, travel, bookings, data } = workspace()
  writeFileSync(join(data, "bookings.log"), "")
  await travel()
  expect(run("ask").code).toBe(0)
  expect(bookings()).toEqual([])
  expect(run("answer", "approve").out).toMatch(/Your trip is set/)
  expect(bookings()).toHaveLength(1)
  const again = run("answer", "approve")
  expect(again.code).toBe(1)
  expect(again.out).toMatch(/nothing is waiting/)
  expect(bookings()).toHaveLength(1)

  // The finished conversation takes a new turn: the coordinator calls the travel agent again.
  expect(run("ask").code).toBe(0)
  const declined = run("answer", "decline")
  expect(declined.out).toMatch(/declined: Book flight TP1351/)
  expect(bookings()).toHaveLength(1)
})
