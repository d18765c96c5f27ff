/** How a save changes the pending request: its mode and, when set, its columns. */
export interface PendingChange {
  mode: "keep" | "clear" | "set"
  json: string | null
  id: string | null
  kind: string | null
  /**
   * With `set`: whether `pending_since` is kept or starts now (`sinceOnSet`), decided here
   * when the transcript this store last saw is current; `undefined` leaves it to the
   * backend, which decides with the same rule from the row it reads.
   */
  since?: "keep" | "now"
}

/**
 * @internal A conversation's bookkeeping row in the SQL backends, with times as epoch
 * milliseconds. Messages live in their own table, one row per message; claims live in the
 * request index, and `claimToken`/`claimRequestId` point at the one taken through here.
 */
export interface ConversationRow {
  revision: number
  messageCount: number
  /** The pending request as JSON. */
  pending: string | null
  pendingId: string | null
  pendingKind: string | null
  pendingSince: number | null
  consumedId: string | null
  claimToken: string | null
  claimRequestId: string | null
  createdAt: number
  updatedAt: number
}

/**
 * @internal The row after a successful save of `messageCount` messages at time `now`: one more
 * revision, the pending request changed as `pending` says, and the claim `claim` consumed.
 * The caller has already checked that the claim is held.
 */
export function nextConversationRow(
  previous: ConversationRow | undefined,
  messageCount: number,
  pending: PendingChange,
  claim: string | undefined,
  now: number,
): ConversationRow {
  const row: ConversationRow = previous
    ? { ...previous }
    : {
        revision: 0,
        messageCount: 0,
        pending: null,
        pendingId: null,
        pendingKind: null,
        pendingSince: null,
        consumedId: null,
        claimToken: null,
        claimRequestId: null,
        createdAt: now,
        updatedAt: now,
      }
  row.revision += 1
  row.messageCount = messageCount
  row.updatedAt = now
  if (claim !== undefined) {
    row.consumedId = row.claimRequestId
    row.claimToken = null
    row.claimRequestId = null
  }
  if (pending.mode === "clear") {
    row.pending = null
    row.pendingId = null
    row.pendingKind = null
    row.pendingSince = null
  } else if (pending.mode === "set") {
    const since = pending.since ?? sinceOnSet(row.pendingId, pending.id)
    row.pendingSince = since === "keep" && row.pendingSince !== null ? row.pendingSince : now
    row.pending = pending.json
    row.pendingId = pending.id
    row.pendingKind = pending.kind
  }
  return row
}

/**
 * @internal The one rule for `pending_since` when a save sets the pending request: saving the
 * same halt again keeps its age (an inbox or a sweep must not see it as younger); a new
 * request starts now. Every backend applies this decision; none restates the rule.
 */
export function sinceOnSet(previousId: string | null, nextId: string | null): "keep" | "now" {
  return previousId !== null && previousId === nextId ? "keep" : "now"
}
