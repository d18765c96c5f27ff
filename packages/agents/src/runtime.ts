import {
  AbortError,
  type Answer,
  ConfigError,
  type ConversationStore,
  MemoryStore,
  type ToolContext,
  type ToolResult,
  assertAnswer,
} from "@toolnexus/core"
import { withAgentTools } from "./agent-tool.js"
import { carveBudget, poolLimit } from "./budget.js"
import { systemClock } from "./clock.js"
import { ClosedError, InboxFullError, RuntimeError } from "./errors.js"
import { Execution } from "./execution.js"
import { Semaphore } from "./gates.js"
import { HandleRecord } from "./handle-record.js"
import { applyTransition } from "./handle-state.js"
import { type ParkedRequest, Parking, type ResumeOptions } from "./parking.js"
import { EventHub, type RuntimeEvent, type RuntimeEventsOptions } from "./runtime-events.js"
import {
  type ConversationScope,
  type RuntimeSnapshot,
  restoreRecords,
  scopeOf,
  snapshotOf,
} from "./snapshot.js"
import { type TaskHost, delegate } from "./task-tool.js"
import { Trace } from "./trace.js"
import type {
  AgentDef,
  Budget,
  Clock,
  Handle,
  HandleState,
  HandleView,
  InboxItem,
  RuntimeOptions,
  TaskResult,
} from "./types.js"

/** The sub-agent runtime: a tree of handles under `root`. */
export interface Runtime {
  /** The host's handle (id `"root"`): the parent of top-level spawns; it cannot be woken. */
  readonly root: Handle
  /**
   * @throws RuntimeError (`code: "TNX_RUNTIME"`, `reason` unknown_agent | max_children | max_depth |
   * budget_exhausted); ClosedError (`code: "TNX_CLOSED"`, `reason: "closed"`) under a closed parent.
   */
  spawn(parent: Handle, defName: string, budget?: Budget): Handle
  /** @throws InboxFullError at the cap; ClosedError after close. */
  post(h: Handle, item: InboxItem): void
  /** idle→running, or queued FIFO while the parent's `maxConcurrent` is reached. */
  wake(h: Handle, prompt?: string): void
  /** Never throws; a settled handle gives its last result at once. */
  wait(h: Handle, opts?: { timeoutMs?: number }): Promise<TaskResult>
  /**
   * Stops what the handle is doing, leaving it open: a running turn is aborted (result
   * `interrupted`, its inbox items put back), a parked request is cancelled (the next run
   * declines it), a queued wake is dropped. Otherwise (idle, closed, or waiting on an inline
   * `waitFor`) nothing changes.
   */
  interrupt(h: Handle): void
  /**
   * Closes the handle and its subtree, children first. A running one gets `shutdownMs` to
   * settle (none with `force`) and is then aborted; a parked one's request is cancelled; then
   * its def's `onClose` runs. Closing a closed handle does nothing; closing `root` ends `events()`.
   */
  close(h: Handle, opts?: { force?: boolean }): Promise<void>
  /**
   * Resumes the deepest handle parked on `answer.id`, then every ancestor parked on it.
   * `opts.claim` is a durable store's claim token: the topmost of those handles, the last to
   * save, saves under it and so consumes it. `opts.signal` aborts the cascade's runs.
   *
   * Resolves, once the cascade has settled, with the result of the topmost handle it resumed
   * (what that handle's `wait` gives: done, or pending on a new request).
   *
   * @throws UnknownRequestError when no suspended handle holds `answer.id`.
   * @throws AnswerInvalidError when `answer` is not of the wire shape; nothing is changed.
   */
  resume(answer: Answer, opts?: ResumeOptions): Promise<TaskResult>
  /**
   * The open requests of the tree, from the runtime's own parking index: one entry per
   * request id with its deepest holder (the one an answer resumes first) and its topmost
   * holder (the cascade's last step), each with its conversation id in the store.
   */
  parked(): ParkedRequest[]
  /**
   * Brings a restored tree in line with its store: a request whose topmost holder's
   * conversation no longer waits on it (its answer was applied by a process that died before
   * saving the runtime) is taken from the store, running nothing. `answerFor` gives the
   * decision that was applied when the host knows it (a durable store records it). Returns
   * the request ids recovered; save the runtime again when there are any.
   */
  reconcile(answerFor?: (requestId: string) => Promise<Answer | undefined>): Promise<string[]>
  /** The handle with this id (e.g. `root/lead.1`, after `restoreRuntime`), or undefined if there is none. */
  handle(id: string): Handle | undefined
  /**
   * The runtime's namespace: `RuntimeOptions.namespace`, or a unique one (`rt-<uuid>`) made
   * at creation, kept in its snapshot. It scopes every conversation id of the tree.
   */
  readonly namespace: string
  /** The id of a handle's conversation in the store, e.g. `ticket-42/root/lead.1`. */
  conversationId(h: Handle): string
  /** The handle's current state: `idle`, `running`, `suspended` or `closed`. */
  stateOf(h: Handle): HandleState
  /** A view of the handle now: state, usage, inbox size, children and the request it is suspended on. */
  inspect(h: Handle): HandleView
  /** A view of every handle under the root (the root not included), depth-first, siblings by id. */
  list(): HandleView[]
  /** The runtime's trace so far, oldest first: `<id>: <from>→<to>` state changes and notes. */
  trace(): string[]
  /** The handle's state changes so far, oldest first, e.g. `["idle→running", "running→idle"]`. */
  transitions(h: Handle): string[]
  /** The one store of every handle's conversation: `RuntimeOptions.store`, else a new `MemoryStore`. */
  readonly store: ConversationStore
  /** The handle tree as plain JSON for `restoreRuntime` with the same store; running ones return idle. */
  snapshot(): RuntimeSnapshot
  /**
   * The runtime's events as they happen: every handle's run events and state changes, each
   * tagged with its handle, in order per handle. Subscribes at once (nothing between this call
   * and the first read is missed) and ends after `close(root)` or on `signal`. The runtime
   * never waits for a consumer: one that stalls past `bufferSize` loses events and then reads
   * a `dropped` event with their count. While nobody listens, handles run without streaming;
   * a turn already under way when the first consumer subscribes streams its state changes
   * but not its text (it was started without a streaming request). After `close(root)` the
   * iteration ends at once.
   *
   * @throws ConfigError for a `bufferSize` that is not a positive integer.
   */
  events(opts?: RuntimeEventsOptions): AsyncIterableIterator<RuntimeEvent>
}

