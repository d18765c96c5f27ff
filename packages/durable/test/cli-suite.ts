import { execFile } from "node:child_process"
import { randomUUID } from "node:crypto"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { type RunResult, defineTool, hostAgent, pending } from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import pg from "pg"
import { Redis } from "ioredis"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type DurableStore,
  type StoreHost,
  type StoreHostAgent,
  createStoreHost,
  openStore,
} from "../src/index.js"

// The `toolnexus` command, driven as an operator does: the built binary in a child process,
// against a store another process (this one) parks runs in. cli.test.ts runs it on SQLite (on
// every Node CI uses), cli.int.test.ts on PostgreSQL and Redis (once: .ci/run's extras).
const BIN = fileURLToPath(new URL("../dist/cli/main.js", import.meta.url))
const AGENTS = fileURLToPath(new URL("./fixtures/cli-agents.mjs", import.meta.url))
const dir = mkdtempSync(join(tmpdir(), "tnx-cli-"))
const runsFile = join(dir, "runs.log")
const pgUrl = process.env.TOOLNEXUS_TEST_PG_URL
const redisUrl = process.env.TOOLNEXUS_TEST_REDIS_URL
const schema = `tnx_cli_${randomUUID().replaceAll("-", "").slice(0, 20)}`
const keyPrefix = `tnx-cli-${randomUUID()}:`

/** A store backend of the `toolnexus pending` tests. */
export type Backend = "SQLite" | "PostgreSQL" | "Redis"

/**
 * The command's tests on `backends`; `usage` adds --help and the bad-input exits (they touch no
 * store server). Call once at a test file's top level.
 */
