import { spawn, spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { createServer } from "node:net"
import { createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, expect, it } from "vitest"

const main = fileURLToPath(new URL("../dist/main.js", import.meta.url))
const data = mkdtempSync(join(tmpdir(), "tnx-quickstart-"))
afterAll(() => rmSync(data, { recursive: true, force: true }))

function cleanEnv(extra: Record<string, string> = {}) {
  const env: Record<string, string | undefined> = { ...process.env, QUICKSTART_DATA: data }
  for (const key of ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "QUICKSTART_DEBUG"])
    delete env[key]
  return { ...env, ...extra }
}

function run(...args: string[]) {
  const child = spawnSync(process.execPath, [main, ...args], { env: cleanEnv(), encoding: "utf8" })
  return { code: child.status, out: child.stdout, err: child.stderr }
}

/** Runs a step asynchronously (the fake model server lives in this process). */
function runWith(env: Record<string, string>, ...args: string[]) {
  const child = spawn(process.execPath, [main, ...args], { env: cleanEnv(env) })
  let out = ""
  let err = ""
  child.stdout.on("data", (d) => {
    out += d
  })
  child.stderr.on("data", (d) => {
    err += d
  })
  return new Promise<{ code: number | null; out: string; err: string }>((resolve) =>
    child.on("exit", (code) => resolve({ code, out, err })),
  )
}

/** A local port nothing listens on. */
async function closedPort(): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve))
  const { port } = probe.address() as { port: number }
  await new Promise((resolve) => probe.close(resolve))
  return port
}

it("the demo parks the run in one process and finishes it in another", () => {
  const { code, out, err } = run()
  expect(err).toBe("")
  expect(code).toBe(0)
  const pids = [...out.matchAll(/pid (\d+)/g)].map((m) => m[1])
  expect(pids).toHaveLength(2)
  expect(pids[0]).not.toBe(pids[1])
  expect(out).toMatch(/it waits for a human: approval — "Transfer \$120 to ACME GmbH for INV-7\?"/)
  // Progress streams: the agent's words, its tool call, then the resumed call's result.
  expect(out).toMatch(
    /\[ask\] agent: I'll pay that invoice; it needs your approval first\.\n\[ask\] → transfer_funds /,
  )
  expect(out).toMatch(/\[answer\] ← transfer_funds: Transferred \$120/)
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

it("an unreachable model is one friendly line with the fix, not a stack trace", async () => {
  rmSync(join(data, "quickstart.db"), { force: true })
  const port = await closedPort()
  const baseUrl = `http://127.0.0.1:${port}/v1`
  const { code, out, err } = await runWith({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: baseUrl }, "ask")
  expect(code).toBe(1)
  expect(err).toBe(`[ask] cannot reach the model at ${baseUrl}: is the server running?\n`)
  expect(out).not.toMatch(/\bat .*\.js:\d+/)
})

it("a refused API key says so with its status", async () => {
  rmSync(join(data, "quickstart.db"), { force: true })
  const server = await createFakeLLMServer()
  try {
    server.enqueue({ status: 401, text: "Incorrect API key provided" })
    const baseUrl = `${server.url}/v1`
    const { code, err } = await runWith({ OPENAI_API_KEY: "sk-wrong", OPENAI_BASE_URL: baseUrl }, "ask")
    expect(code).toBe(1)
    expect(err).toMatch(/^\[ask\] the API key was refused \(401\): check OPENAI_API_KEY/)
    expect(err.split("\n").filter(Boolean)).toHaveLength(1)
    expect(err).not.toContain("sk-wrong")
  } finally {
    await server.close()
  }
})
