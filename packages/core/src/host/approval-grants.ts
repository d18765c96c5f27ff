import type { PendingEntry } from "../suspension/pending-entry.js"
import type { Request } from "../types.js"

/**
 * How far a remembered approval reaches: `"conversation"` — later calls of the tool in the
 * conversation the approved call ran in; `"principal"` — later calls of the tool in any run
 * started for the same principal (`RunHost.start`'s `principal`).
 */
export type GrantScope = "conversation" | "principal"

/**
 * "Always allow this tool here": recorded when an approval answer carries
 * `data.remember: "conversation" | "principal"` (§19). Later calls it covers run without
 * asking; their result's `metadata.approval` says `{ decision: "granted", by: "grant", grantId,
 * grantedBy }`. A grant never overrides an explicit answer to a call.
 */
export interface ApprovalGrant {
  /** The grant's id (`grant-<request id>`): what `RunHost.revokeGrant` takes. */
  id: string
  /** The tool it allows. */
  tool: string
  /** How far it reaches. */
  scope: GrantScope
  /** With scope `"conversation"`: the conversation it covers. */
  conversationId?: string
  /** With scope `"principal"`: the principal it covers. */
  principal?: string
  /** The id of the approved request whose answer asked to remember: the decision it comes from. */
  grantedBy: string
  /** RFC 3339 time it was recorded. */
  createdAt: string
}

/** Options of `RunHost.listGrants`: every grant when empty, else those matching every field given. */
export interface GrantFilter {
  /** Only grants of this tool. */
  tool?: string
  /** Only grants of this scope. */
  scope?: GrantScope
  /** Only conversation grants of this conversation. */
  conversationId?: string
  /** Only principal grants of this principal. */
  principal?: string
}

/** What a grant lookup is asked: a call that would ask for approval. */
export interface GrantQuery {
  /** The tool's name. */
  tool: string
  /** The conversation the call runs in. */
  conversationId: string
}

/**
 * Where `RunHost.getDelivery` says a request's notifications stand (`notify` of
 * `createStoreHost`): the new-request notification and, with `warnBeforeMs`, the expiry warning.
 */
export interface DeliveryRecord {
  /** The request id. */
  requestId: string
  /** Attempts of the new-request notification so far (each call of `notify` counts). */
  attempts: number
  /** RFC 3339 time of the last attempt, if any. */
  lastAttemptAt?: string
  /** Why the last attempt failed (its message), while it has not succeeded. */
  lastError?: string
  /** RFC 3339 time the notification resolved; set once, never sent again after it. */
  deliveredAt?: string
  /** RFC 3339 time the next attempt is due (backoff), while it has not succeeded. */
  nextAttemptAt?: string
  /** The expiry warning (`warnBeforeMs` before `expiresAt`), once it was due. */
  expiring?: {
    /** RFC 3339 time the warning was raised (the `expiring` event). */
    warnedAt: string
    /** Attempts of its notification so far. */
    attempts: number
    /** RFC 3339 time its notification resolved, if it did. */
    deliveredAt?: string
    /** Why its last attempt failed, while it has not succeeded. */
    lastError?: string
  }
}

/** What `notify` is told besides the entry: which notification this is, and its attempt. */
export interface NotifyInfo {
  /** `"new"`: a request was parked; `"expiring"`: it expires within `warnBeforeMs`. */
  kind: "new" | "expiring"
  /** 1 for the first attempt of this notification, then 2, 3, … on retries. */
  attempt: number
}

/**
 * A host's warning that an open request expires soon (`warnBeforeMs` before its `expiresAt`),
 * raised once per request, whichever process sweeps first.
 */
export interface ExpiringEvent {
  /** Always `"expiring"`. */
  type: "expiring"
  /** The id of the run waiting on it. */
  runId: string
  /** The open request. */
  request: Request
  /** The request's entry as listed. */
  entry: PendingEntry
  /** The request's `expiresAt`. */
  expiresAt: string
}
