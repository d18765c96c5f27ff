import type { Request } from "@toolnexus/core"
import type { Spend } from "./budget.js"
import { withPath } from "./request-path.js"
import { NO_STEPS } from "./transition-history.js"
import type { AgentDef, Budget, Handle, HandleState, InboxItem, TaskResult } from "./types.js"

/** @internal A wake waiting for a free slot under the parent's `maxConcurrent`. */
export interface QueuedWake {
  record: HandleRecord
  prompt: string | undefined
}

/** @internal The turn a running handle is in; gone once it has settled. */
export interface ActiveTurn {
  readonly controller: AbortController
  /** Items taken from the inbox for this turn; put back if it is interrupted. */
  readonly drained: readonly InboxItem[]
  /** Resolves when the turn has settled (never rejects). */
  settled: Promise<void>
}

/** @internal What a handle is created with (at spawn, or from a snapshot). */
export interface HandleRecordInit {
  id: string
  def: AgentDef
  parent: HandleRecord | undefined
  budget: Budget
  spawnedAt: number
  /** The tool-call id of the parent's `task` call that created this handle. */
  taskKey?: string
  spend?: Spend
}

/** The empty list the lazily created ones read as (shared, so frozen). */
const NONE: readonly never[] = Object.freeze([])

/**
 * @internal Everything the runtime keeps about one handle. Its lists (children, inbox,
 * waiters, queued wakes) are created with their first item: most handles never have some of
 * them, and an empty array is 32 B per parked handle.
 */
export class HandleRecord {
  readonly handle: Handle
  readonly def: AgentDef
  readonly parent: HandleRecord | undefined
  #children: HandleRecord[] | undefined
  /** Per-def counters for deterministic child ids; created with the first child (most handles have none). */
  childCounters: Map<string, number> | undefined
  /** Changed only by `applyTransition` (handle-state.ts), and set once by a restore. */
  state: HandleState = "idle"
  readonly budget: Budget
  /** Counters only grow; see `account` in execution.ts. */
  readonly spend: Spend
  /** Under an executor, set once from the journal by the handle's first run (wall time survives replay). */
  spawnedAt: number
  readonly taskKey: string | undefined
  #inbox: InboxItem[] | undefined
  turn: ActiveTurn | undefined
  /** The last result; a parked one's `pending` is kept as {@link pending} is. */
  lastResult: TaskResult | undefined
  /**
   * The request the handle is suspended on. A parked handle keeps it as its run returned it,
   * the same object its conversation store holds; the host sees it with `data.path`
   * ({@link shown}), built when asked: kept, it was a second copy per parked handle (≈ 200 B).
   */
  pending: Request | undefined
  /** A request cancelled by interrupt/close while parked; the next run declines it first. */
  cancelled: Request | undefined
  /** The trace context of the `task` call that created this handle, while tracing is on (not persisted). */
  traceParent: unknown
  /**
   * Set by `applyTransition` only (and once by a restore). A short history is shared between
   * handles and frozen; see handle-state.ts.
   */
  transitions: readonly string[] = NO_STEPS
  #waiters: ((result: TaskResult) => void)[] | undefined
  /** Suspended inline, waiting for a `waitFor` up the chain (still holds its slot). */
  inline = false
  queued = false
  /** A wake that arrived while running: run again once settled. */
  rewake = false
  /** Wakes of children waiting for a slot, FIFO. */
  #queue: QueuedWake[] | undefined

  constructor(init: HandleRecordInit) {
    this.handle = Object.freeze({ id: init.id })
    this.def = init.def
    this.parent = init.parent
    this.budget = init.budget
    this.spawnedAt = init.spawnedAt
    this.taskKey = init.taskKey
    this.spend = init.spend ? { ...init.spend } : { turns: 0, totalTurns: 0, tokens: 0, toolCalls: 0 }
  }

  get id(): string {
    return this.handle.id
  }

  get children(): readonly HandleRecord[] {
    return this.#children ?? NONE
  }

