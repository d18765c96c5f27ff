import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  AnswerConflictError,
  type ConversationStore,
  EngineRunError,
  type PendingEntry,
  type RunHost,
  type RunResult,
  hostAgent,
} from "@toolnexus/core"
import { type FakeLLMServer, type FakeRequestView, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { TaskResult } from "../types.js"
import { contractAgents } from "./contract-agents.js"
import type { ContractEngine, EngineContractInit } from "./engine-contract-types.js"
import { type Worker, scriptModel, spawnWorker, toolLog, until } from "./engine-contract.js"

/**
 * How a host implementation plugs into {@link describeHostContract}: a host whose runs execute
 * in this process (`store` and `host`), or an engine whose runs execute in worker processes
 * (`engine`; its connections are the hosts).
 */
export interface HostContractInit<Store = unknown> {
  /**
   * Opens a store of the backend under test; every call reaches the same data, so a second
   * store is another process over the same database. Not for an `engine`.
   */
  store?(): Promise<Store>
  /**
   * An engine instead of a store: started once, with worker processes serving the contract's
   * agents through its adapter; a second host is another connection, a restart a new worker.
   */
  engine?: EngineContractInit
  /** A host over `store` serving `agents` (the contract's `hostAgent`s), with `extra` as given. Not for an `engine`. */
  host?(
    store: Store,
    agents: unknown[],
    extra: {
      /** The host's `notify`. */
      notify: (entry: PendingEntry) => Promise<void>
    },
  ): RunHost
  /** Closes a store `store()` opened (after its hosts are closed). */
  closeStore?(store: Store): Promise<void>
  /** When set, the suite is skipped and this reason printed once. */
  skip?: string
}

/**
 * Registers the behaviour every `RunHost` must have (§17), as one vitest `describe` block named
 * `name`, on the engines' scripted model and agents (`contractAgents`; on a store host with
 * clients on the host's store, on an engine served by worker processes): one run per run id,
 * parking and the request index, one decision and one tool run per request, a two-level tree
 * resumed by one answer, `getDecision`, `cancel`, `send` (a conversation's later turns),
 * `events` (live, from the start, ending when the run parks or ends) and `onEvent`,
 * `transcript`, `result` timeouts, and a second host (a restart; on an engine a new worker
 * after a SIGKILL) answering, streaming and continuing what the first parked. `notify` is
 * checked on store hosts only; a store host's `result` resolves at a park, an engine's at the
 * end.
 *
 * @example
 * describeHostContract("createStoreHost on memory", { store: async () => store, host: (store, agents, extra) => createStoreHost({ store, agents, ...extra }) })
 */
export function describeHostContract<Store>(name: string, init: HostContractInit<Store>): void {
  describe.skipIf(init.skip !== undefined)(name, () => {
    let llm: FakeLLMServer
    let logDir: string
    let logFile: string
    let store: Store
    let host: RunHost
    let engine: ContractEngine | undefined
    let worker: Worker | undefined
    const onEngine = init.engine !== undefined
    const opened: { store: Store; host: RunHost }[] = []
    const notified: PendingEntry[] = []
    const hangOnce = new Set<string>()
    // Ids of this suite run: a shared database may hold an earlier run's.
    const tag = Math.random().toString(36).slice(2, 8)
    const id = (base: string) => `${base}-${tag}`

    const assistants = (req: FakeRequestView) =>
      (req.body.messages as { role: string }[]).filter((m) => m.role === "assistant").length
    const asked = (prompt: string, n?: number) =>
      llm.requests.filter((r) => r.lastUserText === prompt && (n === undefined || assistants(r) === n)).length
    /** Runs of `tool` for run `runId` that applied an answer. */
    const effects = (tool: string, runId: string) =>
      toolLog(logFile).filter((e) => e.tool === tool && e.key.startsWith(runId) && e.answer !== null)
    const startWorker = () =>
      spawnWorker({
        ...engine?.env,
        TNX_ENGINE_ADAPTER: init.engine?.adapter as string,
        LLM_URL: llm.url,
        LOG_FILE: logFile,
      })
    const openHost = async (): Promise<{ store: Store; host: RunHost }> => {
      if (engine) {
        const h = engine.connect() as RunHost
        opened.push({ store: undefined as Store, host: h })
        return { store: undefined as Store, host: h }
      }
      if (!init.store || !init.host)
        throw new Error("describeHostContract needs `store` and `host`, or `engine`")
      const s = await init.store()
      const agents = await contractAgents(hostAgent as never, {
        llmUrl: llm.url,
        logFile,
        store: s as unknown as ConversationStore,
      })
      const h = init.host(s, agents, {
        notify: async (entry) => {
          notified.push(entry)
        },
      })
      opened.push({ store: s, host: h })
      return { store: s, host: h }
    }
    /** Waits until run `runId` waits on a request; returns its open entry. */
    const parkedOn = async (runId: string, on = host): Promise<PendingEntry> => {
      let found: PendingEntry | undefined
      await until(async () => {
        found = (await on.listPending({ runId }))[0]
        return found !== undefined
      }, `a request of ${runId}`)
      const entry = await on.findRequest((found as PendingEntry).request.id)
      expect(entry).toEqual(found)
      return entry as PendingEntry
    }
    /** Starts a run and waits until it parks; returns its open entry. */
    const parked = async (agent: string, runId: string, prompt: string, on = host) => {
      expect(await on.start(agent, runId, prompt)).toEqual({ runId, started: true })
      if (!onEngine) {
        const result = (await on.result(runId, { timeoutMs: 20_000 })) as RunResult | TaskResult
        expect(result.pending, `run ${runId} parks`).toBeDefined()
      }
      return parkedOn(runId, on)
    }

    beforeAll(async () => {
      llm = await createFakeLLMServer()
      scriptModel(llm, hangOnce, assistants)
      logDir = mkdtempSync(join(tmpdir(), "tnx-host-contract-"))
      logFile = join(logDir, "tools.jsonl")
      writeFileSync(logFile, "")
      if (init.engine) {
        engine = await init.engine.start()
        worker = await startWorker()
      }
      ;({ store, host } = await openHost())
    }, 120_000)

    afterAll(async () => {
      for (const o of opened.reverse()) {
        await o.host.close()
        if (!onEngine) await init.closeStore?.(o.store)
      }
      await worker?.stop()
      await engine?.stop()
      await llm?.close()
      if (logDir) rmSync(logDir, { recursive: true, force: true })
    })

    it("a run id starts one run: concurrent and later starts with it start nothing", async () => {
      const runId = id("twice")
      const prompt = `refund order 42 (${runId})`
      const starts = await Promise.all([
        host.start("refunds", runId, prompt),
        host.start("refunds", runId, prompt),
      ])
      expect(starts.map((s) => s.started).sort()).toEqual([false, true])
      expect((await parkedOn(runId)).request).toMatchObject({ kind: "approval" })
      expect(await host.start("refunds", runId, prompt)).toEqual({ runId, started: false })
      expect([asked(prompt, 0), asked(prompt, 1)]).toEqual([1, 1])

      // Two hosts over one store (two processes): the store decides, one run.
      const other = await openHost()
      const raced = id("twice-hosts")
      const racing = `refund order 42 (${raced})`
      const both = await Promise.all([
        host.start("refunds", raced, racing),
        other.host.start("refunds", raced, racing),
      ])
      expect(both.map((s) => s.started).sort()).toEqual([false, true])
      const winner = both[0]?.started ? host : other.host
      await parkedOn(raced, winner)
      expect(asked(racing, 0)).toBe(1)
    }, 30_000)

    it("a parked run is listed once and found; notify hears of it once; one answer runs the tool once", async () => {
      const runId = id("park")
      const entry = await parked("refunds", runId, `refund order 42 (${runId})`)
      const requestId = entry.request.id
      expect(entry).toMatchObject({ conversationId: runId, state: "open", attempts: 0 })
      expect(entry.request.data).toMatchObject({ tool: "refund", args: { amount: 30 } })
      expect((await host.listPending()).filter((e) => e.request.id === requestId)).toEqual([entry])
      if (!onEngine) expect(notified.filter((e) => e.request.id === requestId)).toHaveLength(1)
      expect(await host.getDecision(requestId)).toBeUndefined()

      const outcomes = await Promise.allSettled([
        host.deliverAnswer({ id: requestId, ok: true }),
        host.deliverAnswer({ id: requestId, ok: false, reason: "no" }),
      ])
      const won = outcomes.filter((o) => o.status === "fulfilled")
      expect(won).toHaveLength(1)
      const first = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<RunHost["deliverAnswer"]>>>).value
      expect(first).toMatchObject({ runId, request: { id: requestId } })
      const lost = outcomes.find((o) => o.status === "rejected") as PromiseRejectedResult
      expect(lost.reason).toBeInstanceOf(AnswerConflictError)

      const result = (await host.result(runId, { timeoutMs: 20_000 })) as RunResult
      expect(result.pending).toBeUndefined()
      const ran = first.decision.ok ? 1 : 0
      if (first.decision.ok) expect(result.text).toBe("done: refunded 30")
      expect(effects("refund", runId)).toHaveLength(ran)
      await expect(host.deliverAnswer({ id: requestId, ok: true })).rejects.toMatchObject({
        code: "TNX_ANSWER_CONFLICT",
        decision: first.decision,
      })
      expect(await host.getDecision(requestId)).toEqual(first.decision)
      expect(await host.findRequest(requestId)).toBeUndefined()
      expect(effects("refund", runId)).toHaveLength(ran)
    }, 30_000)

    it("listPending({ runId }) lists only that run's requests, with the other filters", async () => {
      const mine = id("mine")
      // An id the first one is a prefix of: a filter by prefix would mix them up.
      const longer = `${mine}.2`
      const [a, b] = await Promise.all([
        parked("refunds", mine, `refund order 42 (${mine})`),
        parked("refunds", longer, `refund order 42 (${longer})`),
      ])
      expect(await host.listPending({ runId: mine })).toEqual([a])
      expect(await host.listPending({ runId: longer })).toEqual([b])
      expect(await host.listPending({ runId: mine, kind: "input" })).toEqual([])
      expect(await host.listPending({ runId: mine, limit: 0 })).toEqual([])
      expect(await host.listPending({ runId: id("never-started") })).toEqual([])
      await host.cancel(mine, "done with it")
      expect(await host.listPending({ runId: mine })).toEqual([])
      expect(await host.listPending({ runId: longer })).toEqual([b])
      await host.cancel(longer, "done with it")
    }, 30_000)

    it("a two-level runtime tree parks once at its deepest handle and one answer finishes it", async () => {
      const runId = id("tree")
      const entry = await parked("tree", runId, `tree refund (${runId})`)
      expect(entry).toMatchObject({
        conversationId: `${runId}/root/lead.1/payer.1`,
        runtimeKey: runId,
        path: ["root", "lead.1", "payer.1"],
      })
      expect((await host.listPending()).filter((e) => e.runtimeKey === runId)).toHaveLength(1)
      expect(await host.listPending({ runId })).toEqual([entry])
      await host.deliverAnswer({ id: entry.request.id, ok: true })
      const result = (await host.result(runId, { timeoutMs: 20_000 })) as TaskResult
      expect(result).toMatchObject({ status: "done", text: "lead: payer: refunded 12" })
      expect(effects("refund", runId)).toHaveLength(1)
      expect(await host.getDecision(entry.request.id)).toEqual({ ok: true })
      const transcript = JSON.stringify(await host.transcript(runId))
      expect(transcript).toContain("lead: payer: refunded 12")
    }, 30_000)

    it("cancel withdraws a parked run's request with its reason: a later answer conflicts and nothing runs", async () => {
      const runId = id("cancel")
      const entry = await parked("refunds", runId, `refund order 42 (${runId})`)
      await host.cancel(runId, "withdrawn")
      const decision = { ok: false, reason: "withdrawn" }
      expect(await host.getDecision(entry.request.id)).toEqual(decision)
      expect(await host.findRequest(entry.request.id)).toBeUndefined()
      await expect(host.deliverAnswer({ id: entry.request.id, ok: true })).rejects.toMatchObject({
        code: "TNX_ANSWER_CONFLICT",
        decision,
      })
      await expect(host.result(runId, { timeoutMs: 5_000 })).rejects.toBeInstanceOf(EngineRunError)
      expect(effects("refund", runId)).toHaveLength(0)

      // A parked tree: its request leaves every level, and the tree is not resumed.
      const treeId = id("cancel-tree")
      const held = await parked("tree", treeId, `tree refund (${treeId})`)
      await host.cancel(treeId)
      expect(await host.getDecision(held.request.id)).toEqual({ ok: false, reason: "cancelled" })
      expect((await host.listPending()).filter((e) => e.conversationId.startsWith(treeId))).toEqual([])
      await expect(host.deliverAnswer({ id: held.request.id, ok: true })).rejects.toMatchObject({
        code: "TNX_ANSWER_CONFLICT",
      })
      expect(effects("refund", treeId)).toHaveLength(0)
    }, 30_000)

    it("result gives up after timeoutMs or once its signal aborts on a run in flight; cancel aborts it", async () => {
      const runId = id("hang")
      const prompt = `refund order 42 (${runId})`
      hangOnce.add(`${prompt}#0`)
      await host.start("refunds", runId, prompt)
      await until(async () => asked(prompt, 0) === 1, "the hanging turn")
      await expect(host.result(runId, { timeoutMs: 50 })).rejects.toMatchObject({ code: "TNX_ABORTED" })
      // A door whose client left stops waiting at once: an aborted signal ends the wait, and a
      // signal aborted during it ends it then (bounded here only to fail rather than hang).
      await expect(host.result(runId, { signal: AbortSignal.abort() })).rejects.toMatchObject({
        code: "TNX_ABORTED",
      })
      const leaving = new AbortController()
      const waiting = host.result(runId, { signal: leaving.signal })
      leaving.abort()
      const still = new Promise((resolve) => setTimeout(resolve, 5_000, "still waiting"))
      await expect(Promise.race([waiting, still])).rejects.toMatchObject({ code: "TNX_ABORTED" })
      await host.cancel(runId)
      await expect(host.result(runId, { timeoutMs: 5_000 })).rejects.toBeInstanceOf(EngineRunError)
      await expect(host.result(id("never-started"), { timeoutMs: 50 })).rejects.toBeInstanceOf(EngineRunError)
    }, 30_000)

    it("events stream a run in flight (replayed from its start) and end when it parks", async () => {
      const runId = id("events")
      const prompt = `refund order 42 (${runId})`
      const seen: string[] = []
      await host.start("refunds", runId, prompt, { onEvent: (ev) => seen.push(ev.type) })
      const streamed: string[] = []
      for await (const ev of host.events(runId, { fromStart: true })) streamed.push(ev.type)
      expect(streamed).toContain("tool_call")
      expect(streamed).toContain("pending")
      // An engine's `onEvent` tails the same log: it may trail the stream by a poll.
      await until(async () => seen.length >= streamed.length, "onEvent's events")
      expect(seen).toEqual(streamed)
      // Not in flight: nothing to stream.
      const after: string[] = []
      for await (const ev of host.events(runId)) after.push(ev.type)
      expect(after).toEqual([])
    }, 30_000)

    it("a resumed turn's events start after its park: onEvent and events (from the start) repeat none of the turn's earlier events", async () => {
      const runId = id("resumed")
      const prompt = `refund order 42 (${runId})`
      type Seen = { type: string; request?: { id: string } }
      const before: Seen[] = []
      expect(
        await host.start("refunds", runId, prompt, { onEvent: (ev) => before.push(ev as Seen) }),
      ).toEqual({
        runId,
        started: true,
      })
      const entry = await parkedOn(runId)
      await until(async () => before.some((ev) => ev.type === "pending"), "the park's events")
      expect(before.map((ev) => ev.type)).toContain("tool_call")
      // The resumed turn's model call hangs: it stays in flight while its events are read.
      hangOnce.add(`${prompt}#2`)
      const resumed: Seen[] = []
      // A store host's delivery resolves when the resumed turn is over: here after the cancel.
      const delivering = host.deliverAnswer(
        { id: entry.request.id, ok: true },
        { onEvent: (ev) => resumed.push(ev as Seen) },
      )
      delivering.catch(() => undefined)
      await until(async () => asked(prompt, 2) === 1, "the resumed turn's model call")
      const streamed: Seen[] = []
      for await (const ev of host.events(runId, { fromStart: true })) {
        streamed.push(ev as Seen)
        if (ev.type === "tool_result") break
      }
      await until(async () => resumed.some((ev) => ev.type === "tool_result"), "onEvent's resumed events")
      for (const heard of [resumed, streamed]) {
        const types = heard.map((ev) => ev.type)
        expect(types).toContain("tool_result")
        // The park's call, its event and the lookup before it were heard before the park.
        expect(types.slice(0, types.indexOf("tool_result"))).not.toContain("tool_call")
        expect(heard.filter((ev) => ev.type === "pending" && ev.request?.id === entry.request.id)).toEqual([])
      }
      await host.cancel(runId)
      await delivering.catch(() => undefined)
      expect(effects("refund", runId)).toHaveLength(1)
    }, 30_000)

    it("send adds a turn to a conversation run; refused while it waits on a request", async () => {
      const runId = id("send")
      await host.start("refunds", runId, `chat one (${runId})`)
      expect(((await host.result(runId, { timeoutMs: 20_000 })) as RunResult).text).toBe(
        `chat: chat one (${runId})`,
      )
      await host.send(runId, `chat two (${runId})`)
      expect(((await host.result(runId, { timeoutMs: 20_000 })) as RunResult).text).toBe(
        `chat: chat two (${runId})`,
      )
      const transcript = JSON.stringify(await host.transcript(runId))
      expect(transcript).toContain(`chat one (${runId})`)
      expect(transcript).toContain(`chat: chat two (${runId})`)

      const waiting = id("send-waiting")
      await parked("refunds", waiting, `refund order 42 (${waiting})`)
      await expect(host.send(waiting, `chat three (${waiting})`)).rejects.toMatchObject({
        code: "TNX_CONVERSATION_PENDING",
      })
      await expect(host.send(id("send-unknown"), "chat")).rejects.toBeInstanceOf(EngineRunError)
      expect(await host.transcript(id("send-unknown"))).toBeUndefined()
    }, 30_000)

    it("a conversation parked on a later turn survives a restart: transcript, events and send go on", async () => {
      const runId = id("conversation")
      await host.start("refunds", runId, `chat hello (${runId})`)
      expect(((await host.result(runId, { timeoutMs: 20_000 })) as RunResult).text).toBe(
        `chat: chat hello (${runId})`,
      )
      // The second turn asks for approval: `send` resolves once it parks.
      await host.send(runId, `refund order 42 (${runId})`)
      const entry = await parkedOn(runId)
      expect(entry.request.data).toMatchObject({ tool: "refund" })
      // A restart (on an engine: the worker SIGKILLed, a new one started).
      if (worker) {
        await worker.kill()
        worker = await startWorker()
      }
      const second = (await openHost()).host
      const before = JSON.stringify(await second.transcript(runId))
      expect(before).toContain(`chat: chat hello (${runId})`)
      // While it waits, the transcript holds the waiting turn too, its halted call included.
      expect(before).toContain(`refund order 42 (${runId})`)
      expect(before).toContain("refund")
      // Parked: nothing in flight to stream, and no new turn while it waits.
      const idle: string[] = []
      for await (const ev of second.events(runId, { fromStart: true })) idle.push(ev.type)
      expect(idle).toEqual([])
      await expect(second.send(runId, `chat again (${runId})`)).rejects.toMatchObject({
        code: "TNX_CONVERSATION_PENDING",
      })
      // The answer resumes the turn: its events stream to the end.
      const resumed: string[] = []
      await second.deliverAnswer(
        { id: entry.request.id, ok: true },
        { onEvent: (ev) => resumed.push(ev.type) },
      )
      await until(async () => resumed.includes("done"), "the resumed turn's events")
      expect(resumed).toContain("tool_result")
      await until(
        async () =>
          ((await second.result(runId, { timeoutMs: 20_000 })) as RunResult).text === "done: refunded 30",
        "the resumed turn's result",
      )
      expect(effects("refund", runId)).toHaveLength(1)
      // A third turn, streamed as it runs, after the whole conversation.
      const third: string[] = []
      await second.send(runId, `chat three (${runId})`, { onEvent: (ev) => third.push(ev.type) })
      expect(((await second.result(runId, { timeoutMs: 20_000 })) as RunResult).text).toBe(
        `chat: chat three (${runId})`,
      )
      await until(async () => third.includes("done"), "the third turn's events")
      const transcript = JSON.stringify(await second.transcript(runId))
      for (const said of [`chat hello (${runId})`, "done: refunded 30", `chat: chat three (${runId})`])
        expect(transcript).toContain(said)
    }, 60_000)

    it("bad input gets typed errors", async () => {
      await expect(host.start("refunds", "bad id!", "x")).rejects.toMatchObject({ code: "TNX_CONFIG" })
      if (onEngine) {
        // The connection knows no agents: the run fails in the engine.
        await host.start("nobody", id("nobody"), "x")
        await expect(host.result(id("nobody"), { timeoutMs: 20_000 })).rejects.toBeInstanceOf(EngineRunError)
      } else
        await expect(host.start("nobody", id("nobody"), "x")).rejects.toMatchObject({ code: "TNX_CONFIG" })
      await expect(host.deliverAnswer({ id: "pnd-nobody", ok: true })).rejects.toMatchObject({
        code: "TNX_UNKNOWN_REQUEST",
      })
      await expect(host.deliverAnswer({ id: "x", ok: "yes" } as never)).rejects.toMatchObject({
        code: "TNX_ANSWER_INVALID",
      })
    })

    it("a new host over the same store (a restart) answers a request the first one parked", async () => {
      const first = await openHost()
      const runId = id("restart")
      const entry = await parked("refunds", runId, `refund order 42 (${runId})`, first.host)
      await first.host.close()
      if (worker) {
        await worker.kill()
        worker = await startWorker()
      }
      const second = await openHost()
      expect(await second.host.findRequest(entry.request.id)).toEqual(entry)
      expect(await second.host.start("refunds", runId, "again")).toEqual({ runId, started: false })
      const delivered = await second.host.deliverAnswer({ id: entry.request.id, ok: true })
      expect(delivered).toMatchObject({ runId, decision: { ok: true } })
      const result = (await second.host.result(runId, { timeoutMs: 20_000 })) as RunResult
      expect(result.text).toBe("done: refunded 30")
      expect(effects("refund", runId)).toHaveLength(1)
      void store
    }, 30_000)
  })
  if (init.skip !== undefined) console.warn(`skipping ${name}: ${init.skip}`)
}
