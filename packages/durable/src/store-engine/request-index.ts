import type { AnswerDecision, Request } from "@toolnexus/core"
import type { PendingEntry } from "../durable-store.js"
import type { CorruptRow } from "../errors.js"
import { decodeJson, isStoredRequest } from "./message-codec.js"

/** @internal Where a listing sends a row it cannot read; absent, the error is thrown. */
export type CorruptSink = ((row: CorruptRow, error: unknown) => void) | undefined

/** A request's row in a backend's request index; times are epoch milliseconds. */
export interface RequestRow {
  requestId: string
  /** `claimed` while a claim token is set; `applied` once a claimed save consumed it. */
  state: "open" | "claimed" | "applied" | "failed"
  /** The saved runtime holding it, and the deepest holder and path as that runtime recorded them. */
  runtimeKey: string | null
  conversationId: string | null
  /** JSON array of path segments. */
  path: string | null
  attempts: number
  claimToken: string | null
  /** The conversation the live claim was taken through: the one whose save consumes it. */
  claimConversationId: string | null
  /** The claimed answer as JSON: the decision, once applied. */
  claimAnswer: string | null
  claimExpiresAt: number | null
}

/** One conversation waiting on a request, with the request's index row if it has one. */
export interface HolderRow {
  conversationId: string
  requestId: string
  /** The pending request as JSON. */
  pending: string
  sinceMs: number
  request: Pick<RequestRow, "state" | "runtimeKey" | "conversationId" | "path" | "attempts"> | null
}

/**
 * @internal Folds the conversations waiting on requests into one entry per open request id:
 * the holder is the one the saved runtime recorded as deepest, else the first to have
 * saved it (a child settles before its parent), then the longest id (`a/b/c` under `a/b`);
 * `since` is the earliest. Applied or failed requests are left out. Ordered by `since`,
 * then request id.
 */
export function foldHolders(rows: readonly HolderRow[], onCorrupt?: CorruptSink): PendingEntry[] {
  const groups = new Map<string, HolderRow[]>()
  for (const row of rows) {
    const state = row.request?.state
    if (state === "applied" || state === "failed") continue
    const group = groups.get(row.requestId)
    if (group) group.push(row)
    else groups.set(row.requestId, [row])
  }
  const entries: { entry: PendingEntry; sinceMs: number }[] = []
  for (const [requestId, group] of groups) {
    try {
      entries.push(entryOf(requestId, group))
    } catch (error) {
      // One unreadable row must not hide every other request: skip it, leave it, report it.
      if (!onCorrupt) throw error
      const row = (error as { table?: string; key?: string }) ?? {}
      onCorrupt({ table: row.table ?? "tnx_requests", key: row.key ?? requestId }, error)
    }
  }
  entries.sort((a, b) =>
    a.sinceMs !== b.sinceMs ? a.sinceMs - b.sinceMs : compareIds(a.entry.request.id, b.entry.request.id),
  )
  return entries.map((e) => e.entry)
}

function entryOf(requestId: string, group: HolderRow[]): { entry: PendingEntry; sinceMs: number } {
  const holder = deepestHolder(group)
  const sinceMs = Math.min(...group.map((row) => row.sinceMs))
  const meta = holder.request
  const entry: PendingEntry = {
    request: decodeJson<Request>(
      holder.pending,
      () => "its pending request",
      { table: "tnx_conversations", key: holder.conversationId },
      isStoredRequest,
    ),
    conversationId: holder.conversationId,
    since: new Date(sinceMs).toISOString(),
    attempts: meta?.attempts ?? 0,
    state: meta?.state === "claimed" ? "claimed" : "open",
  }
  if (meta?.runtimeKey) entry.runtimeKey = meta.runtimeKey
  // The leaf stores its request as its tool made it; its parents' copies carry the path.
  const path = meta?.path
    ? decodeJson<string[]>(meta.path, () => "its path", { table: "tnx_requests", key: requestId }, isPath)
    : (pathOf(entry.request) ?? escalatedPath(group))
  if (path) {
    entry.path = path
    // The host saw the escalated request with its path; the inbox shows the same request.
    if (pathOf(entry.request) === undefined) entry.request = withPath(entry.request, path)
  }
  return { entry, sinceMs }
}

function isPath(value: unknown): boolean {
  return Array.isArray(value) && value.every((p) => typeof p === "string")
}

function deepestHolder(group: readonly HolderRow[]): HolderRow {
  const recorded = group[0]?.request?.conversationId
  const named = recorded ? group.find((row) => row.conversationId === recorded) : undefined
  if (named) return named
  let best = group[0] as HolderRow
  for (const row of group) {
    if (
      row.sinceMs < best.sinceMs ||
      (row.sinceMs === best.sinceMs && row.conversationId.length > best.conversationId.length)
    )
      best = row
  }
  return best
}

function escalatedPath(group: readonly HolderRow[]): string[] | undefined {
  for (const row of group) {
    if (!row.pending.includes('"path"')) continue
    const request = decodeJson<Request>(
      row.pending,
      () => "its pending request",
      { table: "tnx_conversations", key: row.conversationId },
      isStoredRequest,
    )
    const path = pathOf(request)
    if (path) return path
  }
  return undefined
}

function withPath(request: Request, path: string[]): Request {
  return { ...request, data: { ...request.data, path } }
}

function pathOf(request: Request): string[] | undefined {
  const path = request.data?.path
  return Array.isArray(path) && path.every((p) => typeof p === "string") ? path : undefined
}

/** @internal Code-unit order, the same on every backend (no locale collation). */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/**
 * @internal A page of {@link foldHolders}' entries: those after request id `after` (by the
 * listing's order; an `after` no longer listed continues by id among entries of the same
 * age or younger), at most `limit`.
 */
export function pageOf(
  entries: PendingEntry[],
  after: string | undefined,
  limit: number | undefined,
): PendingEntry[] {
  let start = 0
  if (after !== undefined) {
    const index = entries.findIndex((e) => e.request.id === after)
    start = index === -1 ? entries.findIndex((e) => compareIds(e.request.id, after) > 0) : index + 1
    if (start === -1) start = entries.length
  }
  return entries.slice(start, limit === undefined ? undefined : start + limit)
}

/** @internal The decision a stored answer made: `ok`, and `reason` when it has one. */
export function decisionOf(answerJson: string | null, requestId: string): AnswerDecision | undefined {
  if (answerJson === null) return undefined
  const answer = decodeJson<{ ok: boolean; reason?: unknown }>(
    answerJson,
    () => "its decision",
    { table: "tnx_requests", key: requestId },
    (value) => typeof value === "object" && value !== null,
  )
  const decision: AnswerDecision = { ok: answer.ok === true }
  if (typeof answer.reason === "string") decision.reason = answer.reason
  return decision
}
