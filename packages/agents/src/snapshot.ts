import { ConfigError, type Request, SchemaVersionError } from "@toolnexus/core"
import type { Spend } from "./budget.js"
import { HandleRecord } from "./handle-record.js"
import { applyTransition } from "./handle-state.js"
import { Trace } from "./trace.js"
import type { AgentDef, Budget, HandleState, InboxItem, TaskResult } from "./types.js"

/**
 * The snapshot format version this code writes. Version 3 (issue 19) always has a
 * `namespace` and the exact `idPrefix` of its conversation ids (`<namespace>/`). Version 2
 * (issue 8) counts a handle's own turns in `spend.turns` and `lastResult.turns` and adds the
 * subtree's `totalTurns` to both; version 1 counted the subtree in `turns`. Versions 1 and 2
 * prefixed conversation ids with the bare namespace (`""` without one), and restore so.
 * All three are read.
 */
export const SNAPSHOT_VERSION = 3
const READABLE_VERSIONS = [1, 2, 3] as const

/** One handle in a {@link RuntimeSnapshot} (the current version's shape). */
export interface HandleSnapshot {
  /** The handle's id, e.g. `root/lead.1`; its parent's entry comes before it. */
  id: string
  /** The name of its def, looked up in the registry again on restore (the root's is `"root"`). */
  def: string
  /** Its state when saved; a `running` handle is restored `idle`, with an `interrupted` result. */
  state: HandleState
  /** Its effective limits, as carved at spawn from its own and its parent's remainder. */
  budget: Budget
  /** What it had spent: its own turns, and its subtree's turns, tokens and tool calls. */
  spend: Spend
  /** When it was spawned, in ms on the runtime's clock: the origin of its `maxWallMs`. */
  spawnedAt: number
  /**
   * The tool-call id of the parent's call (`task`, or an agent tool) that spawned it: a replay
   * of that call reattaches by it. Absent for a handle the host spawned.
   */
  taskKey?: string
  /** The request it is parked on, with its `data.path`; absent unless parked (inline waits are not kept). */
  pending?: Request
  /** A parked request that `interrupt` or `close` cancelled; its next run declines it first. */
  cancelled?: Request
  /** The result of its last run, as `wait` gives it; absent if no run has settled. */
  lastResult?: TaskResult
  /** Items no turn has read yet, with those a turn in flight had taken put back in front. */
  inbox: InboxItem[]
  /** Children spawned so far per def name, so new child ids go on from them (`explore.3` after two). */
  counters: Record<string, number>
  /** Its state changes so far, oldest first, e.g. `["idle→running", "running→idle"]`. */
  transitions: string[]
}

/** The whole handle tree as plain JSON; with the store it is enough to resume elsewhere. */
export interface RuntimeSnapshot {
  /** The format version: {@link SNAPSHOT_VERSION} when this code wrote it; versions 1 to 3 are read. */
  schemaVersion: number
  /**
   * The runtime's namespace (`RuntimeOptions.namespace`, or the unique one it was given at
   * creation). Always present from version 3 on.
   */
  namespace?: string
  /**
   * Exactly what precedes a handle id in its conversation id in the store (version 3:
   * the namespace and a separator; older versions used the bare namespace).
   */
  idPrefix?: string
  /** Depth-first, parents before children; the root first. */
  handles: HandleSnapshot[]
  /** The runtime's trace lines when saved (`Runtime.trace()`); the restored runtime goes on from them. */
  trace: string[]
}

