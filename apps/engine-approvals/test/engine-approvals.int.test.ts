import { type ChildProcess, execFile, spawn } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { openStore } from "@toolnexus/durable"
import { afterEach, describe, expect, it } from "vitest"
import { createApprovalsApp } from "../../approvals/src/app.js"
import { PG_URL, createDatabase } from "../../../packages/dbos/test/dbos-harness.js"
import { freePort, startRestateServer } from "../../../packages/restate/test/restate-harness.js"
import { AGENT, type EngineSettings, connectEngine } from "../src/engine.js"

const here = dirname(fileURLToPath(import.meta.url))
const TOKEN = "engine-approvals-test-token-0123456789"
const cleanups: (() => Promise<void>)[] = []
// After every try, not once for the file: a failed try's Restate server, workers and database
// must not outlive it into the next one (a retry in CI, or the other engine's test). Every
// cleanup runs even when one before it fails; the first failure is reported.
afterEach(async () => {
  const failures: unknown[] = []
  for (const cleanup of cleanups.splice(0).reverse()) {
    try {
      await cleanup()
    } catch (error) {
      failures.push(error)
    }
  }
  if (failures.length > 0) throw failures[0]
})

/** The app's built worker (`dist/worker.js`) in a process of its own. */
async function startWorker(settings: EngineSettings): Promise<{ kill(): Promise<void> }> {
  const env = {
    ...process.env,
    ENGINE: settings.engine,
    RESTATE_INGRESS: settings.ingress,
    RESTATE_ADMIN: settings.admin,
    WORKER_PORT: String(settings.workerPort),
    DBOS_DATABASE_URL: settings.databaseUrl,
  }
  const child: ChildProcess = spawn(process.execPath, [join(here, "..", "dist", "worker.js")], {
    env,
    stdio: "pipe",
  })
  let output = ""
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on("data", (chunk) => {
      output += chunk
      if (output.includes("worker ready")) resolve()
    })
    child.stderr?.on("data", (chunk) => {
      output += chunk
    })
    child.once("exit", (code) => reject(new Error(`worker exited (${code}): ${output}`)))
  })
  const kill = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve()
      child.once("exit", () => resolve())
      child.kill("SIGKILL")
    })
  cleanups.push(kill)
  return { kill }
}

