import {
  AbortError,
  type Answer,
  type Client,
  ConfigError,
  type ConversationStore,
  type Message,
  type MetricEvent,
  MemoryStore,
  type Request,
  type RunResult,
  type Toolkit,
  UnknownRequestError,
  createClient,
  createToolkit,
} from "@toolnexus/core"
import { carveBudget, reachedLimit } from "./budget.js"
import { systemClock } from "./clock.js"
import { ClosedError, InboxFullError, RuntimeError } from "./errors.js"
import { Semaphore } from "./gates.js"
import { HandleRecord } from "./handle-record.js"
import { renderInbox } from "./inbox.js"
import { type RuntimeSnapshot, restoreRecords, snapshotOf } from "./snapshot.js"
import { createTaskTool } from "./task-tool.js"
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
  readonly root: Handle
  /** @throws RuntimeError (code unknown_agent | max_children | max_depth | budget_exhausted | closed). */
  spawn(parent: Handle, defName: string, budget?: Budget): Handle
  /** @throws InboxFullError at the cap; ClosedError after close. */
  post(h: Handle, item: InboxItem): void
  /** idle→running, or queued FIFO while the parent's `maxConcurrent` is reached. */
  wake(h: Handle, prompt?: string): void
  /** Never throws; a settled handle gives its last result at once. */
  wait(h: Handle, opts?: { timeoutMs?: number }): Promise<TaskResult>
  interrupt(h: Handle): void
  close(h: Handle, opts?: { force?: boolean }): Promise<void>
  /**
   * Resumes the deepest handle parked on `answer.id`, then every ancestor parked on it.
   * `opts.claim` is a durable store's claim token: the topmost of those handles, the last to
   * save, saves under it and so consumes it.
   *
   * @throws UnknownRequestError when no suspended handle holds `answer.id`.
   */
  resume(answer: Answer, opts?: { claim?: string }): Promise<void>
  handle(id: string): Handle | undefined
  stateOf(h: Handle): HandleState
  inspect(h: Handle): HandleView
  list(): HandleView[]
  trace(): string[]
  transitions(h: Handle): string[]
  readonly store: ConversationStore
  snapshot(): RuntimeSnapshot
}

const PLACEHOLDER_URL = "http://llm.invalid/v1"
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

class AgentRuntime implements Runtime {
  readonly root: Handle
  readonly store: ConversationStore
  readonly #opts: RuntimeOptions
  readonly #clock: Clock
  readonly #records = new Map<string, HandleRecord>()
  readonly #rootRecord: HandleRecord
  readonly #trace: string[] = []
  /** Parked (durably suspended) handles by the id of the request they wait on. */
  readonly #parked = new Map<string, HandleRecord[]>()
  readonly #turnGate: Semaphore | undefined
  readonly #inboxCap: number
  readonly #namespace: string
  readonly #shutdownMs: number

