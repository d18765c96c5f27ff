import { type ChildProcess, spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { type FakeLLMServer, type FakeRequestView, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"

const WORKER = fileURLToPath(new URL("./fixtures/worker.mjs", import.meta.url))

interface Outcome {
  status?: string
  text?: string
  kind?: string
  pending?: { id: string; data?: Record<string, unknown> }
  listed?: Record<string, unknown>[]
  completed?: { status: string; text: string }[]
  failed?: string[]
  error?: string
  children?: string[]
}

/** How a backend's process suite is set up. */
export interface ProcessSuiteOptions {
  skip?: string
  /**
   * The workers' store URL. Give it a schema or key prefix of its own (`?schema=` /
   * `?keyPrefix=`), so the suite never shares state with other runs on the server.
   */
  storeUrl: () => string
  /** Removes what the suite wrote (its schema or key prefix). */
  cleanup?: () => Promise<void>
}

/** Scenarios across real process boundaries, written once and run on every backend. */
export function describeProcessSuite(name: string, opts: ProcessSuiteOptions): void {
  describe.skipIf(opts.skip !== undefined)(`process boundaries on ${name}`, () => {
    let server: FakeLLMServer
    let dir: string
    let log: string
    const children = new Set<ChildProcess>()
    beforeAll(async () => {
      server = await createFakeLLMServer()
      dir = mkdtempSync(join(tmpdir(), "tnx-proc-"))
    })
    beforeEach(() => {
      server.reset()
      log = join(dir, `${randomUUID()}.log`)
      writeFileSync(log, "")
    })
    afterAll(async () => {
      for (const c of children) c.kill("SIGKILL")
      await server?.close()
      await opts.cleanup?.()
      rmSync(dir, { recursive: true, force: true })
    })

    /** Starts a worker; `line` resolves with its first JSON line, `exit` when it ends. */
    function worker(mode: string, id: string, answer?: unknown, env: Record<string, string> = {}) {
      // Short leases (2 s) need a short operation deadline (at most half a lease).
      const url = opts.storeUrl()
      const storeUrl = `${url}${url.includes("?") ? "&" : "?"}opTimeoutMs=1000`
      const args = [WORKER, mode, storeUrl, id, `${server.url}/v1`, "openai"]
      if (answer !== undefined) args.push(JSON.stringify(answer))
      const child = spawn(process.execPath, args, {
        env: {
          ...process.env,
          TNX_LOG: log,
          ...env,
        },
        stdio: ["ignore", "pipe", "pipe"],
      })
      children.add(child)
      let out = ""
      let err = ""
      child.stderr.on("data", (d) => {
        err += d
      })
      const line = new Promise<Outcome>((resolve, reject) => {
        child.stdout.on("data", (d) => {
          out += d
          const nl = out.indexOf("\n")
          if (nl !== -1) resolve(JSON.parse(out.slice(0, nl)) as Outcome)
        })
        child.on("exit", (code) =>
          reject(new Error(`worker ${mode} exited (${code}) without output: ${err}`)),
        )
      })
      const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
      return { child, line, exit }
    }
    const executions = () =>
      readFileSync(log, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { pid: number; answer: { ok: boolean } | null; key: string })

    const halt = { toolCalls: [{ name: "pay", arguments: { amount: 5 } }] }
    const finish = (req: { toolResults: { content: string }[] }) => ({
      text: `final: ${req.toolResults[0]?.content}`,
    })

    it("a process halts and exits; another process resumes from the store", async () => {
      const id = `p-${randomUUID()}`
      server.enqueue(halt, finish)
      const first = worker("halt", id)
      const halted = await first.line
      expect(await first.exit).toBe(0)
      expect(halted.status).toBe("pending")
      const second = worker("resume", id, { id: halted.pending?.id, ok: true })
      expect(await second.line).toEqual({ status: "done", text: "final: paid 5" })
      const runs = executions()
      expect(runs.map((r) => r.answer?.ok ?? null)).toEqual([null, true])
      expect(runs[0]?.pid).not.toBe(runs[1]?.pid)
      expect(runs[1]?.key).toBe(runs[0]?.key)
    })

    it("two processes race to deliver the same answer: exactly one wins", async () => {
      const id = `race-${randomUUID()}`
      server.enqueue(halt)
      const halted = await worker("halt", id).line
      server.addRule({ match: () => true, reply: (req) => ({ ...finish(req), delayMs: 50 }) })
      const answer = { id: halted.pending?.id, ok: true }
      const outcomes = await Promise.all([
        worker("resume", id, answer).line,
        worker("resume", id, answer).line,
      ])
      expect(outcomes.filter((o) => o.status === "done")).toHaveLength(1)
      expect(outcomes.filter((o) => o.error === "AnswerConflictError")).toHaveLength(1)
      expect(executions().filter((r) => r.answer)).toHaveLength(1)
    })

    it("a worker killed after claiming: the lease expires and another worker completes the run", async () => {
      const id = `kill-${randomUUID()}`
      server.enqueue(halt, finish)
      const halted = await worker("halt", id).line
      const doomed = worker(
        "resume-and-die",
        id,
        { id: halted.pending?.id, ok: true },
        { TNX_LEASE_MS: "2000" },
      )
      expect(await doomed.line).toEqual({ claimed: true })
      doomed.child.kill("SIGKILL")
      await doomed.exit
      // Redelivered as a decline: the stored approval (the user's first decision) is applied.
      let outcome: Outcome = { error: "AnswerConflictError" }
      for (let i = 0; i < 50 && outcome.error === "AnswerConflictError"; i++) {
        outcome = await worker("resume", id, { id: halted.pending?.id, ok: false }).line
        if (outcome.error) await new Promise((r) => setTimeout(r, 100))
      }
      expect(outcome).toEqual({ status: "done", text: "final: paid 5" })
      expect(executions().map((r) => r.answer?.ok ?? null)).toEqual([null, true, true])
    })

    it("a suspended sub-agent tree survives the process; a new process resumes it with reattachment", async () => {
      const key = `rt-${randomUUID()}`
      server.addRule({
        match: (r) => r.system === "parent" && r.toolResults.length === 0,
        reply: { toolCalls: [{ name: "task", arguments: { agent: "asker", prompt: "ask" } }] },
      })
      server.addRule({
        match: (r) => r.system === "parent",
        reply: (r) => ({ text: `parent: ${r.toolResults[0]?.content}` }),
      })
      server.addRule({ match: (r) => r.system === "asker" && r.toolResults.length === 0, reply: halt })
      server.addRule({
        match: (r) => r.system === "asker",
        reply: (r) => ({ text: `asker: ${r.toolResults[0]?.content}` }),
      })
      const halted = await worker("runtime-halt", key).line
      expect(halted.status).toBe("pending")
      expect(halted.pending?.data?.path).toEqual(["root", "approverParent.1", "asker.1"])
      const resumed = await worker("runtime-resume", key, { id: halted.pending?.id, ok: true }).line
      expect(resumed).toEqual({
        status: "done",
        text: "parent: asker: paid 5",
        children: ["root/approverParent.1/asker.1"],
      })
      expect(server.requests).toHaveLength(4)
    })

    it("two processes resume the same saved runtime with the same answer: the tree resumes once", async () => {
      const key = `rt-race-${randomUUID()}`
      const fresh = (soul: string) => (r: FakeRequestView) => r.system === soul && r.toolResults.length === 0
      server.addRule({
        match: fresh("parent"),
        reply: { toolCalls: [{ name: "task", arguments: { agent: "asker", prompt: "ask" } }] },
      })
      server.addRule({
        match: (r) => r.system === "parent",
        reply: (r) => ({ text: `parent: ${r.toolResults[0]?.content}`, delayMs: 50 }),
      })
      server.addRule({ match: fresh("asker"), reply: halt })
      server.addRule({
        match: (r) => r.system === "asker",
        reply: (r) => ({ text: `asker: ${r.toolResults[0]?.content}`, delayMs: 50 }),
      })
      const halted = await worker("runtime-halt", key).line
      const answer = { id: halted.pending?.id, ok: true }
      const outcomes = await Promise.all([
        worker("runtime-resume", key, answer).line,
        worker("runtime-resume", key, answer).line,
      ])
      expect(outcomes.filter((o) => o.status === "done")).toHaveLength(1)
      const refused = outcomes.filter(
        (o) => o.error === "AnswerConflictError" || o.error === "UnknownRequestError",
      )
      expect(refused).toHaveLength(1)
      expect(executions().filter((r) => r.answer)).toHaveLength(1)
      expect(server.requests).toHaveLength(4)
    })

    /** A three-level tree lead → mid → asker; the later turns take a while, so deliveries overlap. */
    function scriptTree(delayMs = 50): void {
      const fresh = (soul: string) => (r: FakeRequestView) => r.system === soul && r.toolResults.length === 0
      const later = (soul: string) => ({
        match: (r: FakeRequestView) => r.system === soul,
        reply: (r: FakeRequestView) => ({ text: `${soul}: ${r.toolResults[0]?.content}`, delayMs }),
      })
      server.addRule({
        match: fresh("lead"),
        reply: { toolCalls: [{ name: "task", arguments: { agent: "mid", prompt: "go" } }] },
      })
      server.addRule(later("lead"))
      server.addRule({
        match: fresh("mid"),
        reply: { toolCalls: [{ name: "task", arguments: { agent: "asker", prompt: "ask" } }] },
      })
      server.addRule(later("mid"))
      server.addRule({ match: fresh("asker"), reply: halt })
      server.addRule(later("asker"))
    }
    const LEAF = ["root", "lead.1", "mid.1", "asker.1"]

    it("a three-level tree parked on one approval is one pending entry; eight processes deliver it every way and it is applied once", async () => {
      const key = `tree-${randomUUID()}`
      scriptTree()
      const halted = await worker("tree-halt", key).line
      expect(halted.status).toBe("pending")
      expect(halted.pending?.data).toMatchObject({ tool: "pay", args: { amount: 5 }, path: LEAF })
      expect(halted.listed).toEqual([
        {
          request: halted.pending,
          conversationId: `${key}/${LEAF.join("/")}`,
          runtimeKey: key,
          path: LEAF,
          since: expect.any(String),
          attempts: 0,
          state: "open",
        },
      ])
      expect(server.requests).toHaveLength(3)
      const answer = { id: halted.pending?.id, ok: true }
      const holders = [1, 2, 3].map((n) => `${key}/${LEAF.slice(0, n + 1).join("/")}`)
      const outcomes = await Promise.all([
        ...holders.map((holder) => worker("ask-holder", holder, answer).line),
        worker("tree-resume", key, answer).line,
        worker("tree-resume", key, answer).line,
        worker("deliver", key, answer).line,
        worker("deliver", key, answer).line,
        worker("deliver", key, answer).line,
      ])
      const done = outcomes.filter((o) => o.status === "done")
      expect(done).toHaveLength(1)
      expect(done[0]?.text).toBe("lead: mid: asker: paid 5")
      for (const o of outcomes.slice(0, 3))
        expect(["RuntimeHeldError", "AnswerConflictError"]).toContain(o.error)
      expect(
        outcomes.filter((o) => o.error === "AnswerConflictError" || o.error === "RuntimeHeldError"),
      ).toHaveLength(7)
      expect(executions().filter((r) => r.answer)).toHaveLength(1)
      // d = 3: exactly the three new turns, one per level.
      expect(server.requests).toHaveLength(6)
      // Applied: any further delivery, any way, is refused with the first decision.
      expect(await worker("deliver", key, { id: answer.id, ok: false }).line).toMatchObject({
        error: "AnswerConflictError",
      })
      expect(await worker("ask-holder", holders[2] as string, answer).line).toMatchObject({
        error: "AnswerConflictError",
      })
    })

    it("a sweep of an expired runtime claim completes the tree, as a runtime", async () => {
      const key = `tree-sweep-${randomUUID()}`
      scriptTree(0)
      const halted = await worker("tree-halt", key).line
      expect(halted.status).toBe("pending")
      const answer = { id: halted.pending?.id, ok: true }
      const doomed = worker("tree-resume-and-die", key, answer, { TNX_LEASE_MS: "2000" })
      expect(await doomed.line).toEqual({ claimed: true })
      doomed.child.kill("SIGKILL")
      await doomed.exit
      let swept: Outcome = { completed: [] }
      for (let i = 0; i < 50 && swept.completed?.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 100))
        swept = await worker("sweep", key, undefined, { TNX_LEASE_MS: "5000" }).line
      }
      expect(swept.completed).toEqual([{ status: "done", text: "lead: mid: asker: paid 5" }])
      // The dead worker's tool call ran; the sweep ran it again with the same idempotency key.
      const runs = executions()
      expect(runs.map((r) => r.answer?.ok ?? null)).toEqual([null, true, true])
      expect(new Set(runs.map((r) => r.key)).size).toBe(1)
      expect(server.requests).toHaveLength(6)
      expect(await worker("tree-resume", key, answer).line).toMatchObject({ error: "AnswerConflictError" })
    })
  })
}