/** @internal The key of a runtime's delegation entry point (not part of the public surface). */
export const DELEGATE = Symbol.for("toolnexus.agents.delegate")

/** @internal A runtime that can delegate from one of its handles. */
export type DelegatingRuntime = Runtime & {
  [DELEGATE](parent: Handle, agent: string, prompt: string, ctx: ToolContext): Promise<ToolResult>
}

const ROOT_DEF: AgentDef = { name: "root", does: "the host" }

/**
 * Creates a sub-agent runtime.
 *
 * @throws ConfigError for an invalid registry or options.
 * @example
 * const rt = createRuntime({ registry: { helper }, llm: { baseUrl, model: "gpt-4.1-mini" } })
 * const h = rt.spawn(rt.root, "helper")
 * rt.wake(h, "Summarise the report")
 * const result = await rt.wait(h)
 */
export function createRuntime(opts: RuntimeOptions): Runtime {
  return new AgentRuntime(opts)
}

/**
 * Rebuilds a runtime from a snapshot (same registry re-supplied) so that parked handles can
 * be resumed as if the process had never stopped.
 *
 * @throws SchemaVersionError for a snapshot version this code does not read.
 */
export function restoreRuntime(snapshot: RuntimeSnapshot, opts: RuntimeOptions): Runtime {
  return new AgentRuntime(opts, snapshot)
}

/**
 * The host verbs over a tree of handles. Running a turn lives in `Execution`, parking and
 * resuming in `Parking`, inline escalation in escalation.ts, and every state change goes
 * through the transition table of handle-state.ts.
 */