  addChild(child: HandleRecord): void {
    if (this.#children) this.#children.push(child)
    else this.#children = [child]
  }

  /** Items posted since the last turn took them. */
  get inbox(): readonly InboxItem[] {
    return this.#inbox ?? NONE
  }

  post(item: InboxItem): void {
    if (this.#inbox) this.#inbox.push(item)
    else this.#inbox = [item]
  }

  /** Takes every item out of the inbox, for a turn. */
  drainInbox(): readonly InboxItem[] {
    const items = this.#inbox ?? NONE
    this.#inbox = undefined
    return items
  }

  /** Puts a turn's items back in front of any posted since. */
  putBack(items: readonly InboxItem[]): void {
    if (items.length > 0) this.#inbox = this.#inbox ? [...items, ...this.#inbox] : [...items]
  }

  /** Wakes of this handle's children waiting for a slot, FIFO. */
  get queue(): readonly QueuedWake[] {
    return this.#queue ?? NONE
  }

  enqueue(wake: QueuedWake): void {
    if (this.#queue) this.#queue.push(wake)
    else this.#queue = [wake]
  }

  /** The oldest queued wake, taken out of the queue. */
  nextQueued(): QueuedWake | undefined {
    return this.#queue?.shift()
  }

  /** Takes `child`'s wake out of the queue, if it is there. */
  unqueue(child: HandleRecord): void {
    const index = this.#queue?.findIndex((q) => q.record === child) ?? -1
    if (index !== -1) this.#queue?.splice(index, 1)
  }

  addWaiter(waiter: (result: TaskResult) => void): void {
    if (this.#waiters) this.#waiters.push(waiter)
    else this.#waiters = [waiter]
  }

  removeWaiter(waiter: (result: TaskResult) => void): void {
    const index = this.#waiters?.indexOf(waiter) ?? -1
    if (index !== -1) this.#waiters?.splice(index, 1)
  }

  /** Self, then each ancestor up to (and including) the root. */
  *chain(): Generator<HandleRecord> {
    for (let r: HandleRecord | undefined = this; r; r = r.parent) yield r
  }

  /** Children currently holding a `maxConcurrent` slot. */
  activeChildren(): number {
    let n = 0
    for (const c of this.children) if (c.state === "running" || (c.state === "suspended" && c.inline)) n++
    return n
  }

  /** A result of this handle with its current usage. */
  result(status: TaskResult["status"], text: string, isError: boolean): TaskResult {
    // An explicit literal: results are kept per handle, and spread-then-add objects cost more.
    const { turns, totalTurns, tokens } = this.spend
    return { status, text, isError, turns, totalTurns, totalTokens: tokens }
  }

  /**
   * The result of a turn that halted on `pending`. One literal: `pending` added afterwards
   * would put it in a properties array of its own (about 40 B per parked handle).
   */
  pendingResult(text: string, pending: Request): TaskResult {
    const { turns, totalTurns, tokens } = this.spend
    return { status: "pending", text, isError: false, turns, totalTurns, totalTokens: tokens, pending }
  }

  /** `request` as the host sees it: with this handle's `data.path` (or the deeper one it has). */
  shown(request: Request): Request {
    return withPath(request, this.id)
  }

  /** `result` as the host sees it: its `pending`, if any, {@link shown}. */
  shownResult(result: TaskResult): TaskResult {
    const pending = result.pending
    if (pending === undefined) return result
    const shown = this.shown(pending)
    return shown === pending ? result : { ...result, pending: shown }
  }

  /** What `wait` gives at once: the result of a settled handle, or undefined while it works. */
  settledResult(): TaskResult | undefined {
    const last = this.lastResult
    if (this.state === "closed") return last ? this.shownResult(last) : this.result("closed", "", false)
    if (this.state === "suspended" && !this.inline) return last && this.shownResult(last)
    if (this.state === "idle" && !this.queued && last) return this.shownResult(last)
    return undefined
  }

  /** Hands `result`, as the host sees it, to every current waiter. */
  notify(result: TaskResult): void {
    const waiters = this.#waiters
    this.#waiters = undefined
    if (!waiters) return
    const shown = this.shownResult(result)
    for (const w of waiters) w(shown)
  }
}