  constructor(opts: RuntimeOptions, snapshot?: RuntimeSnapshot) {
    if (typeof opts?.registry !== "object" || opts.registry === null) {
      throw new ConfigError("createRuntime needs a registry of agent definitions")
    }
    for (const [key, def] of Object.entries(opts.registry)) {
      if (def?.name !== key)
        throw new ConfigError(`registry key ${JSON.stringify(key)} must equal its def's name`)
      for (const member of def.team ?? []) {
        if (!opts.registry[member])
          throw new ConfigError(`agent ${key}: team member ${JSON.stringify(member)} is not in the registry`)
      }
    }
    this.#opts = opts
    this.#clock = opts.clock ?? systemClock
    this.store = opts.store ?? new MemoryStore()
    this.#inboxCap = positive("inboxCap", opts.inboxCap, 100)
    this.#namespace = snapshot?.namespace ?? opts.namespace ?? ""
    this.#shutdownMs = positive("shutdownMs", opts.shutdownMs, 30_000)
    if (opts.maxConcurrentTurns !== undefined) {
      this.#turnGate = new Semaphore(positive("maxConcurrentTurns", opts.maxConcurrentTurns, 1))
    }
    if (snapshot) {
      const restored = restoreRecords(snapshot, opts.registry, ROOT_DEF, this.#clock.now())
      for (const r of restored.records) {
        this.#records.set(r.id, r)
        if (r.state === "suspended") this.#park(r)
      }
      this.#trace.push(...restored.trace)
      this.#rootRecord = restored.root
    } else {
      this.#rootRecord = new HandleRecord("root", ROOT_DEF, undefined, {}, this.#clock.now())
      this.#records.set("root", this.#rootRecord)
    }
    this.root = this.#rootRecord.handle
  }

  // ---- the six verbs -------------------------------------------------------------------

  spawn(parent: Handle, defName: string, budget?: Budget, taskKey?: string): Handle {
    const p = this.#record(parent)
    if (p.state === "closed") throw new ClosedError(p.id, `spawn under ${p.id}`)
    const def = this.#opts.registry[defName]
    if (!def)
      throw new RuntimeError(
        "unknown_agent",
        `unknown agent ${JSON.stringify(defName)}; registered: ${Object.keys(this.#opts.registry).sort().join(", ")}`,
      )
    if (p.budget.maxChildren !== undefined && p.children.length >= p.budget.maxChildren) {
      throw new RuntimeError("max_children", `${p.id} may spawn at most ${p.budget.maxChildren} children`)
    }
    if (p.budget.maxDepth !== undefined && p.budget.maxDepth < 1) {
      throw new RuntimeError(
        "max_depth",
        `${p.id} is at the maximum depth of its budget; it cannot spawn ${defName}`,
      )
    }
    const now = this.#clock.now()
    const limit = reachedLimit(p.chain(), now)
    if (limit)
      throw new RuntimeError("budget_exhausted", `cannot spawn ${defName} under ${p.id}: ${limit} is used up`)
    const n = (p.childCounters.get(defName) ?? 0) + 1
    p.childCounters.set(defName, n)
    const id = `${p.id}/${defName}.${n}`
    const record = new HandleRecord(
      id,
      def,
      p,
      carveBudget({ ...def.budget, ...budget }, p === this.#rootRecord ? undefined : p, now),
      now,
    )
    record.taskKey = taskKey
    p.children.push(record)
    this.#records.set(id, record)
    if (def.onSpawn) void Promise.resolve(def.onSpawn(record.handle)).catch(() => {})
    return record.handle
  }

  post(h: Handle, item: InboxItem): void {
    const r = this.#record(h)
    if (r.state === "closed") throw new ClosedError(r.id, "post")
    if (r.inbox.length >= this.#inboxCap) throw new InboxFullError(r.id, this.#inboxCap)
    r.inbox.push({ ...item })
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
    const parent = r.parent as HandleRecord
    const cap = parent.budget.maxConcurrent
    if (cap !== undefined && parent.activeChildren() >= cap) {
      r.queued = true
      parent.queue.push({ record: r, prompt })
      this.#trace.push(`${r.id}: queued (maxConcurrent ${cap} of ${parent.id})`)
      return
    }
    this.#start(r, prompt)
  }

  wait(h: Handle, opts: { timeoutMs?: number } = {}): Promise<TaskResult> {
    const r = this.#record(h)
    const settledNow = this.#settledResult(r)
    if (settledNow) return Promise.resolve(settledNow)
    return new Promise((resolve) => {
      let timer: unknown
      const waiter = (result: TaskResult) => {
        if (timer !== undefined) this.#clock.clearTimeout(timer)
        resolve(result)
      }
      r.waiters.push(waiter)
      if (opts.timeoutMs !== undefined) {
        timer = this.#clock.setTimeout(() => {
          r.waiters = r.waiters.filter((w) => w !== waiter)
          resolve(
            this.#result(r, {
              status: "timeout",
              text: `no result within ${opts.timeoutMs} ms`,
              isError: true,
            }),
          )
        }, opts.timeoutMs)
      }
    })
  }

  interrupt(h: Handle): void {
    const r = this.#record(h)
    if (r.queued) this.#dequeue(r)
    if (r.state === "running") r.controller?.abort(new AbortError(`${r.id} was interrupted`))
    else if (r.state === "suspended" && !r.inline) this.#cancelParked(r, "interrupted")
  }

  async close(h: Handle, opts: { force?: boolean } = {}): Promise<void> {
    const r = this.#record(h)
    if (r.state === "closed") return
    // Leaf-first: a parent outlives none of its children.
    for (const child of [...r.children].reverse()) await this.close(child.handle, opts)
    let reason: "closed" | "interrupted" = "closed"
    if (r.queued) this.#dequeue(r)
    if (r.state === "running" || r.inline) {
      if (!opts.force) await this.#settledWithin(r, this.#shutdownMs)
      if (r.state === "running" || r.inline) {
        reason = "interrupted"
        r.controller?.abort(new AbortError(`${r.id} was closed`))
        await r.settled
      }
    }
    if (r.state === "suspended") this.#cancelParked(r, "closed")
    if (r.def.onClose) await Promise.resolve(r.def.onClose(r.handle, reason)).catch(() => {})
    this.#transition(r, "closed")
    // Waiters get what a later `wait` gets: the last result, or `closed` if it never ran.
    const result = this.#settledResult(r) as TaskResult
    for (const w of r.waiters.splice(0)) w(result)
  }

  async resume(answer: Answer, resumeOpts?: { claim?: string }): Promise<void> {
    let target: HandleRecord | undefined
    for (const r of this.#parked.get(answer.id) ?? []) {
      if (!target || r.id.split("/").length > target.id.split("/").length) target = r
    }
    if (!target) throw new UnknownRequestError(answer.id, "no suspended handle holds it")
    // The deepest handle first; then each ancestor parked on the same request continues,
    // its halted `task` call reattaching to the child it already has.
    const cascade: HandleRecord[] = []
    for (let r: HandleRecord | undefined = target; r && r !== this.#rootRecord; r = r.parent) {
      if (r.state !== "suspended" || r.inline || r.pending?.id !== answer.id) break
      cascade.push(r)
    }
    for (const [i, r] of cascade.entries()) {
      const pending = haltedOn(r.pending as Request, cascade[i - 1])
      // Only the last save of the cascade consumes the claim.
      const claim = i === cascade.length - 1 ? resumeOpts?.claim : undefined
      this.#unpark(r)
      this.#transition(r, "idle")
      this.#transition(r, "running")
      await this.#execute(r, async (client, toolkit, signal) => {
        const recorded = await this.#alreadyApplied(r, answer.id)
        return recorded ?? this.#continueHalted(r, client, { toolkit, pending, answer, signal, claim })
      })
    }
  }

  // ---- inspection ----------------------------------------------------------------------

  handle(id: string): Handle | undefined {
    return this.#records.get(id)?.handle
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
      tokens: r.spend.tokens,
      inbox: r.inbox.length,
      children: r.children.map((c) => c.id),
    }
    if (r.state === "suspended" && r.pending) {
      view.pendingKind = r.pending.kind
      view.pending = r.pending
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
    return [...this.#trace]
  }

  transitions(h: Handle): string[] {
    return [...this.#record(h).transitions]
  }

  snapshot(): RuntimeSnapshot {
    return snapshotOf(this.#rootRecord, this.#trace, this.#namespace)
  }

  // ---- running handles -----------------------------------------------------------------

  /** @internal Used by the task tool. */
  spawnForTask(parent: HandleRecord, defName: string, taskKey: string | undefined): HandleRecord {
    return this.#record(this.spawn(parent.handle, defName, undefined, taskKey))
  }

  /** @internal */
  recordOf(h: Handle): HandleRecord {
    return this.#record(h)
  }

  /** @internal */
  note(line: string): void {
    this.#trace.push(line)
  }

  #start(r: HandleRecord, prompt: string | undefined): void {
    r.queued = false
    r.drained = r.inbox.splice(0)
    const block = renderInbox(r.drained, (from) => this.#trusted(r, from))
    const input = [block, prompt ?? ""].filter((part) => part !== "").join("\n\n")
    this.#transition(r, "running")
    void this.#execute(r, async (client, toolkit, signal) => {
      if (r.cancelled) {
        // A request cancelled while parked is declined first, so the transcript stays balanced.
        const cancelled = haltedOn(
          r.cancelled,
          r.children.find((c) => c.lastResult?.pending?.id === r.cancelled?.id),
        )
        r.cancelled = undefined
        const answer = { id: cancelled.id, ok: false, reason: "cancelled" }
        const run = await this.#continueHalted(r, client, { toolkit, pending: cancelled, answer, signal })
        if (run.status !== "done" || input === "") return run
      }
      return client.ask(input, { toolkit, id: this.#conversationId(r), signal })
    })
  }

  /** Continues a handle's halted turn with an answer, reading and saving its conversation. */
  async #continueHalted(
    r: HandleRecord,
    client: Client,
    opts: { toolkit: Toolkit; pending: Request; answer: Answer; signal: AbortSignal; claim?: string },
  ): Promise<RunResult> {
    // Core's stored continue: load → repair the halted turn → run → save, in one place.
    return client.continueRun({ ...opts, id: this.#conversationId(r) })
  }

  /**
   * The outcome an earlier attempt already saved for this handle, when its conversation no
   * longer waits on `requestId`: a process that died mid-cascade applied the answer here
   * before it could save the runtime. Taking it from the store keeps a redelivered answer
   * from running the turn twice. `undefined` when the store cannot tell or still waits.
   */
  async #alreadyApplied(r: HandleRecord, requestId: string): Promise<RunResult | undefined> {
    if (this.store.getPending === undefined) return undefined
    const id = this.#conversationId(r)
    const waiting = await this.store.getPending(id)
    if (waiting?.id === requestId) return undefined
    const messages = (await this.store.get(id)) ?? []
    this.#trace.push(`${r.id}: resume → RECOVERED from the store (the answer was applied before)`)
    return recordedRun(messages, waiting, r.def.model ?? this.#opts.llm?.model ?? "")
  }

  #conversationId(r: HandleRecord): string {
    return this.#namespace + r.id
  }

  /** Runs one unit of work on a running handle and settles it; never throws. */
  #execute(
    r: HandleRecord,
    work: (client: Client, toolkit: Toolkit, signal: AbortSignal) => Promise<RunResult>,
  ): Promise<void> {
    const controller = new AbortController()
    r.controller = controller
    const settled = (async () => {
      let result: TaskResult
      try {
        // Built per run, not cached: a parked handle then holds no client or tools in memory.
        const toolkit = await this.#toolkitFor(r)
        const run = await work(this.#clientFor(r), toolkit, controller.signal)
        result = this.#result(r, { status: run.status, text: run.text, isError: false })
        if (run.limit !== undefined) result.limit = run.limit
        if (run.status === "pending" && run.pending) {
          r.pending = withPath(run.pending, r.id)
          result.pending = r.pending
        } else r.pending = undefined
      } catch (error) {
        if (controller.signal.aborted) {
          r.inbox.unshift(...r.drained)
          result = this.#result(r, { status: "interrupted", text: "", isError: true })
        } else {
          const message = error instanceof Error ? error.message : String(error)
          result = this.#result(r, { status: "error", text: message, isError: true })
        }
        r.pending = undefined
      }
      r.drained = []
      r.controller = undefined
      r.lastResult = result
      if (r.state !== "closed") this.#transition(r, result.status === "pending" ? "suspended" : "idle")
      if (r.state === "suspended") this.#park(r)
      for (const w of r.waiters.splice(0)) w(result)
      this.#handOver(r.parent)
      if (r.rewake && r.state === "idle") {
        r.rewake = false
        this.wake(r.handle)
      }
    })()
    r.settled = settled
    return settled
  }

  /** A finished child frees its parent's slot for the next queued wake. */
  #handOver(parent: HandleRecord | undefined): void {
    if (!parent) return
    const cap = parent.budget.maxConcurrent
    while (parent.queue.length > 0 && (cap === undefined || parent.activeChildren() < cap)) {
      const next = parent.queue.shift() as { record: HandleRecord; prompt: string | undefined }
      if (next.record.state === "idle") this.#start(next.record, next.prompt)
      else next.record.queued = false
    }
  }

  #dequeue(r: HandleRecord): void {
    r.queued = false
    const queue = r.parent?.queue
    const index = queue?.findIndex((q) => q.record === r) ?? -1
    if (queue && index !== -1) queue.splice(index, 1)
  }

  #park(r: HandleRecord): void {
    const id = r.pending?.id
    if (id === undefined) return
    const holders = this.#parked.get(id)
    if (holders) holders.push(r)
    else this.#parked.set(id, [r])
  }

  #unpark(r: HandleRecord): void {
    const id = r.pending?.id
    const holders = id === undefined ? undefined : this.#parked.get(id)
    if (!holders || id === undefined) return
    const rest = holders.filter((h) => h !== r)
    if (rest.length > 0) this.#parked.set(id, rest)
    else this.#parked.delete(id)
  }

  #cancelParked(r: HandleRecord, status: "interrupted" | "closed"): void {
    this.#unpark(r)
    r.cancelled = r.pending
    r.pending = undefined
    r.lastResult = this.#result(r, { status, text: "", isError: true })
    if (status === "interrupted") this.#transition(r, "idle")
    for (const w of r.waiters.splice(0)) w(r.lastResult)
  }

  #settledResult(r: HandleRecord): TaskResult | undefined {
    if (r.state === "closed")
      return r.lastResult ?? this.#result(r, { status: "closed", text: "", isError: false })
    if (r.state === "suspended" && !r.inline) return r.lastResult
    if (r.state === "idle" && !r.queued && r.lastResult) return r.lastResult
    return undefined
  }

  async #settledWithin(r: HandleRecord, ms: number): Promise<void> {
    let timer: unknown
    await Promise.race([
      r.settled,
      new Promise<void>((resolve) => {
        timer = this.#clock.setTimeout(resolve, ms)
      }),
    ])
    this.#clock.clearTimeout(timer)
  }

  #clientFor(r: HandleRecord): Client {
    const { llm, fetch } = this.#opts
    const model = r.def.model ?? llm?.model
    if (!model) throw new ConfigError(`agent ${r.def.name} has no model: set def.model or llm.model`)
    const userMetric = r.def.onMetric ?? this.#opts.onMetric
    const gate = this.#turnGate
    return createClient({
      baseUrl: llm?.baseUrl ?? PLACEHOLDER_URL,
      style: llm?.style ?? "openai",
      apiKey: llm?.apiKey,
      fetch,
      model,
      systemPrompt: r.def.soul,
      // Budgets bound turns; the client's own ceiling only guards against runaway loops.
      maxTurns: 1_000,
      store: this.store,
      hooks: r.def.hooks ?? this.#opts.hooks,
      onMetric: (ev) => {
        this.#account(r, ev)
        userMetric?.(ev)
      },
      waitFor: this.#escalation(r),
      beforeTurn: () => reachedLimit(r.chain(), this.#clock.now()),
      llmGate: gate ? (call) => gate.run(call) : undefined,
    })
  }

  #toolkitFor(r: HandleRecord): Promise<Toolkit> {
    const tools = [...(r.def.tools ?? [])]
    if (r.def.team?.length) tools.push(createTaskTool(this, r, this.#opts.registry))
    return createToolkit({ extraTools: tools })
  }

  /** The nearest `waitFor` on the chain self → root answers inline; none ⇒ the run halts. */
  #escalation(r: HandleRecord): ((req: Request) => Promise<Answer>) | undefined {
    let owner: HandleRecord | undefined
    for (const x of r.chain()) {
      if (x.def.waitFor) {
        owner = x
        break
      }
    }
    const waitFor = owner?.def.waitFor
    if (!waitFor) return undefined
    return async (req) => {
      r.inline = true
      r.pending = withPath(req, r.id)
      this.#transition(r, "suspended")
      try {
        return await waitFor(r.pending)
      } finally {
        r.inline = false
        r.pending = undefined
        if (r.state === "suspended") this.#transition(r, "running")
      }
    }
  }

  /** Usage rolls up to every ancestor, so their budgets see the whole subtree's spend. */
  #account(r: HandleRecord, ev: MetricEvent): void {
    if (ev.event === "llm" && ev.status === "ok") {
      const tokens = ev.promptTokens + ev.completionTokens
      for (const x of r.chain()) {
        x.spend.turns++
        x.spend.tokens += tokens
      }
    } else if (ev.event === "tool" && ev.outcome !== "pending") {
      for (const x of r.chain()) x.spend.toolCalls++
    }
  }

  #trusted(r: HandleRecord, from: string | undefined): boolean {
    if (from === undefined || from === "host") return true
    for (const x of r.chain()) if (x.id === from) return true
    return false
  }

  #transition(r: HandleRecord, to: HandleState): void {
    const step = `${r.state}→${to}`
    r.state = to
    r.transitions.push(step)
    this.#trace.push(`${r.id}: ${step}`)
  }

  #result(r: HandleRecord, base: Pick<TaskResult, "status" | "text" | "isError">): TaskResult {
    // An explicit literal: results are kept per handle, and spread-then-add objects cost more.
    const { status, text, isError } = base
    return { status, text, isError, turns: r.spend.turns, totalTokens: r.spend.tokens }
  }

  #record(h: Handle): HandleRecord {
    const r = this.#records.get(h?.id)
    if (!r) throw new RuntimeError("unknown_agent", `no handle ${JSON.stringify(h?.id)} in this runtime`)
    return r
  }
}