async function inbox(settings: EngineSettings) {
  const store = await openStore("sqlite::memory:")
  const engine = connectEngine(settings)
  cleanups.push(async () => {
    await engine.close()
    await store.close()
  })
  const app = createApprovalsApp({
    store,
    security: { users: { demo: TOKEN }, apiTokens: { demo: TOKEN } },
    host: engine,
    agent: AGENT,
  })
  const call = async (path: string, body?: unknown) => {
    const res = await app.request(path, {
      method: body === undefined ? "GET" : "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    return { status: res.status, body: (await res.json()) as any }
  }
  return call
}

/** Starts a refund from the inbox, kills the worker while it waits, answers from the inbox. */
async function refundAcrossAKill(settings: EngineSettings) {
  let worker = await startWorker(settings)
  const call = await inbox(settings)
  const started = await call("/runs", { prompt: "Please refund order A-77 $40" })
  expect(started.status).toBe(201)
  expect(started.body).toMatchObject({ status: "pending", pending: { kind: "approval" } })
  const requestId = started.body.pending.id as string
  const listed = await call("/requests")
  expect(listed.body.requests.map((r: { request: { id: string } }) => r.request.id)).toEqual([requestId])
  expect(listed.body.requests[0]).toMatchObject({ tool: "refund_order", runId: started.body.id })

  await worker.kill()
  worker = await startWorker(settings)
  const runId = started.body.id as string
  const answered = await call(`/requests/${requestId}/answer`, { ok: true })
  // The answer is taken once the engine records the decision; the POST then waits up to the
  // inbox's settle time for the run, which the engine's replay after the restart may outlast:
  // then it is a 504 `run_pending`, the decision standing all the same.
  if (answered.status === 504) expect(answered.body.error).toMatchObject({ code: "run_pending" })
  else expect(answered.status).toBe(200)
  expect((await call("/requests")).body.requests).toEqual([])
  // A retried answer is refused with the decision that stands (its own); a different one too.
  for (const retry of [{ ok: true }, { ok: false }]) {
    const again = await call(`/requests/${requestId}/answer`, retry)
    expect(again.status).toBe(409)
    expect(again.body.error).toMatchObject({ code: "answer_conflict", decision: { ok: true } })
  }
  // Where the run ends is the engine's to tell (waited on, not read off the POST).
  const host = connectEngine(settings)
  try {
    const done = await host.result(runId, { timeoutMs: 30_000 })
    expect(done).toMatchObject({ status: "done" })
    expect((done as { text: string }).text).toContain("Done:")
    // The refund ran once: one tool result in the run's transcript.
    const transcript = (await host.transcript(runId)) ?? []
    expect(transcript.filter((m) => (m as { role?: string }).role === "tool")).toHaveLength(1)
  } finally {
    await host.close()
  }

  // The operator's command line on the same engine: list, approve once, a second decision conflicts.
  const second = await call("/runs", { prompt: "Please refund order A-78 $12" })
  const secondId = second.body.pending.id as string
  const target =
    settings.engine === "restate"
      ? ["--restate", settings.ingress, "--restate-admin", settings.admin]
      : ["--dbos", settings.databaseUrl]
  const listed2 = await toolnexus("pending", "list", ...target, "--json")
  expect(listed2.code, listed2.stderr).toBe(0)
  expect(JSON.parse(listed2.stdout).requests.map((e: { request: { id: string } }) => e.request.id)).toContain(
    secondId,
  )
  const approved = await toolnexus("pending", "approve", secondId, ...target)
  expect(approved.code, approved.stderr).toBe(0)
  expect(approved.stdout).toContain("the engine goes on with the run")
  const twice = await toolnexus("pending", "decline", secondId, ...target)
  expect(twice.code).toBe(4)
  expect(twice.stderr).toMatch(/first decision: approved/)
  // The approved run finishes in the engine (before the cleanup stops the worker under it).
  const engine = connectEngine(settings)
  try {
    expect(await engine.result(second.body.id, { timeoutMs: 30_000 })).toMatchObject({ status: "done" })
  } finally {
    await engine.close()
  }
}

/** The `toolnexus` command of @toolnexus/durable, run from this app (which has the engines installed). */
function toolnexus(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const bin = join(here, "..", "..", "..", "packages", "durable", "dist", "cli", "main.js")
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { cwd: join(here, ".."), timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
}

/**
 * A test's budget: the waits it allows itself, end to end. The answer's POST may take the inbox's
 * whole settle time (30 s) before its 504, the run's end is then waited on for up to 30 s, the
 * second run's too, and each command may take 60 s. The file's 60 s default left a run whose
 * answer took the 504 path about 20 s for all the rest (in CI it passed only on a retry).
 */
const BUDGET_MS = 240_000

describe("engine-approvals", () => {
  it(
    "on Restate: a refund answered from the inbox after the worker was killed",
    async () => {
      const restate = await startRestateServer()
      cleanups.push(() => restate.stop())
      const settings: EngineSettings = {
        engine: "restate",
        ingress: restate.ingress,
        admin: restate.admin,
        workerPort: await freePort(),
        databaseUrl: "",
      }
      await refundAcrossAKill(settings)
    },
    BUDGET_MS,
  )

  it.skipIf(!PG_URL)(
    "on DBOS: a refund answered from the inbox after the worker was killed",
    async () => {
      const db = await createDatabase()
      cleanups.push(() => db.drop())
      const settings: EngineSettings = {
        engine: "dbos",
        ingress: "",
        admin: "",
        workerPort: 0,
        databaseUrl: db.url,
      }
      await refundAcrossAKill(settings)
    },
    BUDGET_MS,
  )
})
