import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import {
  AnswerConflictError,
  AnswerInvalidError,
  type EngineConnection,
  EngineRunError,
  type PendingEntry,
  type RunResult,
  UnknownRequestError,
} from "@toolnexus/core"
import { type FakeLLMServer, type FakeRequestView, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { TaskResult } from "../types.js"
import type { ContractEngine, EngineContractInit } from "./engine-contract-types.js"

const here = dirname(fileURLToPath(import.meta.url))

/**
 * Registers the behaviour every engine package must have (DESIGN §15), as one vitest
 * `describe` block named `name`: worker processes SIGKILLed between a suspension and its
 * answer and after an approved tool ran, concurrent answers, typed refusals, expiry as an
 * engine timer, a two-level tree and an `asTool` agent as one workflow, a 300-turn run. The
 * scripted model runs in this process; workers serve `contractAgents` through `init.adapter`.
 *
 * @example
 * describeEngineContract("@toolnexus/dbos", { adapter: join(here, "fixtures/adapter.mjs"), start })
 */
export function describeEngineContract(name: string, init: EngineContractInit): void {
  describe.skipIf(init.skip !== undefined)(name, () => {
    let llm: FakeLLMServer
    let engine: ContractEngine
    let conn: EngineConnection<RunResult | TaskResult>
    let worker: Worker | undefined
    let logDir: string
    let logFile: string
    /** A turn whose reply hangs once, so a worker can be killed while it is in flight. */
    const hangOnce = new Set<string>()

    const startWorker = () =>
      spawnWorker({ ...engine.env, TNX_ENGINE_ADAPTER: init.adapter, LLM_URL: llm.url, LOG_FILE: logFile })
    const restart = async () => {
      await worker?.kill()
      worker = await startWorker()
    }
    const assistants = (req: FakeRequestView) =>
      (req.body.messages as { role: string }[]).filter((m) => m.role === "assistant").length
    /** Requests of the run whose prompt is `prompt`, at its n-th turn (from 0). */
    const asked = (prompt: string, n?: number) =>
      llm.requests.filter((r) => r.lastUserText === prompt && (n === undefined || assistants(r) === n)).length
    const runsOf = (tool: string, key: string) =>
      toolLog(logFile).filter((e) => e.tool === tool && e.key.startsWith(key))
    /** Waits until run `runId` waits on a request, and returns its entry. */
    const pendingOf = async (runId: string): Promise<PendingEntry> => {
      let found: PendingEntry | undefined
      await until(async () => {
        found = (await conn.listPending()).find((e) => e.conversationId.split("/")[0] === runId)
        return found !== undefined
      }, `a request of ${runId}`)
      return found as PendingEntry
    }

    beforeAll(async () => {
      llm = await createFakeLLMServer()
      scriptModel(llm, hangOnce, assistants)
      logDir = mkdtempSync(join(tmpdir(), "tnx-engine-contract-"))
      logFile = join(logDir, "tools.jsonl")
      writeFileSync(logFile, "")
      engine = await init.start()
      conn = engine.connect()
      worker = await startWorker()
    }, 120_000)

    afterAll(async () => {
      await conn?.close()
      await worker?.stop()
      await engine?.stop()
      await llm?.close()
      if (logDir) rmSync(logDir, { recursive: true, force: true })
    })

    it("a worker SIGKILLed between the suspension and the answer: finished without repeating a turn or a tool", async () => {
      const runId = "refund-kill-wait"
      const prompt = `refund order 42 (${runId})`
      expect(await conn.start("refunds", runId, prompt)).toEqual({ runId, started: true })
      const entry = await pendingOf(runId)
      expect(entry).toMatchObject({ conversationId: runId, state: "open", attempts: 0 })
      expect(entry.request.data).toMatchObject({ callId: "r1", tool: "refund", args: { amount: 30 } })
      expect(await conn.findRequest(entry.request.id)).toEqual(entry)

      await restart()
      const delivered = await conn.deliverAnswer({ id: entry.request.id, ok: true })
      expect(delivered).toMatchObject({ runId, decision: { ok: true } })
      const result = (await conn.result(runId, { timeoutMs: 30_000 })) as RunResult
      expect(result.status).toBe("done")
      expect(result.text).toBe("done: refunded 30")
      expect([asked(prompt, 0), asked(prompt, 1), asked(prompt, 2)]).toEqual([1, 1, 1])
      expect(runsOf("lookup", runId)).toHaveLength(1)
      expect(
        runsOf("refund", runId).map((e) => [e.key, (e.answer as { ok?: boolean } | null)?.ok ?? null]),
      ).toEqual([
        [`${runId}:r1`, null],
        [`${runId}:r1`, true],
      ])
      expect(await conn.findRequest(entry.request.id)).toBeUndefined()
      // A reused run id is the existing run.
      expect(await conn.start("refunds", runId, prompt)).toEqual({ runId, started: false })
    }, 60_000)

    it("a worker SIGKILLed after the approved tool ran: the tool does not run again", async () => {
      const runId = "refund-kill-after"
      const prompt = `refund order 42 (${runId})`
      hangOnce.add(`${prompt}#2`)
      await conn.start("refunds", runId, prompt)
      const entry = await pendingOf(runId)
      await conn.deliverAnswer({ id: entry.request.id, ok: true })
      // The last turn's request is in flight (it hangs): the approved refund is journaled.
      await until(async () => asked(prompt, 2) === 1, "the last turn's request")
      await restart()
      const result = (await conn.result(runId, { timeoutMs: 30_000 })) as RunResult
      expect(result.text).toBe("done: refunded 30")
      expect(runsOf("refund", runId)).toHaveLength(2) // the suspension, and the one approved run
      expect([asked(prompt, 0), asked(prompt, 1)]).toEqual([1, 1])
      expect(asked(prompt, 2)).toBe(2) // only the step in flight ran again
    }, 60_000)

    it("two concurrent answers: one decision, one effect; later ones conflict with the first decision", async () => {
      const runId = "refund-race"
      await conn.start("refunds", runId, `refund order 42 (${runId})`)
      const entry = await pendingOf(runId)
      const id = entry.request.id
      const outcomes = await Promise.allSettled([
        conn.deliverAnswer({ id, ok: true }),
        conn.deliverAnswer({ id, ok: false, reason: "declined" }),
      ])
      const won = outcomes.filter((o) => o.status === "fulfilled")
      const lost = outcomes.filter((o) => o.status === "rejected") as PromiseRejectedResult[]
      expect(won).toHaveLength(1)
      expect(lost).toHaveLength(1)
      const first = (won[0] as PromiseFulfilledResult<{ decision: { ok: boolean } }>).value.decision
      expect(AnswerConflictError.isInstance(lost[0]?.reason)).toBe(true)
      expect(lost[0]?.reason.decision).toEqual(first)
      // An identical answer conflicts too.
      await expect(conn.deliverAnswer({ id, ...first })).rejects.toMatchObject({
        code: "TNX_ANSWER_CONFLICT",
        decision: first,
      })
      expect(await conn.getDecision(id)).toEqual(first)
      const result = (await conn.result(runId, { timeoutMs: 30_000 })) as RunResult
      expect(result.status).toBe("done")
      const effects = runsOf("refund", runId).filter((e) => e.answer !== null)
      expect(effects).toHaveLength(first.ok ? 1 : 0)
    }, 60_000)

    it("cancel stops a parked run and withdraws its request with the reason: a later answer conflicts", async () => {
      const runId = "refund-cancel"
      await conn.start("refunds", runId, `refund order 42 (${runId})`)
      const entry = await pendingOf(runId)
      expect(await conn.getDecision(entry.request.id)).toBeUndefined()
      await conn.cancel(runId, "withdrawn")
      const decision = { ok: false, reason: "withdrawn" }
      expect(await conn.getDecision(entry.request.id)).toEqual(decision)
      expect(await conn.findRequest(entry.request.id)).toBeUndefined()
      await expect(conn.deliverAnswer({ id: entry.request.id, ok: true })).rejects.toMatchObject({
        code: "TNX_ANSWER_CONFLICT",
        decision,
      })
      await expect(conn.result(runId, { timeoutMs: 30_000 })).rejects.toBeInstanceOf(EngineRunError)
      expect(runsOf("refund", runId).filter((e) => e.answer !== null)).toHaveLength(0)
      // A cancelled run streams nothing.
      const streamed: unknown[] = []
      for await (const ev of conn.events(runId, { fromStart: true })) streamed.push(ev)
      expect(streamed).toEqual([])
    }, 60_000)

    it("bad answers and unknown requests get typed errors; an unknown run is an EngineRunError", async () => {
      await expect(conn.deliverAnswer({ id: "pnd-nobody", ok: true })).rejects.toBeInstanceOf(
        UnknownRequestError,
      )
      await expect(conn.deliverAnswer({ id: "x", ok: "yes" } as never)).rejects.toBeInstanceOf(
        AnswerInvalidError,
      )
      await expect(conn.result("never-started", { timeoutMs: 10_000 })).rejects.toBeInstanceOf(EngineRunError)
      await expect(conn.start("refunds", "bad id!", "x")).rejects.toMatchObject({ code: "TNX_CONFIG" })
      await conn.start("nobody", "unknown-agent", "x")
      await expect(conn.result("unknown-agent", { timeoutMs: 30_000 })).rejects.toThrow(
        /no worker defines agent/,
      )
    }, 60_000)

    it("expiry is an engine timer that records a decline; a later answer conflicts with it", async () => {
      const runId = "refund-late"
      await conn.start("refunds", runId, `refund late order (${runId})`)
      const result = (await conn.result(runId, { timeoutMs: 30_000 })) as RunResult
      expect(result.text).toBe("done: declined: Approve late? (expired)")
      expect(runsOf("expiring", runId)).toHaveLength(1)
      expect(result.toolCalls[0]?.output).toBe("declined: Approve late? (expired)")
      // The tool named its request: a later answer meets the recorded decline.
      const requestId = `late.${runId}:e1`
      expect(await conn.findRequest(requestId)).toBeUndefined()
      await expect(conn.deliverAnswer({ id: requestId, ok: true })).rejects.toMatchObject({
        code: "TNX_ANSWER_CONFLICT",
        decision: { ok: false, reason: "expired" },
      })
    }, 60_000)

    it("a two-level tree is one workflow: one entry for the deepest handle, one answer finishes it", async () => {
      const runId = "tree-1"
      await conn.start("tree", runId, `tree refund (${runId})`)
      const entry = await pendingOf(runId)
      expect(entry).toMatchObject({
        conversationId: `${runId}/root/lead.1/payer.1`,
        runtimeKey: runId,
        path: ["root", "lead.1", "payer.1"],
      })
      expect((await conn.listPending()).filter((e) => e.conversationId.startsWith(runId))).toHaveLength(1)
      await restart()
      await conn.deliverAnswer({ id: entry.request.id, ok: true })
      const result = await conn.result(runId, { timeoutMs: 30_000 })
      expect(result).toMatchObject({ status: "done", text: "lead: payer: refunded 12" })
      expect(runsOf("refund", `${runId}/root/lead.1/payer.1`)).toHaveLength(2)
      const leadAsked = llm.requests.filter(
        (r) => r.system === "lead" && r.toolResults.length === 0 && r.lastUserText.includes(runId),
      )
      expect(leadAsked).toHaveLength(1)
    }, 60_000)

    it("an asTool agent in a client's toolkit is journaled in the same workflow: killed while it waits, nothing runs twice", async () => {
      const runId = "as-tool-1"
      const prompt = `boss refund (${runId})`
      await conn.start("boss", runId, prompt)
      const entry = await pendingOf(runId)
      expect(entry.request.data).toMatchObject({ tool: "refund", path: ["root", "payer.1"] })
      await restart()
      await conn.deliverAnswer({ id: entry.request.id, ok: true })
      const result = (await conn.result(runId, { timeoutMs: 30_000 })) as RunResult
      expect(result).toMatchObject({ status: "done", text: "boss: payer: refunded 12" })
      expect(asked(prompt, 0)).toBe(1)
      const payerFirst = llm.requests.filter(
        (r) => r.system === "payer" && r.toolResults.length === 0 && r.lastUserText.includes(runId),
      )
      expect(payerFirst).toHaveLength(1)
      expect(runsOf("refund", `${runId}/tool:1:b1/root/payer.1`)).toHaveLength(2)
    }, 60_000)

    it("a 300-turn run stays within the journal limits", async () => {
      const runId = "long-300"
      await conn.start("long", runId, `count (${runId})`)
      const result = (await conn.result(runId, { timeoutMs: 120_000 })) as RunResult
      expect(result).toMatchObject({ status: "done", text: "ticked 299", turns: 300, toolCallCount: 299 })
    }, 150_000)
  })
  if (init.skip !== undefined) console.warn(`skipping ${name}: ${init.skip}`)
}

/**
 * @internal The scripted model of the contract's agents (their system prompts tell them apart);
 * the host contract runs the same one.
 */
export function scriptModel(
  llm: FakeLLMServer,
  hangOnce: Set<string>,
  assistants: (req: FakeRequestView) => number,
): void {
  llm.addRule({
    match: (req) => req.system === "refunds",
    reply: (req) => {
      const n = assistants(req)
      const prompt = req.lastUserText
      // A plain chat turn (the host contract's `send`): answered at once, whatever came before.
      if (prompt.startsWith("chat")) return { text: `chat: ${prompt}` }
      if (hangOnce.delete(`${prompt}#${n}`)) return { hang: true }
      if (n === 0 && prompt.includes("late"))
        return { toolCalls: [{ id: "e1", name: "expiring", arguments: {} }] }
      if (n === 0) return { toolCalls: [{ id: "l1", name: "lookup", arguments: { order: "42" } }] }
      if (n === 1 && !prompt.includes("late"))
        return { toolCalls: [{ id: "r1", name: "refund", arguments: { amount: 30 } }] }
      return { text: `done: ${req.toolResults.map((r) => r.content).join("|")}` }
    },
  })
  llm.addRule({
    match: (req) => req.system === "long",
    reply: (req) => {
      const n = assistants(req)
      return n < 299
        ? { toolCalls: [{ id: `t${n}`, name: "tick", arguments: { n } }] }
        : { text: "ticked 299" }
    },
  })
  llm.addRule({
    match: (req) => req.system === "lead",
    reply: (req) =>
      req.toolResults.length === 0
        ? {
            toolCalls: [
              {
                id: "k1",
                name: "task",
                arguments: { agent: "payer", prompt: `pay for ${req.lastUserText}` },
              },
            ],
          }
        : { text: `lead: ${req.toolResults[0]?.content}` },
  })
  llm.addRule({
    match: (req) => req.system === "boss",
    reply: (req) =>
      req.toolResults.length === 0
        ? { toolCalls: [{ id: "b1", name: "payer", arguments: { prompt: `pay for ${req.lastUserText}` } }] }
        : { text: `boss: ${req.toolResults[0]?.content}` },
  })
  llm.addRule({
    match: (req) => req.system === "payer",
    reply: (req) =>
      req.toolResults.length === 0
        ? { toolCalls: [{ id: "t1", name: "refund", arguments: { amount: 12 } }] }
        : { text: `payer: ${req.toolResults[0]?.content}` },
  })
}

/** @internal A worker process; `kill()` is SIGKILL. */
export interface Worker {
  kill(): Promise<void>
  stop(): Promise<void>
}

/** @internal Starts a worker process serving the contract's agents through the adapter in `env`. */
export async function spawnWorker(env: Record<string, string>): Promise<Worker> {
  const child = spawn(process.execPath, [join(here, "worker.js")], {
    env: { ...process.env, ...env },
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
  return { kill: () => stopChild(child, "SIGKILL"), stop: () => stopChild(child, "SIGTERM") }
}

function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    child.once("exit", () => resolve())
    child.kill(signal)
  })
}

/** Polls `check` every 50 ms until it holds; rejects naming `what` after `timeoutMs`. */
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

/** The tool executions the workers logged. */
/** @internal The tool executions `contractAgents` logged, in order. */
export function toolLog(logFile: string): { tool: string; key: string; answer?: unknown }[] {
  return readFileSync(logFile, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line))
}