export function describeCli(opts: { backends: Backend[]; usage?: boolean }): void {
  let server: FakeLLMServer
  beforeAll(async () => {
    if (!existsSync(BIN)) throw new Error(`${BIN} is missing: build @toolnexus/durable first`)
    server = await createFakeLLMServer()
    process.env.TNX_CLI_LLM_URL = server.url
    process.env.TNX_CLI_RUNS_FILE = runsFile
  })
  afterAll(async () => {
    await server?.close()
    rmSync(dir, { recursive: true, force: true })
    if (pgUrl && opts.backends.includes("PostgreSQL")) {
      const pool = new pg.Pool({ connectionString: pgUrl, max: 1 })
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => pool.end())
    }
    if (redisUrl && opts.backends.includes("Redis")) {
      const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 })
      try {
        const keys = await redis.keys(`${keyPrefix}*`)
        if (keys.length > 0) await redis.del(...keys)
      } finally {
        redis.disconnect()
      }
    }
  })

  interface Ran {
    code: number
    stdout: string
    stderr: string
  }
  function toolnexus(...args: string[]): Promise<Ran> {
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        [BIN, ...args],
        { cwd: dir, env: process.env, timeout: 60_000 },
        (error, stdout, stderr) =>
          resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      )
    })
  }
  const runs = () => (existsSync(runsFile) ? readFileSync(runsFile, "utf8").split("\n").filter(Boolean) : [])

  const late = defineTool({
    name: "late",
    description: "asks with a deadline long past",
    inputSchema: { type: "object", properties: {} },
    run: (_args, ctx) =>
      ctx.answer
        ? `answered: ${ctx.answer.ok}`
        : pending({ kind: "approval", prompt: "Late?", expiresAt: "2000-01-01T00:00:00Z" }),
  })

  if (opts.usage) {
    describe("toolnexus --help and bad input", () => {
      it("--help prints the commands and exits 0", async () => {
        const ran = await toolnexus("--help")
        expect(ran.code).toBe(0)
        expect(ran.stdout).toContain("pending approve <id>")
      })
      it("a bad store URL, a missing SQLite file and a bad command exit 2 with one line", async () => {
        for (const args of [
          ["pending", "list", "--store", "mysql://db/app"],
          ["pending", "list", "--store", "./nothing-here.db"],
          ["pending", "frobnicate", "--store", "sqlite:x.db"],
          ["pending", "list"],
        ]) {
          const ran = await toolnexus(...args)
          expect(ran.code, args.join(" ")).toBe(2)
          expect(ran.stderr.trim().split("\n")[0]).toMatch(/^toolnexus: /)
        }
        const missing = await toolnexus("pending", "list", "--store", "./nothing-here.db")
        expect(missing.stderr).toContain("no SQLite database at")
        expect(existsSync(join(dir, "nothing-here.db"))).toBe(false)
      })
    })
  }

  const all: { name: Backend; url: string | undefined }[] = [
    { name: "SQLite", url: `sqlite:${join(dir, "cli.db")}` },
    { name: "PostgreSQL", url: pgUrl && `${pgUrl}${pgUrl.includes("?") ? "&" : "?"}schema=${schema}` },
    {
      name: "Redis",
      url: redisUrl && `${redisUrl}${redisUrl.includes("?") ? "&" : "?"}keyPrefix=${keyPrefix}`,
    },
  ]

  for (const { name, url } of all.filter((b) => opts.backends.includes(b.name))) {
    // Each test runs the command as a child process several times: a loaded machine needs time.
    describe.skipIf(!url)(`toolnexus pending on ${name}`, { timeout: 120_000 }, () => {
      let store: DurableStore
      let host: StoreHost
      beforeAll(async () => {
        store = await openStore(url as string)
        const agents = (await (await import(AGENTS)).default({ store })) as StoreHostAgent[]
        const client = agents[0]?.options.client
        if (!client) throw new Error("the agents module has no client agent")
        const { createToolkit } = await import("@toolnexus/core")
        agents.push(hostAgent({ name: "late", client, toolkit: await createToolkit({ extraTools: [late] }) }))
        host = createStoreHost({ store, agents, sweepEveryMs: false })
      })
      afterAll(async () => {
        await host?.close()
        await store?.close()
      })

      async function park(runId: string, order: number): Promise<string> {
        server.enqueue(
          { toolCalls: [{ id: `c-${runId}`, name: "refund", arguments: { order } }] },
          { text: `done with ${order}` },
        )
        await host.start("refunds", runId, `refund order ${order}`)
        const parked = (await host.result(runId, { timeoutMs: 30_000 })) as RunResult
        expect(parked.pending?.kind).toBe("approval")
        return parked.pending?.id as string
      }

      it("lists and shows a parked run's request; an approval is recorded once and a serving host applies it once", async () => {
        writeFileSync(runsFile, "")
        const runId = `cli-${randomUUID()}`
        const id = await park(runId, 42)

        const listed = await toolnexus("pending", "list", "--store", url as string, "--json")
        expect(listed.code, listed.stderr).toBe(0)
        const entry = JSON.parse(listed.stdout).requests.find(
          (e: { request: { id: string } }) => e.request.id === id,
        )
        expect(entry).toMatchObject({ conversationId: runId, state: "open", expired: false })
        const table = await toolnexus("pending", "list", "--store", url as string)
        expect(table.stdout).toMatch(/^REQUEST\s+KIND\s+RUN\s+STATE/)
        expect(table.stdout).toContain(id)
        const shown = await toolnexus("pending", "show", id, "--store", url as string)
        expect(shown.stdout).toMatch(/tool:\s+refund/)
        expect(shown.stdout).toContain('"order": 42')

        const approved = await toolnexus(
          "pending",
          "approve",
          id,
          "--store",
          url as string,
          "--reason",
          "checked",
        )
        expect(approved.code, approved.stderr).toBe(0)
        expect(approved.stdout).toContain("recorded")
        // A second decision conflicts and names the first.
        const declined = await toolnexus("pending", "decline", id, "--store", url as string)
        expect(declined.code).toBe(4)
        expect(declined.stderr.trim()).toMatch(
          /^toolnexus: conflict: .*first decision: approved \(checked\)$/,
        )
        expect(declined.stderr.trim().split("\n")).toHaveLength(1)
        expect(runs()).toEqual([])

        // The host serving the agent applies the recorded decision on its sweep, once.
        expect((await host.sweep()).completed).toContain(runId)
        expect((await host.sweep()).completed).not.toContain(runId)
        const done = (await host.result(runId, { timeoutMs: 30_000 })) as RunResult
        expect(done.text).toBe("done with 42")
        expect(runs()).toHaveLength(1)
        expect(await host.getDecision(id)).toEqual({ ok: true, reason: "checked" })

        const again = await toolnexus("pending", "approve", id, "--store", url as string, "--json")
        expect(again.code).toBe(4)
        expect(JSON.parse(again.stdout).error).toMatchObject({
          code: "TNX_ANSWER_CONFLICT",
          decision: { ok: true },
        })
        const decided = await toolnexus("pending", "show", id, "--store", url as string)
        expect(decided.stdout.trim()).toBe(`request ${id} is decided: approved (checked)`)
      })

      it("with --agents the command applies the decision itself; retry re-delivers a handed-off one", async () => {
        writeFileSync(runsFile, "")
        const runId = `cli-${randomUUID()}`
        const id = await park(runId, 7)
        const applied = await toolnexus(
          "pending",
          "approve",
          id,
          "--store",
          url as string,
          "--agents",
          AGENTS,
        )
        expect(applied.code, applied.stderr).toBe(0)
        expect(applied.stdout).toContain("the run is done")
        expect(runs()).toHaveLength(1)
        expect(runs()[0]).not.toContain(`pid ${process.pid}`)
        expect(((await host.result(runId, { timeoutMs: 30_000 })) as RunResult).text).toBe("done with 7")

        const second = `cli-${randomUUID()}`
        const handed = await park(second, 8)
        expect((await toolnexus("pending", "retry", handed, "--store", url as string)).code).toBe(4)
        expect((await toolnexus("pending", "approve", handed, "--store", url as string)).code).toBe(0)
        // Without the agents a retry can only leave the decision due for a serving host's sweep.
        const due = await toolnexus("pending", "retry", handed, "--store", url as string)
        expect(due.code, due.stderr).toBe(0)
        expect(due.stdout).toContain("a host serving the run applies it on its next sweep")
        expect(runs()).toHaveLength(1)
        const retried = await toolnexus(
          "pending",
          "retry",
          handed,
          "--store",
          url as string,
          "--agents",
          AGENTS,
          "--json",
        )
        expect(retried.code, retried.stderr).toBe(0)
        expect(JSON.parse(retried.stdout)).toMatchObject({
          runId: second,
          decision: { ok: true },
          applied: true,
          status: "done",
        })
        expect(runs()).toHaveLength(2)
        expect((await toolnexus("pending", "retry", handed, "--store", url as string)).code).toBe(4)
      })

      it("list --failed shows a request whose resumes failed too often; retry --agents applies it", async () => {
        writeFileSync(runsFile, "")
        const runId = `cli-${randomUUID()}`
        server.enqueue(
          { toolCalls: [{ id: `c-${runId}`, name: "refund", arguments: { order: 9 } }] },
          { status: 500, text: "down" },
          { status: 500, text: "down" },
          { status: 500, text: "down" },
          { text: "done with 9" },
        )
        await host.start("refunds", runId, "refund order 9")
        const id = ((await host.result(runId, { timeoutMs: 30_000 })) as RunResult).pending?.id as string
        for (let attempt = 0; attempt < 3; attempt++)
          await expect(host.deliverAnswer({ id, ok: true })).rejects.toMatchObject({ code: "TNX_LLM_HTTP" })

        const failed = await toolnexus("pending", "list", "--failed", "--store", url as string)
        expect(failed.code, failed.stderr).toBe(0)
        expect(failed.stdout).toMatch(/^REQUEST\s+KIND\s+RUN\s+ATTEMPTS/)
        expect(failed.stdout).toContain(id)
        expect(failed.stdout).toContain("TNX_LLM_HTTP")
        const shown = await toolnexus("pending", "show", id, "--store", url as string)
        expect(shown.stdout).toMatch(/state:\s+failed \(3 attempts\)/)
        expect(shown.stdout).toMatch(/last error:\s+TNX_LLM_HTTP: /)
        expect((await toolnexus("pending", "approve", id, "--store", url as string)).code).toBe(4)
        const retried = await toolnexus("pending", "retry", id, "--store", url as string, "--agents", AGENTS)
        expect(retried.code, retried.stderr).toBe(0)
        expect(retried.stdout).toContain("the run is done")
        expect(((await host.result(runId, { timeoutMs: 30_000 })) as RunResult).text).toBe("done with 9")
        const none = await toolnexus("pending", "list", "--failed", "--store", url as string, "--json")
        expect(
          JSON.parse(none.stdout).requests.map((e: { request: { id: string } }) => e.request.id),
        ).not.toContain(id)
      })

      it("an unknown id exits 3, a late approval 5; a decline of the late request goes through", async () => {
        const unknown = await toolnexus("pending", "approve", "no-such-request", "--store", url as string)
        expect(unknown.code).toBe(3)
        expect(unknown.stderr.trim().split("\n")).toHaveLength(1)
        expect((await toolnexus("pending", "show", "no-such-request", "--store", url as string)).code).toBe(3)

        const runId = `late-${randomUUID()}`
        server.enqueue(
          { toolCalls: [{ id: `l-${runId}`, name: "late", arguments: {} }] },
          { text: "moved on" },
        )
        await host.start("late", runId, "go")
        const id = ((await host.result(runId, { timeoutMs: 30_000 })) as RunResult).pending?.id as string
        const listed = JSON.parse(
          (await toolnexus("pending", "list", "--store", url as string, "--json", "--kind", "approval"))
            .stdout,
        )
        expect(listed.requests.find((e: { request: { id: string } }) => e.request.id === id)?.expired).toBe(
          true,
        )
        const tooLate = await toolnexus("pending", "approve", id, "--store", url as string)
        expect(tooLate.code).toBe(5)
        expect(tooLate.stderr).toMatch(/^toolnexus: expired: /)
        const declined = await toolnexus(
          "pending",
          "decline",
          id,
          "--store",
          url as string,
          "--reason",
          "too late",
        )
        expect(declined.code, declined.stderr).toBe(0)
        expect((await host.sweep()).completed).toContain(runId)
        expect(await host.getDecision(id)).toEqual({ ok: false, reason: "too late" })
      })
    })
  }
}