/** @internal */
export function snapshotOf(
  root: HandleRecord,
  trace: readonly string[],
  scope: ConversationScope,
): RuntimeSnapshot {
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
      counters: Object.fromEntries(r.childCounters ?? []),
      transitions: [...r.transitions],
    }
    if (r.taskKey !== undefined) h.taskKey = r.taskKey
    if (r.pending !== undefined && !r.inline) h.pending = r.shown(r.pending)
    if (r.cancelled !== undefined) h.cancelled = r.cancelled
    if (r.lastResult !== undefined) h.lastResult = r.shownResult(r.lastResult)
    handles.push(h)
    for (const c of r.children) visit(c)
  }
  visit(root)
  const snapshot: RuntimeSnapshot = {
    schemaVersion: SNAPSHOT_VERSION,
    namespace: scope.namespace,
    idPrefix: scope.idPrefix,
    handles,
    trace: [...trace],
  }
  return JSON.parse(JSON.stringify(snapshot))
}

/** @internal Where a runtime's conversations live in the store: conversation id = `idPrefix + handle id`. */
export interface ConversationScope {
  readonly namespace: string
  readonly idPrefix: string
}

/**
 * @internal The scope of a runtime: a snapshot's (as its version wrote it), else the given
 * namespace, else a unique one, so two runtimes sharing a store never share conversations.
 * A namespace is joined to handle ids with `/`, unless it already ends with `/` or `:`.
 *
 * @throws ConfigError for a namespace that is empty or not a string.
 */
export function scopeOf(snapshot: RuntimeSnapshot | undefined, namespace: unknown): ConversationScope {
  if (snapshot?.schemaVersion === 3) {
    const { namespace: ns, idPrefix } = snapshot
    if (typeof ns !== "string" || typeof idPrefix !== "string")
      throw new ConfigError("a version 3 runtime snapshot needs string `namespace` and `idPrefix` fields")
    return { namespace: ns, idPrefix }
  }
  // Versions 1 and 2: the bare namespace was the prefix. (Any other version is refused by
  // restoreRecords with a SchemaVersionError.)
  if (typeof snapshot === "object" && snapshot !== null)
    return { namespace: snapshot.namespace ?? "", idPrefix: snapshot.namespace ?? "" }
  if (namespace === undefined) {
    const ns = `rt-${globalThis.crypto.randomUUID()}`
    return { namespace: ns, idPrefix: `${ns}/` }
  }
  if (typeof namespace !== "string" || namespace === "")
    throw new ConfigError(`namespace must be a non-empty string, got ${JSON.stringify(namespace)}`)
  return { namespace, idPrefix: /[/:]$/.test(namespace) ? namespace : `${namespace}/` }
}

/** @internal Rebuilds the records of a snapshot; handles that were running come back idle. */
export function restoreRecords(
  snapshot: RuntimeSnapshot,
  registry: Record<string, AgentDef>,
  rootDef: AgentDef,
): { root: HandleRecord; records: HandleRecord[]; trace: Trace } {
  if (typeof snapshot !== "object" || snapshot === null)
    throw new ConfigError("restoreRuntime needs a snapshot object")
  if (!(READABLE_VERSIONS as readonly unknown[]).includes(snapshot.schemaVersion)) {
    throw new SchemaVersionError("the runtime snapshot", snapshot.schemaVersion, READABLE_VERSIONS)
  }
  if (!Array.isArray(snapshot.handles) || !Array.isArray(snapshot.trace))
    throw new ConfigError("the runtime snapshot needs `handles` and `trace` arrays")
  for (const h of snapshot.handles) checkHandle(h, snapshot.schemaVersion)
  const handles = snapshot.schemaVersion === 1 ? fromVersion1(snapshot.handles) : snapshot.handles
  const byId = new Map<string, HandleRecord>()
  const trace = new Trace()
  for (const line of snapshot.trace) trace.note(line)
  for (const h of handles) {
    const parentId = h.id.includes("/") ? h.id.slice(0, h.id.lastIndexOf("/")) : undefined
    const parent = parentId === undefined ? undefined : byId.get(parentId)
    if (parentId !== undefined && !parent)
      throw new ConfigError(`snapshot handle ${h.id} comes before its parent`)
    const def = parent ? registry[h.def] : rootDef
    if (!def)
      throw new ConfigError(
        `snapshot handle ${h.id} uses agent ${JSON.stringify(h.def)}, which the registry lacks`,
      )
    const r = new HandleRecord({
      id: h.id,
      def,
      parent,
      budget: h.budget,
      spawnedAt: h.spawnedAt,
      taskKey: h.taskKey,
      spend: h.spend,
    })
    for (const item of h.inbox) r.post(item)
    r.pending = h.pending
    r.cancelled = h.cancelled
    r.lastResult = h.lastResult
    // The handle's own array: a restored history is not one of the shared ones.
    if (h.transitions.length > 0) r.transitions = [...h.transitions]
    const counters = Object.entries(h.counters)
    if (counters.length > 0) r.childCounters = new Map(counters)
    r.state = h.state
    if (h.state === "running") {
      applyTransition(r, "restoreInterrupted", trace)
      r.lastResult = r.result("interrupted", "", true)
    }
    parent?.addChild(r)
    byId.set(h.id, r)
  }
  const root = byId.get("root")
  if (!root) throw new ConfigError("the snapshot has no root handle")
  return { root, records: [...byId.values()], trace }
}

