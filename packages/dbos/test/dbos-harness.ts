import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import pg from "pg"

const here = dirname(fileURLToPath(import.meta.url))

/** The machine's PostgreSQL (TOOLNEXUS_TEST_PG_URL); the tests skip with a notice without it. */
export const PG_URL = process.env.TOOLNEXUS_TEST_PG_URL

/** A database of its own for this test file, dropped by `drop()`. */
export async function createDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `tnx_dbos_${randomBytes(6).toString("hex")}`
  const admin = new pg.Client({ connectionString: PG_URL })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(PG_URL as string)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: PG_URL })
      await client.connect()
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await client.end()
    },
  }
}

export async function until(check: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  while (Date.now() < deadline) {
    const done = await check().catch((error) => {
      last = error
      return false
    })
    if (done) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`timed out waiting for ${what}${last === undefined ? "" : ` (last error: ${last})`}`)
}

function stopChild(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    child.once("exit", () => resolve())
    child.kill(signal)
  })
}

/** A worker process (DBOS launches once per process); `kill()` is SIGKILL. */
export interface Worker {
  kill(): Promise<void>
  stop(): Promise<void>
}

export async function startWorker(opts: { llmUrl: string; dbUrl: string; logFile: string }): Promise<Worker> {
  const child = spawn(process.execPath, [join(here, "fixtures", "worker.mjs")], {
    env: { ...process.env, LLM_URL: opts.llmUrl, DB_URL: opts.dbUrl, LOG_FILE: opts.logFile },
    stdio: ["ignore", "pipe", "pipe"],
  })
  let output = ""
  child.stderr?.on("data", (chunk) => {
    output = (output + chunk).slice(-4000)
    if (process.env.TNX_DEBUG) process.stderr.write(chunk)
  })
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on("data", (chunk) => {
      output += chunk
      if (process.env.TNX_DEBUG) process.stderr.write(chunk)
      if (output.includes("ready")) resolve()
    })
    child.once("exit", (code) => reject(new Error(`worker exited (${code}): ${output}`)))
  })
  return { kill: () => stopChild(child, "SIGKILL"), stop: () => stopChild(child) }
}

export function toolLog(logFile: string): { tool: string; key: string; answer?: unknown }[] {
  let text = ""
  try {
    text = readFileSync(logFile, "utf8")
  } catch {
    return []
  }
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line))
}

export function newLogFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), "tnx-dbos-log-")), "tools.jsonl")
  writeFileSync(file, "")
  return file
}
