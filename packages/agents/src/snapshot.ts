import { ConfigError, type Request, SchemaVersionError } from "@toolnexus/core"
import type { Spend } from "./budget.js"
import { HandleRecord } from "./handle-record.js"
import { applyTransition } from "./handle-state.js"
import type { AgentDef, Budget, HandleState, InboxItem, TaskResult } from "./types.js"

/** The snapshot format version this code writes. */
export const SNAPSHOT_VERSION = 1
const READABLE_VERSIONS = [1] as const

/** One handle in a {@link RuntimeSnapshot}. */
export interface HandleSnapshot {
  id: string
  def: string
  state: HandleState
  budget: Budget
  spend: Spend
  spawnedAt: number
  taskKey?: string
  pending?: Request
  cancelled?: Request
  lastResult?: TaskResult
  inbox: InboxItem[]
  counters: Record<string, number>
  transitions: string[]
}

/** The whole handle tree as plain JSON; with the store it is enough to resume elsewhere. */
export interface RuntimeSnapshot {
  schemaVersion: number
  /** Prefix of the handles' conversation ids in the store (`RuntimeOptions.namespace`). */
  namespace?: string
  /** Depth-first, parents before children; the root first. */
  handles: HandleSnapshot[]
  trace: string[]
}

/** @internal */
export function snapshotOf(root: HandleRecord, trace: readonly string[], namespace: string): RuntimeSnapshot {
  const handles: HandleSnapshot[] = []
  const visit = (r: HandleRecord) => {
    const h: HandleSnapshot = {
      id: r.id,
      def: r.def.name,
      state: r.state,
      budget: { ...r.budget },
      spend: { ...r.spend },
      spawnedAt: r.spawnedAt,
      // A turn in flight cannot be carried over; its drained items go back to the inbox.
      inbox: [...(r.turn?.drained ?? []), ...r.inbox],
      counters: Object.fromEntries(r.childCounters),
      transitions: [...r.transitions],
    }
    if (r.taskKey !== undefined) h.taskKey = r.taskKey
    if (r.pending !== undefined && !r.inline) h.pending = r.pending
    if (r.cancelled !== undefined) h.cancelled = r.cancelled
    if (r.lastResult !== undefined) h.lastResult = r.lastResult
    handles.push(h)
    for (const c of r.children) visit(c)
  }
  visit(root)
  const snapshot: RuntimeSnapshot = { schemaVersion: SNAPSHOT_VERSION, handles, trace: [...trace] }
  if (namespace) snapshot.namespace = namespace
  return JSON.parse(JSON.stringify(snapshot))
}

/** @internal Rebuilds the records of a snapshot; handles that were running come back idle. */
export function restoreRecords(
  snapshot: RuntimeSnapshot,
  registry: Record<string, AgentDef>,
  rootDef: AgentDef,
  now: number,
): { root: HandleRecord; records: HandleRecord[]; trace: string[] } {
  if (typeof snapshot !== "object" || snapshot === null)
    throw new ConfigError("restoreRuntime needs a snapshot object")
  if (!(READABLE_VERSIONS as readonly unknown[]).includes(snapshot.schemaVersion)) {
    throw new SchemaVersionError("the runtime snapshot", snapshot.schemaVersion, READABLE_VERSIONS)
  }
  const byId = new Map<string, HandleRecord>()
  const trace = [...snapshot.trace]
  for (const h of snapshot.handles) {
    const parentId = h.id.includes("/") ? h.id.slice(0, h.id.lastIndexOf("/")) : undefined
    const parent = parentId === undefined ? undefined : byId.get(parentId)
    if (parentId !== undefined && !parent)
      throw new ConfigError(`snapshot handle ${h.id} comes before its parent`)
    const def = parent ? registry[h.def] : rootDef
    if (!def)
      throw new ConfigError(
        `snapshot handle ${h.id} uses agent ${JSON.stringify(h.def)}, which the registry lacks`,
      )
    const r = new HandleRecord(h.id, def, parent, h.budget, now)
    r.spawnedAt = h.spawnedAt
    r.spend = { ...h.spend }
    r.inbox = [...h.inbox]
    r.taskKey = h.taskKey
    r.pending = h.pending
    r.cancelled = h.cancelled
    r.lastResult = h.lastResult
    r.transitions.push(...h.transitions)
    for (const [k, v] of Object.entries(h.counters)) r.childCounters.set(k, v)
    r.state = h.state
    if (h.state === "running") {
      applyTransition(r, "restoreInterrupted", trace)
      r.lastResult = {
        status: "interrupted",
        text: "",
        isError: true,
        turns: h.spend.turns,
        totalTokens: h.spend.tokens,
      }
    }
    parent?.children.push(r)
    byId.set(h.id, r)
  }
  const root = byId.get("root")
  if (!root) throw new ConfigError("the snapshot has no root handle")
  return { root, records: [...byId.values()], trace }
}
