import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { until } from "@toolnexus/agents/engine-testing"
import type { RunHost } from "@toolnexus/core"
import { type FakeLLMServer, type FakeRequestView, createFakeLLMServer } from "@toolnexus/core/testing"
import { connectDbos } from "@toolnexus/dbos"
import { connectRestate } from "@toolnexus/restate"
import { afterAll, beforeAll } from "vitest"
import { PG_URL, createDatabase } from "../../dbos/test/dbos-harness.js"
import { freePort, startRestateServer } from "../../restate/test/restate-harness.js"

// The doors over an engine (§17): a real Restate server / DBOS on the shared PostgreSQL, worker
// processes serving the engine contract's agents (`@toolnexus/agents/engine-testing`'s worker
// through each engine package's adapter), the scripted model in this process, and the tool runs
// counted in a file this test owns (the workers append one JSON line per run).

const here = dirname(fileURLToPath(import.meta.url))
const require = createRequire(import.meta.url)
const workerScript = join(dirname(require.resolve("@toolnexus/agents/engine-testing")), "worker.js")

/** Whether the restate-server binary of this platform is installed (an optional npm package). */
function restateBinaryMissing(): string | undefined {
  try {
    const launcher = createRequire(join(here, "../../restate/test/restate-harness.ts"))
    const server = createRequire(launcher.resolve("@restatedev/restate-server/package.json"))
    server.resolve(`@restatedev/restate-server-${process.platform}-${process.arch}/bin/restate-server`)
    return undefined
  } catch {
    // On CI the binary is part of the install: its absence is a failure, not a skip.
    return process.env.CI ? undefined : "the restate-server binary is not installed"
  }
}

/** An engine the door tests run on. */
export interface DoorEngine {
  name: string
  /** Set when the engine cannot run here; the tests skip with it. */
  skip?: string
  /** The engine (a server, a database of its own) and the worker settings. */
  start(): Promise<{ env: Record<string, string>; connect(): RunHost; stop(): Promise<void> }>
}

export const doorEngines: DoorEngine[] = [
  {
    name: "Restate",
    skip: restateBinaryMissing(),
    async start() {
      const restate = await startRestateServer()
      const port = await freePort()
      return {
        env: { ADMIN: restate.admin, INGRESS: restate.ingress, PORT: String(port) },
        connect: () => connectRestate({ ingress: restate.ingress, admin: restate.admin }),
        stop: () => restate.stop(),
      }
    },
  },
  {
    name: "DBOS",
    skip: PG_URL ? undefined : "TOOLNEXUS_TEST_PG_URL is not set",
    async start() {
      const db = await createDatabase()
      const name = new URL(db.url).pathname.slice(1)
      return {
        env: { DB_URL: db.url },
        connect: () => connectDbos({ systemDatabaseUrl: db.url }),
        async stop() {
          // The closed connection's clients end asynchronously: a forced drop while one is
          // ending fails it without a listener (an uncaught error in this process).
          const pg = require("pg") as {
            Client: new (
              o: object,
            ) => {
              connect(): Promise<void>
              query(sql: string, params: unknown[]): Promise<{ rows: unknown[] }>
              end(): Promise<void>
            }
          }
          const admin = new pg.Client({ connectionString: PG_URL })
          await admin.connect()
          try {
            await until(async () => {
              const { rows } = await admin.query(
                "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1",
                [name],
              )
              return (rows[0] as { n: number }).n === 0
            }, `the connections to ${name} to end`).catch(() => undefined)
          } finally {
            await admin.end()
          }
          await db.drop()
        },
      }
    },
  },
]

/** An engine opened for a test file (`openEngine`). */
export type OpenEngine = Awaited<ReturnType<typeof openEngine>>

/**
 * Opens `engine` before the tests of the describe block it is called in and closes it after
 * them; the returned function gives the open engine inside a test. An engine that cannot run
 * here is warned about (`what` names the block) and not opened: its tests skip on `engine.skip`.
 */
export function useEngine(engine: DoorEngine, what: string): () => OpenEngine {
  let open: OpenEngine | undefined
  beforeAll(async () => {
    if (engine.skip === undefined) open = await openEngine(engine)
  }, 120_000)
  // Closing waits for the engine's database connections to end, which a loaded machine slows.
  afterAll(async () => {
    await open?.close()
  }, 120_000)
  if (engine.skip !== undefined) console.warn(`skipping ${what} over ${engine.name}: ${engine.skip}`)
  return () => {
    if (open === undefined) throw new Error(`${engine.name} is not open`)
    return open
  }
}

/** A worker process; `kill()` is SIGKILL. */
export interface EngineWorker {
  kill(): Promise<void>
  stop(): Promise<void>
}

/**
 * One engine for a test file: the engine, the scripted model, the tool log, one worker and
 * one connection (the doors' host). `restart()` SIGKILLs the worker and starts a new one.
 */
export async function openEngine(engine: DoorEngine) {
  const llm = await createFakeLLMServer()
  scriptRefunds(llm)
  const logDir = mkdtempSync(join(tmpdir(), "tnx-engine-doors-"))
  const logFile = join(logDir, "tools.jsonl")
  writeFileSync(logFile, "")
  const started = await engine.start()
  const adapter = join(
    here,
    `../../${engine.name === "Restate" ? "restate" : "dbos"}/test/fixtures/adapter.mjs`,
  )
  const spawnOne = () =>
    spawnWorker({ ...started.env, TNX_ENGINE_ADAPTER: adapter, LLM_URL: llm.url, LOG_FILE: logFile })
  let worker = await spawnOne()
  const host = started.connect()
  return {
    host,
    llm,
    /** The approved runs of the `refund` tool in run `runId` (the suspension itself runs nothing). */
    refunds: (runId: string) =>
      readFileSync(logFile, "utf8")
        .split("\n")
        .filter((line) => line !== "")
        .map((line) => JSON.parse(line) as { tool: string; key: string; answer: unknown })
        .filter((e) => e.tool === "refund" && e.key.startsWith(runId) && e.answer !== null),
    async restart() {
      await worker.kill()
      worker = await spawnOne()
    },
    async close() {
      await host.close()
      await worker.stop()
      await started.stop()
      await llm.close()
      rmSync(logDir, { recursive: true, force: true })
    },
  }
}

/**
 * The `refunds` agent's model: a first turn asks for a refund (an approval), a turn after a
 * tool result says what it got.
 */
function scriptRefunds(llm: FakeLLMServer): void {
  const last = (req: FakeRequestView) => (req.body.messages as { role: string }[]).at(-1)?.role
  llm.addRule({
    match: (req) => req.system === "refunds",
    reply: (req) =>
      last(req) === "tool"
        ? { text: `done: ${req.toolResults.map((r) => r.content).join("|")}` }
        : { toolCalls: [{ id: "r1", name: "refund", arguments: { amount: 30 } }] },
  })
}

async function spawnWorker(env: Record<string, string>): Promise<EngineWorker> {
  const child = spawn(process.execPath, [workerScript], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  })
  let output = ""
  const keep = (chunk: Buffer) => {
    output = (output + chunk).slice(-4000)
    if (process.env.TNX_DEBUG) process.stderr.write(chunk)
  }
  child.stderr?.on("data", keep)
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on("data", (chunk: Buffer) => {
      keep(chunk)
      if (output.includes("ready")) resolve()
    })
    child.once("exit", (code) => reject(new Error(`worker exited (${code}): ${output}`)))
  })
  return { kill: () => stopChild(child, "SIGKILL"), stop: () => stopChild(child, "SIGTERM") }
}

function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    child.once("exit", () => resolve())
    child.kill(signal)
  })
}