const STATES: readonly unknown[] = ["idle", "running", "suspended", "closed"]

/** Refuses a handle entry that is not the shape its version wrote, naming the field. */
function checkHandle(h: HandleSnapshot, version: number): void {
  if (typeof h !== "object" || h === null || typeof h.id !== "string")
    throw new ConfigError("every snapshot handle needs a string `id`")
  if (!STATES.includes(h.state))
    throw new ConfigError(`snapshot handle ${h.id} has an unknown state ${JSON.stringify(h.state)}`)
  if (typeof h.spawnedAt !== "number" || typeof h.budget !== "object" || h.budget === null)
    throw new ConfigError(`snapshot handle ${h.id} needs a number \`spawnedAt\` and a \`budget\` object`)
  if (
    !Array.isArray(h.inbox) ||
    !Array.isArray(h.transitions) ||
    typeof h.counters !== "object" ||
    h.counters === null
  )
    throw new ConfigError(
      `snapshot handle ${h.id} needs \`inbox\` and \`transitions\` arrays and a \`counters\` object`,
    )
  const counts = version === 1 ? (["turns", "tokens", "toolCalls"] as const) : SPEND_FIELDS
  for (const field of counts) {
    const value = (h.spend as Partial<Spend> | undefined)?.[field]
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0)
      throw new ConfigError(
        `snapshot handle ${h.id} needs a non-negative number spend.${field}, got ${JSON.stringify(value)}`,
      )
  }
}

const SPEND_FIELDS = ["turns", "totalTurns", "tokens", "toolCalls"] as const

/**
 * Version 1 handles in the current shape. Their `spend.turns` counted the subtree; rolled-up
 * counts add up exactly, so a handle's own turns are its count minus its children's. A v1
 * `lastResult.turns` becomes its `totalTurns`, and its own turns at most the handle's own.
 * Budgets are kept as saved (a v1 child's `maxTurns` was carved from its parent's remainder).
 */
function fromVersion1(handles: readonly HandleSnapshot[]): HandleSnapshot[] {
  const childTurns = new Map<string, number>()
  for (const h of handles) {
    const parentId = h.id.includes("/") ? h.id.slice(0, h.id.lastIndexOf("/")) : undefined
    if (parentId !== undefined) childTurns.set(parentId, (childTurns.get(parentId) ?? 0) + h.spend.turns)
  }
  return handles.map((h) => {
    const totalTurns = h.spend.turns
    const turns = Math.max(0, totalTurns - (childTurns.get(h.id) ?? 0))
    const upgraded: HandleSnapshot = { ...h, spend: { ...h.spend, turns, totalTurns } }
    if (h.lastResult) {
      const total = h.lastResult.turns
      upgraded.lastResult = { ...h.lastResult, turns: Math.min(total, turns), totalTurns: total }
    }
    return upgraded
  })
}