class AgentRuntime implements Runtime, TaskHost {
  readonly root: Handle
  readonly store: ConversationStore
  readonly #registry: Record<string, AgentDef>
  readonly #clock: Clock
  /** Under a durable executor (journaled runs). */
  readonly #journaled: boolean
  readonly #records = new Map<string, HandleRecord>()
  readonly #rootRecord: HandleRecord
  readonly #trace: Trace
  readonly #inboxCap: number
  readonly #shutdownMs: number
  readonly namespace: string
  readonly #scope: ConversationScope
  readonly #execution: Execution
  readonly #parking: Parking
  readonly #events: EventHub

  constructor(given: RuntimeOptions, snapshot?: RuntimeSnapshot) {
    if (typeof given?.registry !== "object" || given.registry === null) {
      throw new ConfigError("createRuntime needs a registry of agent definitions")
    }
    const opts = { ...given, registry: withAgentTools(given.registry) }
    for (const [key, def] of Object.entries(opts.registry)) {
      if (def?.name !== key)
        throw new ConfigError(`registry key ${JSON.stringify(key)} must equal its def's name`)
      for (const member of def.team ?? []) {
        if (!opts.registry[member])
          throw new ConfigError(`agent ${key}: team member ${JSON.stringify(member)} is not in the registry`)
      }
    }
    this.#registry = opts.registry
    this.#clock = opts.clock ?? systemClock
    this.#journaled = opts.executor !== undefined
    this.store = opts.store ?? new MemoryStore()
    this.#inboxCap = positive("inboxCap", opts.inboxCap, 100)
    this.#shutdownMs = positive("shutdownMs", opts.shutdownMs, 30_000)
    const turnGate =
      opts.maxConcurrentTurns === undefined
        ? undefined
        : new Semaphore(positive("maxConcurrentTurns", opts.maxConcurrentTurns, 1))
    const scope = scopeOf(snapshot, opts.namespace)
    this.#scope = scope
    this.namespace = scope.namespace
    const conversationId = (r: HandleRecord) => scope.idPrefix + r.id
    const style = opts.llm?.style ?? "openai"

    if (snapshot) {
      const restored = restoreRecords(snapshot, opts.registry, ROOT_DEF)
      for (const r of restored.records) this.#records.set(r.id, r)
      this.#trace = restored.trace
      this.#rootRecord = restored.root
    } else {
      this.#trace = new Trace()
      this.#rootRecord = new HandleRecord({
        id: "root",
        def: ROOT_DEF,
        parent: undefined,
        budget: {},
        spawnedAt: this.#clock.now(),
      })
      this.#records.set("root", this.#rootRecord)
    }
    this.root = this.#rootRecord.handle
    this.#events = new EventHub(opts.onEvent, this.root.id)

    this.#execution = new Execution({
      options: opts,
      store: this.store,
      clock: this.#clock,
      trace: this.#trace,
      events: this.#events,
      turnGate,
      taskHost: this,
      conversationId,
      parked: (r) => this.#parking.park(r),
      wakeAgain: (r) => this.wake(r.handle),
    })
    this.#parking = new Parking({
      store: this.store,
      trace: this.#trace,
      events: this.#events,
      execution: this.#execution,
      root: this.#rootRecord,
      conversationId,
      transcriptOf: (r) => ({ model: r.def.model ?? opts.llm?.model ?? "", style }),
    })
    for (const r of this.#records.values()) if (r.state === "suspended") this.#parking.park(r)
  }

  // ---- the host verbs ------------------------------------------------------------------

  spawn(parent: Handle, defName: string, budget?: Budget, taskKey?: string): Handle {
    const p = this.#record(parent)
    if (p.state === "closed") throw new ClosedError(p.id, `spawn under ${p.id}`)
    const def = this.#registry[defName]
    if (!def)
      throw new RuntimeError(
        "unknown_agent",
        `unknown agent ${JSON.stringify(defName)}; registered: ${Object.keys(this.#registry).sort().join(", ")}`,
      )
    if (p.budget.maxChildren !== undefined && p.children.length >= p.budget.maxChildren) {
      throw new RuntimeError(
        "max_children",
        `${p.id} may spawn at most ${p.budget.maxChildren} ${p.budget.maxChildren === 1 ? "child" : "children"} (budget maxChildren); it cannot spawn ${defName}`,
      )
    }
    if (p.budget.maxDepth !== undefined && p.budget.maxDepth < 1) {
      throw new RuntimeError(
        "max_depth",
        `${p.id} is at the maximum depth of its budget (maxDepth); it cannot spawn ${defName}`,
      )
    }
    const now = this.#clock.now()
    // Under an executor the wall is decided by the child's first turn check, a journaled step.
    const limit = poolLimit(p.chain(), this.#journaled ? undefined : now)
    if (limit)
      throw new RuntimeError(
        "budget_exhausted",
        `cannot spawn ${defName} under ${p.id}: budget exhausted (${limit} is used up)`,
      )
    p.childCounters ??= new Map()
    const n = (p.childCounters.get(defName) ?? 0) + 1
    p.childCounters.set(defName, n)
    const id = `${p.id}/${defName}.${n}`
    const record = new HandleRecord({
      id,
      def,
      parent: p,
      budget: carveBudget({ ...def.budget, ...budget }, p === this.#rootRecord ? undefined : p, now),
      spawnedAt: now,
      taskKey,
    })
    p.addChild(record)
    this.#records.set(id, record)
    if (def.onSpawn) void Promise.resolve(def.onSpawn(record.handle)).catch(() => {})
    return record.handle
  }

  post(h: Handle, item: InboxItem): void {
    const r = this.#record(h)
    if (r.state === "closed") throw new ClosedError(r.id, "post")
    if (r.inbox.length >= this.#inboxCap) throw new InboxFullError(r.id, this.#inboxCap)
    r.post({ ...item })
  }

  wake(h: Handle, prompt?: string): void {
    const r = this.#record(h)
    if (r.state === "closed") throw new ClosedError(r.id, "wake")
    if (r === this.#rootRecord)
      throw new RuntimeError("unknown_agent", "the root is the host; wake one of its children")
    if (r.state !== "idle" || r.queued) {
      // Busy or parked: keep the prompt in the inbox and run it once the handle settles.
      if (prompt) this.post(h, { text: prompt })
      if (r.state !== "idle") r.rewake = true
      return
    }
    if (!prompt && r.inbox.length === 0 && !r.cancelled) return
    this.#execution.admit(r, prompt)
  }

  wait(h: Handle, opts: { timeoutMs?: number } = {}): Promise<TaskResult> {
    const r = this.#record(h)
    const settledNow = r.settledResult()
    if (settledNow) return Promise.resolve(settledNow)
    return new Promise((resolve) => {
      let timer: unknown
      const waiter = (result: TaskResult) => {
        if (timer !== undefined) this.#clock.clearTimeout(timer)
        resolve(result)
      }
      r.addWaiter(waiter)
      if (opts.timeoutMs !== undefined) {
        timer = this.#clock.setTimeout(() => {
          r.removeWaiter(waiter)
          resolve(r.result("timeout", `no result within ${opts.timeoutMs} ms`, true))
        }, opts.timeoutMs)
      }
    })
  }

  interrupt(h: Handle): void {
    const r = this.#record(h)
    if (r.queued) this.#execution.dequeue(r)
    if (r.state === "running") r.turn?.controller.abort(new AbortError(`${r.id} was interrupted`))
    else if (r.state === "suspended" && !r.inline) this.#parking.cancel(r, "interrupted")
  }

  async close(h: Handle, opts: { force?: boolean } = {}): Promise<void> {
    const r = this.#record(h)
    if (r.state === "closed") return
    // Leaf-first: a parent outlives none of its children.
    for (const child of [...r.children].reverse()) await this.close(child.handle, opts)
    let reason: "closed" | "interrupted" = "closed"
    if (r.queued) this.#execution.dequeue(r)
    if (r.state === "running" || r.inline) {
      if (!opts.force) await this.#settledWithin(r, this.#shutdownMs)
      const turn = r.turn
      if (turn && (r.state === "running" || r.inline)) {
        reason = "interrupted"
        turn.controller.abort(new AbortError(`${r.id} was closed`))
        await turn.settled
      }
    }
    if (r.state === "suspended") this.#parking.cancel(r, "closed")
    if (r.def.onClose) await Promise.resolve(r.def.onClose(r.handle, reason)).catch(() => {})
    applyTransition(r, "close", this.#trace, this.#events)
    // Waiters get what a later `wait` gets: the last result, or `closed` if it never ran.
    r.notify(r.settledResult() as TaskResult)
    if (r === this.#rootRecord) this.#events.end()
  }

  events(opts?: RuntimeEventsOptions): AsyncIterableIterator<RuntimeEvent> {
    return this.#events.subscribe(opts)
  }

  resume(answer: Answer, opts?: ResumeOptions): Promise<TaskResult> {
    // A malformed answer is refused before anything is looked up or changed.
    try {
      assertAnswer(answer)
    } catch (error) {
      return Promise.reject(error)
    }
    return this.#parking.resume(answer, opts)
  }

  parked(): ParkedRequest[] {
    return this.#parking.parked()
  }

  reconcile(answerFor?: (requestId: string) => Promise<Answer | undefined>): Promise<string[]> {
    return this.#parking.reconcile(answerFor)
  }

  // ---- inspection ----------------------------------------------------------------------

  handle(id: string): Handle | undefined {
    return this.#records.get(id)?.handle
  }

  conversationId(h: Handle): string {
    return this.#scope.idPrefix + this.#record(h).id
  }

  stateOf(h: Handle): HandleState {
    return this.#record(h).state
  }

  inspect(h: Handle): HandleView {
    const r = this.#record(h)
    const view: HandleView = {
      id: r.id,
      def: r.def.name,
      state: r.state,
      turns: r.spend.turns,
      totalTurns: r.spend.totalTurns,
      tokens: r.spend.tokens,
      inbox: r.inbox.length,
      children: r.children.map((c) => c.id),
    }
    if (r.state === "suspended" && r.pending) {
      view.pendingKind = r.pending.kind
      view.pending = r.shown(r.pending)
    }
    return view
  }

  list(): HandleView[] {
    const out: HandleView[] = []
    const visit = (r: HandleRecord) => {
      for (const c of [...r.children].sort(byId)) {
        out.push(this.inspect(c.handle))
        visit(c)
      }
    }
    visit(this.#rootRecord)
    return out
  }

  trace(): string[] {
    return this.#trace.lines()
  }

  transitions(h: Handle): string[] {
    return [...this.#record(h).transitions]
  }

  snapshot(): RuntimeSnapshot {
    return snapshotOf(this.#rootRecord, this.#trace.lines(), this.#scope)
  }

  // ---- the task tool's host ------------------------------------------------------------

  spawnForTask(parent: HandleRecord, defName: string, taskKey: string | undefined): HandleRecord {
    return this.#record(this.spawn(parent.handle, defName, undefined, taskKey))
  }

  note(line: string): void {
    this.#trace.note(line)
  }

  /** @internal `delegate` from one of this runtime's handles (an agent tool run outside a runtime). */
  [DELEGATE](parent: Handle, agent: string, prompt: string, ctx: ToolContext): Promise<ToolResult> {
    return delegate(this, this.#record(parent), agent, prompt, ctx)
  }

  async #settledWithin(r: HandleRecord, ms: number): Promise<void> {
    let timer: unknown
    await Promise.race([
      r.turn?.settled,
      new Promise<void>((resolve) => {
        timer = this.#clock.setTimeout(resolve, ms)
      }),
    ])
    this.#clock.clearTimeout(timer)
  }

  #record(h: Handle): HandleRecord {
    const r = this.#records.get(h?.id)
    if (!r) throw new RuntimeError("unknown_agent", `no handle ${JSON.stringify(h?.id)} in this runtime`)
    return r
  }
}

function byId(a: HandleRecord, b: HandleRecord): number {
  return a.id.localeCompare(b.id, "en", { numeric: true })
}

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback
  if (!Number.isFinite(value) || value <= 0)
    throw new ConfigError(`${name} must be a positive number, got ${value}`)
  return value
}