/** @internal The runtime surface the task tool uses. */
export type TaskHost = Pick<
  AgentRuntime,
  "spawnForTask" | "recordOf" | "note" | "wake" | "wait" | "close" | "interrupt"
>

/** A run result rebuilt from a saved transcript (no turn was run now). */
function recordedRun(messages: Message[], pending: Request | undefined, model: string): RunResult {
  const result: RunResult = {
    status: pending ? "pending" : "done",
    text: lastAssistantText(messages),
    messages,
    toolCalls: [],
    toolCallCount: 0,
    turns: 0,
    model,
    usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
  }
  if (pending) result.pending = pending
  return result
}

/** The text of the last assistant message, in either endpoint style. */
function lastAssistantText(messages: Message[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { role: string; content: unknown }
    if (m.role !== "assistant") continue
    if (typeof m.content === "string") return m.content
    if (Array.isArray(m.content)) {
      return m.content
        .map((b: { type?: string; text?: string }) => (b.type === "text" ? (b.text ?? "") : ""))
        .join("")
    }
    return ""
  }
  return ""
}

/**
 * The request as handle `r`'s own transcript halted on it. An escalated request keeps the
 * leaf's stamps (`data.callId` names the leaf's call), so for a parent the halted call is
 * the `task` call that delegated to `child`: its task key.
 */
function haltedOn(request: Request, child: HandleRecord | undefined): Request {
  const callId = child?.taskKey
  if (callId === undefined || request.data?.callId === callId) return request
  return { ...request, data: { ...request.data, callId } }
}

/** The deepest suspended handle's id segments ride the request up the tree. */
function withPath(req: Request, id: string): Request {
  if (Array.isArray(req.data?.path)) return req
  return { ...req, data: { ...req.data, path: id.split("/") } }
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
