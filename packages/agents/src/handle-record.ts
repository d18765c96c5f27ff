import type { Request } from "@toolnexus/core"
import type { Spend } from "./budget.js"
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
  readonly drained: InboxItem[]
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

/** @internal Everything the runtime keeps about one handle. */
export class HandleRecord {
  readonly handle: Handle
  readonly def: AgentDef
  readonly parent: HandleRecord | undefined
  readonly children: HandleRecord[] = []
  /** Per-def counters for deterministic child ids; created with the first child (most handles have none). */
  childCounters: Map<string, number> | undefined
  /** Changed only by `applyTransition` (handle-state.ts), and set once by a restore. */
  state: HandleState = "idle"
  readonly budget: Budget
  /** Counters only grow; see `account` in execution.ts. */
  readonly spend: Spend
  readonly spawnedAt: number
  readonly taskKey: string | undefined
  readonly inbox: InboxItem[] = []
  turn: ActiveTurn | undefined
  lastResult: TaskResult | undefined
  pending: Request | undefined
  /** A request cancelled by interrupt/close while parked; the next run declines it first. */
  cancelled: Request | undefined
  /** The trace context of the `task` call that created this handle, while tracing is on (not persisted). */
  traceParent: unknown
  /** Grown by `applyTransition` only (and filled once by a restore). */
  transitions: string[] = []
  readonly waiters: ((result: TaskResult) => void)[] = []
  /** Suspended inline, waiting for a `waitFor` up the chain (still holds its slot). */
  inline = false
  queued = false
  /** A wake that arrived while running: run again once settled. */
  rewake = false
  /** Wakes of children waiting for a slot, FIFO. */
  readonly queue: QueuedWake[] = []

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

  /** What `wait` gives at once: the result of a settled handle, or undefined while it works. */
  settledResult(): TaskResult | undefined {
    if (this.state === "closed") return this.lastResult ?? this.result("closed", "", false)
    if (this.state === "suspended" && !this.inline) return this.lastResult
    if (this.state === "idle" && !this.queued && this.lastResult) return this.lastResult
    return undefined
  }

  /** Hands `result` to every current waiter. */
  notify(result: TaskResult): void {
    for (const w of this.waiters.splice(0)) w(result)
  }
}
