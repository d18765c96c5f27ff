import { type ChildProcess, spawn } from "node:child_process"
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { type Task, TaskState } from "@a2a-js/sdk"
import { Redis } from "ioredis"
import pg from "pg"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { answerMessage, message, sdkClient, send } from "./inbound-kit.js"

// The serving process is SIGKILLed between the halt and the answer; a new process on the
// same store (a SQLite file; Redis and PostgreSQL too when TOOLNEXUS_TEST_REDIS_URL /
// TOOLNEXUS_TEST_PG_URL are set, keys under a prefix / a schema of this run, deleted
// afterwards) answers the task. Two processes answering at once
// apply it once. Runs the built package (`turbo run build` first, as CI does).

const child = fileURLToPath(new URL("./fixtures/serve-child.mjs", import.meta.url))
let dir: string
beforeAll(() => {
  dir = join(tmpdir(), `tnx-a2a-restart-${process.pid}-${Date.now()}`)
  mkdirSync(dir, { recursive: true })
})
const redisUrl = process.env.TOOLNEXUS_TEST_REDIS_URL
const redisPrefix = `tnx-a2a-restart-${process.pid}-${Date.now()}:`
const pgUrl = process.env.TOOLNEXUS_TEST_PG_URL
const pgSchema = `tnx_a2a_restart_${process.pid}_${Date.now()}`
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true })
  if (pgUrl) {
    const admin = new pg.Pool({ connectionString: pgUrl, max: 1 })
    try {
      for (const test of ["killed", "race"])
        await admin.query(`DROP SCHEMA IF EXISTS "${pgSchema}_${test}" CASCADE`)
    } finally {
      await admin.end()
    }
  }
  if (!redisUrl) return
  const redis = new Redis(redisUrl)
  const keys = await redis.keys(`${redisPrefix}*`)
  if (keys.length > 0) await redis.del(...keys)
  await redis.quit()
})

/**
 * Where a test's serving processes keep their tasks (argv for serve-child.mjs), and whether they
 * serve `{ host, agent, store }` (else the shorthand, which builds the same kind of host).
 */
type StoreKind = { name: string; store(test: string): string[]; host?: boolean }
const kinds: StoreKind[] = [
  { name: "SQLite file", store: (test) => [join(dir, `${test}.db`)] },
  { name: "SQLite file, { host, agent }", store: (test) => [join(dir, `${test}-host.db`)], host: true },
]
if (redisUrl) {
  kinds.push({ name: "Redis", store: (test) => [redisUrl, `${redisPrefix}${test}:`] })
  kinds.push({
    name: "Redis, { host, agent }",
    store: (test) => [redisUrl, `${redisPrefix}${test}-host:`],
    host: true,
  })
}
if (pgUrl)
  kinds.push({
    name: "PostgreSQL, { host, agent }",
    store: (test) => [pgUrl, `${pgSchema}_${test}`],
    host: true,
  })
const children: ChildProcess[] = []
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill("SIGKILL")
})

async function startServer(
  store: string[],
  effects: string,
  host = false,
): Promise<{ url: string; process: ChildProcess }> {
  const [db, prefix] = store
  const argv = [child, db as string, effects, ...(prefix ? [prefix] : [])]
  const env = { ...process.env, TNX_A2A_CHILD_HOST: host ? "1" : "0" }
  const proc = spawn(process.execPath, argv, { stdio: ["pipe", "pipe", "inherit"], env })
  children.push(proc)
  const url = await new Promise<string>((resolve, reject) => {
    let out = ""
    proc.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString()
      const match = /READY (\S+)/.exec(out)
      if (match?.[1]) resolve(match[1])
    })
    proc.on("exit", (code) => reject(new Error(`serving process exited with ${code}`)))
  })
  return { url, process: proc }
}

const killed = (proc: ChildProcess) =>
  new Promise<void>((resolve) => {
    proc.on("exit", () => resolve())
    proc.kill("SIGKILL")
  })

const effectsIn = (file: string) => readFileSync(file, "utf8").split("\n").filter(Boolean)

describe.each(kinds)("serveA2A across processes ($name)", (kind) => {
  it("SIGKILL between halt and answer: a new process answers the task; the tool runs once", async () => {
    const db = kind.store("killed")
    const effects = join(dir, `killed-${kind.name}.effects`)
    writeFileSync(effects, "")
    const first = await startServer(db, effects, kind.host)
    const halted = (await (await sdkClient(first.url)).sendMessage(send(message("book BA117")))) as Task
    expect(halted.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
    await killed(first.process)

    const second = await startServer(db, effects, kind.host)
    const client = await sdkClient(second.url)
    const read = await client.getTask({ tenant: "", id: halted.id, historyLength: undefined })
    expect(read.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
    const done = (await client.sendMessage(send(answerMessage({ ok: true }, halted.id, "yes")))) as Task
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    expect(effectsIn(effects)).toEqual([`${second.process.pid} BA117`])
  })

  it("two processes answering one task at once ⇒ one tool effect", async () => {
    const db = kind.store("race")
    const effects = join(dir, `race-${kind.name}.effects`)
    writeFileSync(effects, "")
    const first = await startServer(db, effects, kind.host)
    const halted = (await (await sdkClient(first.url)).sendMessage(send(message("book LH400")))) as Task
    const second = await startServer(db, effects, kind.host)
    const [a, b] = [await sdkClient(first.url), await sdkClient(second.url)]
    const outcomes = await Promise.allSettled([
      a.sendMessage(send(answerMessage({ ok: true }, halted.id, "yes from a"))),
      b.sendMessage(send(answerMessage({ ok: true }, halted.id, "yes from b"))),
    ])
    expect(outcomes.filter((o) => o.status === "fulfilled").length).toBeGreaterThanOrEqual(1)
    expect(effectsIn(effects)).toHaveLength(1)
    const final = await a.getTask({ tenant: "", id: halted.id, historyLength: undefined })
    expect(final.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
  })
})
