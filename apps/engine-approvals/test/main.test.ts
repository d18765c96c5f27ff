import { type ChildProcess, spawn } from "node:child_process"
import { request } from "node:http"
import { join } from "node:path"
import { afterAll, expect, it } from "vitest"

// dist/main.js (the built app): the inbox's server, with no engine running (nothing here reaches it).
const main = join(import.meta.dirname, "..", "dist", "main.js")
const children: ChildProcess[] = []
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL")
})

/** Starts the inbox on a free port; resolves with the URL it prints. */
function start(): Promise<string> {
  const child = spawn(process.execPath, [main], {
    env: { ...process.env, PORT: "0", DATABASE_URL: "sqlite::memory:", ENGINE: "restate" },
    stdio: ["ignore", "pipe", "pipe"],
  })
  children.push(child)
  let out = ""
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`main exited with ${code}:\n${out}`)))
    child.stderr?.on("data", (chunk) => {
      out += chunk
    })
    child.stdout?.on("data", (chunk) => {
      out += chunk
      const url = /approvals inbox on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1]
      if (url) resolve(url)
    })
  })
}

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

it("the inbox answers a malformed Host with 400 on every route and keeps serving", async () => {
  const url = await start()
  for (const host of ["a b", "a@b", "h:99999"])
    for (const [method, path] of [
      ["GET", "/"],
      ["GET", "/requests"],
      ["POST", "/requests/pnd-x/answer"],
    ] as const)
      expect([host, path, await statusWithHost(url, method, path, host)]).toEqual([host, path, 400])
  expect(await statusWithHost(url, "GET", "/requests", new URL(url).host)).toBe(401)
})
