import type { Request, SaveMeta } from "@toolnexus/core"
import type { ClaimState } from "./claim-rules.js"
import { encodeJson } from "./message-codec.js"

/**
 * @internal A conversation's bookkeeping row in the SQL backends, with times as epoch
 * milliseconds. Messages live in their own table, one row per message.
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
  /** The claimed answer as JSON. */
  claimAnswer: string | null
  claimExpiresAt: number | null
  createdAt: number
  updatedAt: number
}

/**
 * @internal The row after a successful save of `messageCount` messages at time `now`: one more
 * revision, the pending request applied as `meta` says, and a claim named by `meta.claim`
 * consumed. The caller has already checked that the claim is held.
 */
export function nextConversationRow(
  id: string,
  previous: ConversationRow | undefined,
  messageCount: number,
  meta: SaveMeta | undefined,
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
        claimAnswer: null,
        claimExpiresAt: null,
        createdAt: now,
        updatedAt: now,
      }
  row.revision += 1
  row.messageCount = messageCount
  row.updatedAt = now
  if (meta?.claim !== undefined) {
    row.consumedId = row.claimRequestId
    row.claimToken = null
    row.claimRequestId = null
    row.claimAnswer = null
    row.claimExpiresAt = null
  }
  if (meta?.pending === null) {
    row.pending = null
    row.pendingId = null
    row.pendingKind = null
    row.pendingSince = null
  } else if (meta?.pending !== undefined) {
    applyPending(id, row, meta.pending, now)
  }
  return row
}

function applyPending(id: string, row: ConversationRow, request: Request, now: number): void {
  // Saving the same halt again must not make it look younger to whoever sweeps old requests.
  if (row.pendingId !== request.id || row.pendingSince === null) row.pendingSince = now
  row.pending = encodeJson(request, () => `the pending request of conversation ${JSON.stringify(id)}`)
  row.pendingId = request.id
  row.pendingKind = request.kind
}

/** @internal The claim-relevant part of a row. */
export function claimStateOf(row: ConversationRow): ClaimState {
  return {
    pendingId: row.pendingId,
    consumedId: row.consumedId,
    claimToken: row.claimToken,
    claimRequestId: row.claimRequestId,
    claimExpiresAt: row.claimExpiresAt,
  }
}
