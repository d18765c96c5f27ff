import { type ChildProcess, spawn } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { openStore } from "@toolnexus/durable"
import { afterAll, describe, expect, it } from "vitest"
import { createApprovalsApp } from "../../approvals/src/app.js"
import { PG_URL, createDatabase } from "../../../packages/dbos/test/dbos-harness.js"
import { freePort, startRestateServer } from "../../../packages/restate/test/restate-harness.js"
import { AGENT, type EngineSettings, connectEngine } from "../src/engine.js"

const here = dirname(fileURLToPath(import.meta.url))
const TOKEN = "engine-approvals-test-token-0123456789"
const cleanups: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
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
  const answered = await call(`/requests/${requestId}/answer`, { ok: true })
  expect(answered.status).toBe(200)
  expect(answered.body.run ?? answered.body).toMatchObject({ status: "done" })
  expect(JSON.stringify(answered.body)).toContain("Done:")
  expect((await call("/requests")).body.requests).toEqual([])
  const again = await call(`/requests/${requestId}/answer`, { ok: false })
  expect(again.status).toBe(409)
}

describe("engine-approvals", () => {
  it("on Restate: a refund answered from the inbox after the worker was killed", async () => {
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
  })

  it.skipIf(!PG_URL)("on DBOS: a refund answered from the inbox after the worker was killed", async () => {
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
  })
})
