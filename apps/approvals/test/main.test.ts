import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, expect, it } from "vitest"

const main = fileURLToPath(new URL("../dist/main.js", import.meta.url))
const data = mkdtempSync(join(tmpdir(), "tnx-approvals-main-"))
const children: ChildProcess[] = []
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL")
  rmSync(data, { recursive: true, force: true })
})

/** Starts dist/main.js on a free port with the scripted model; resolves with its URL. */
function start(): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const env: Record<string, string | undefined> = {
    ...process.env,
    PORT: "0",
    DATABASE_URL: `sqlite:${join(data, "nested", "approvals.db")}`,
  }
  for (const key of ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HOST"]) delete env[key]
  const child = spawn(process.execPath, [main], { env, stdio: ["ignore", "pipe", "pipe"] })
  children.push(child)
  let out = ""
  child.stdout?.on("data", (chunk) => {
    out += chunk
  })
  child.stderr?.on("data", (chunk) => {
    out += chunk
  })
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL logged within 10 s:\n${out}`)), 10_000)
    child.once("exit", (code) => reject(new Error(`main exited with ${code}:\n${out}`)))
    child.stdout?.on("data", () => {
      const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1]
      if (url === undefined) return
      clearTimeout(timer)
      resolve({ child, url, output: () => out })
    })
  })
}

async function post(url: string, body: unknown): Promise<any> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  })
  return { status: res.status, body: await res.json() }
}

it("main serves the API with the scripted model on SQLite and stops cleanly on SIGTERM", async () => {
  const { child, url, output } = await start()
  expect(output()).toMatch(/store: sqlite:.*approvals\.db/)
  expect(output()).toMatch(/model: a scripted model/)

  const run = await post(`${url}/runs`, { prompt: "Refund order Z-9 $19" })
  expect(run.status).toBe(201)
  expect(run.body.pending.prompt).toBe("Refund $19.00 on order Z-9 (reason: customer request)?")

  const done = await post(`${url}/requests/${run.body.pending.id}/answer`, { ok: true })
  expect(done.status).toBe(200)
  expect(done.body.text).toMatch(/^Done: Refunded \$19\.00 on order Z-9/)

  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  child.kill("SIGTERM")
  expect(await exited).toBe(0)
  expect(output()).toContain("shutting down")
})
