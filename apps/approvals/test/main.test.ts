import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { request } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, expect, it } from "vitest"

const API_TOKEN = "main-test-api-token-0123456789"
const main = fileURLToPath(new URL("../dist/main.js", import.meta.url))
const data = mkdtempSync(join(tmpdir(), "tnx-approvals-main-"))
const children: ChildProcess[] = []
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL")
  rmSync(data, { recursive: true, force: true })
})

/** Starts dist/main.js on a free port with the scripted model; resolves with its URL. */
function start(
  extraEnv: Record<string, string> = {},
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const env: Record<string, string | undefined> = {
    ...process.env,
    PORT: "0",
    DATABASE_URL: `sqlite:${join(data, "nested", "approvals.db")}`,
    APPROVALS_API_TOKENS: `ci:${API_TOKEN}`,
    ...extraEnv,
  }
  for (const key of ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HOST", "APPROVALS_TOKEN", "APPROVALS_USERS"]) {
    if (!(key in extraEnv)) delete env[key]
  }
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
    headers: { "content-type": "application/json", authorization: `Bearer ${API_TOKEN}` },
    body: JSON.stringify(body),
  })
  return { status: res.status, body: await res.json() }
}

it("main serves the API with the scripted model on SQLite and stops cleanly on SIGTERM", async () => {
  const { child, url, output } = await start()
  expect(output()).toMatch(/store: sqlite:.*approvals\.db/)
  expect(output()).toMatch(/model: a scripted model/)
  // No token configured: one is generated and printed, so the service is never open.
  expect(output()).toMatch(/sign in with the token [\w-]{20,} \(generated/)
  expect((await fetch(`${url}/requests`)).status).toBe(401)

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

it("main runs a team run with the scripted model: one request for the tree, one answer finishes it", async () => {
  const { child, url } = await start({ APPROVALS_TOKEN: "configured-token-0123456789" })
  const run = await post(`${url}/runs`, { prompt: "Refund order TM-1 $7", team: true })
  expect(run.status).toBe(201)
  const listed = await (
    await fetch(`${url}/requests`, { headers: { authorization: `Bearer ${API_TOKEN}` } })
  ).json()
  expect((listed as any).requests).toHaveLength(1)
  expect((listed as any).requests[0].path).toEqual(["root", "support.1", "payments.1"])
  const done = await post(`${url}/requests/${run.body.pending.id}/answer`, { ok: true })
  expect(done.body).toMatchObject({ kind: "runtime", status: "done" })
  expect(done.body.text).toMatch(/Refunded \$7\.00 on order TM-1/)
  child.kill("SIGTERM")
})

/** A request with a chosen `Host` header (fetch cannot set one): its status. */
function statusWithHost(url: string, method: string, path: string, host: string): Promise<number> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, method, path, headers: { host } }, (res) => {
      res.resume()
      resolve(res.statusCode ?? 0)
    })
    req.on("error", reject)
    req.end()
  })
}

it("main answers a malformed Host with 400 on every route and keeps serving", async () => {
  const { child, url } = await start()
  for (const host of ["a b", "a@b", "h:99999"])
    for (const [method, path] of [
      ["GET", "/"],
      ["GET", "/requests"],
      ["POST", "/requests/pnd-x/answer"],
      ["POST", "/webhooks/answer"],
    ] as const)
      expect([host, path, await statusWithHost(url, method, path, host)]).toEqual([host, path, 400])
  expect(await statusWithHost(url, "GET", "/requests", new URL(url).host)).toBe(401)
  child.kill("SIGTERM")
})

it("main explains a port in use in one line instead of a stack trace", async () => {
  const first = await start()
  const port = new URL(first.url).port
  const child = spawn(process.execPath, [main], {
    env: { ...process.env, PORT: port, DATABASE_URL: "sqlite::memory:", OPENAI_API_KEY: "" },
    stdio: ["ignore", "pipe", "pipe"],
  })
  children.push(child)
  let err = ""
  child.stderr?.on("data", (chunk) => {
    err += chunk
  })
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve))
  expect(code).toBe(1)
  expect(err.trim()).toBe(
    `approvals: port ${port} is already in use: set PORT (or --port) to a free one, or 0 for any`,
  )
  first.child.kill("SIGTERM")
})
