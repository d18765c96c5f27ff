import type { Request } from "@toolnexus/core"
import type { Spend } from "./budget.js"
import type { AgentDef, Budget, Handle, HandleState, InboxItem, TaskResult } from "./types.js"

/** @internal A wake waiting for a free slot under the parent's `maxConcurrent`. */
export interface QueuedWake {
  record: HandleRecord
  prompt: string | undefined
}

/** @internal Everything the runtime keeps about one handle. */
export class HandleRecord {
  readonly handle: Handle
  readonly def: AgentDef
  readonly parent: HandleRecord | undefined
  readonly children: HandleRecord[] = []
  /** Per-def counters for deterministic child ids. */
  readonly childCounters = new Map<string, number>()
  state: HandleState = "idle"
  budget: Budget
  spend: Spend = { turns: 0, tokens: 0, toolCalls: 0 }
  spawnedAt: number
  inbox: InboxItem[] = []
  /** Items taken by the running turn; put back if it is interrupted. */
  drained: InboxItem[] = []
  lastResult: TaskResult | undefined
  pending: Request | undefined
  /** A request cancelled by interrupt/close while parked; the next run declines it first. */
  cancelled: Request | undefined
  /** The tool-call id of the parent's `task` call that created this handle. */
  taskKey: string | undefined
  readonly transitions: string[] = []
  waiters: ((result: TaskResult) => void)[] = []
  controller: AbortController | undefined
  /** Suspended inline, waiting for a `waitFor` up the chain (still holds its slot). */
  inline = false
  queued = false
  /** A wake that arrived while running: run again once settled. */
  rewake = false
  /** Wakes of children waiting for a slot, FIFO. */
  readonly queue: QueuedWake[] = []
  /** Resolves when the current run settles. */
  settled: Promise<void> | undefined

  constructor(id: string, def: AgentDef, parent: HandleRecord | undefined, budget: Budget, now: number) {
    this.handle = Object.freeze({ id })
    this.def = def
    this.parent = parent
    this.budget = budget
    this.spawnedAt = now
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
}
