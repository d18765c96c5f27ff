import { randomUUID } from "node:crypto"
import { type AnswerDecision, type Request, isExpired } from "@toolnexus/core"
import {
  alreadyAppliedError,
  approvedTooLateError,
  beingAppliedError,
  failedTooOftenError,
  notWaitingError,
  runtimeHeldError,
} from "./claim-refusals.js"
import type { RequestRow } from "./request-index.js"

/** @internal What a backend stores about a conversation's pending request and its claim. */
export interface ClaimState {
  pendingId: string | null
  /** The request whose answer was last applied by a claimed save. */
  consumedId: string | null
}

/** Why a claim is refused; each maps to one error. */
export type ClaimRefusal =
  | "no-conversation"
  | "unknown-request"
  | "already-applied"
  | "busy"
  | "runtime-held"
  | "failed"
  | "expired"
  | "exhausted"

/** What `claimAnswer` does when it is not refused. */
export type ClaimGrant = "claim" | "takeover"

/**
 * @internal The claim rules shared by every backend (the Redis claim script mirrors them;
 * PostgreSQL's one-round-trip first claim, migration 3, grants only states this function
 * grants as "claim" and leaves the rest to it, pinned by claim-rules.test.ts).
 * Claims are per request id: `request` is the request's index row, whichever conversation
 * the claim comes through; `conversation` is `undefined` for an unknown conversation. `now`
 * is epoch milliseconds on the clock the backend stores expiries with.
 */
export function decideClaim(
  conversation: ClaimState | undefined,
  request:
    | (Pick<RequestRow, "state" | "runtimeKey" | "claimToken" | "claimExpiresAt" | "attempts"> & {
        /** Whether the conversation the claim was taken through still waits on the request. */
        claimHolderWaits: boolean
      })
    | undefined,
  answerId: string,
  runtimeKey: string | undefined,
  now: number,
  limits: { approvalExpired: boolean; maxAttempts: number },
): ClaimGrant | ClaimRefusal {
  if (request?.state === "applied") return "already-applied"
  if (request?.state === "failed") return "failed"
  // A claimed request is being applied through some conversation of its tree: any other
  // delivery conflicts, also through a conversation that already moved on. A claim whose
  // conversation was moved on by an unfenced save is void.
  const claimed = request?.state === "claimed" && request.claimHolderWaits
  if (conversation === undefined) return claimed ? "busy" : "no-conversation"
  if (conversation.pendingId !== answerId) {
    if (conversation.consumedId === answerId) return "already-applied"
    return claimed ? "busy" : "unknown-request"
  }
  if (request?.runtimeKey && request.runtimeKey !== runtimeKey) return "runtime-held"
  if (request?.claimToken == null || !request.claimHolderWaits) {
    // Only a first claim is judged against expiresAt: a takeover completes an answer that
    // was accepted in time.
    return limits.approvalExpired ? "expired" : "claim"
  }
  if ((request.claimExpiresAt ?? 0) > now) return "busy"
  return request.attempts >= limits.maxAttempts ? "exhausted" : "takeover"
}

/**
 * @internal Whether an approving answer to the stored pending request comes too late at
 * `now` (epoch ms on the backend's clock): core's `isExpired`, the one expiry rule, applied to
 * the stored JSON. A declining answer, or a request without `expiresAt`, is never late; an
 * `expiresAt` that does not parse is already past, never "no deadline".
 */
export function approvalExpired(
  pendingJson: string | null | undefined,
  approves: boolean,
  now: number,
): boolean {
  if (!approves || pendingJson == null) return false
  let pending: unknown
  try {
    pending = JSON.parse(pendingJson)
  } catch {
    return false // a corrupt pending row is refused by the claim's own decoding
  }
  return typeof pending === "object" && pending !== null && isExpired(pending as Request, now)
}

/** @internal The `expiresAt` a refused late approval names. */
export function expiresAtOf(pendingJson: string | null | undefined): string {
  try {
    return String((JSON.parse(pendingJson ?? "null") as { expiresAt?: unknown } | null)?.expiresAt)
  } catch {
    return "(unreadable)"
  }
}

/** @internal The error `claimAnswer` throws for a refusal, from the one table of refusals. */
export function claimRefusalError(
  refusal: ClaimRefusal,
  conversationId: string,
  answerId: string,
  held: { runtimeKey?: string | null; decision?: AnswerDecision; expiresAt?: string },
): Error {
  const where = JSON.stringify(conversationId)
  switch (refusal) {
    case "no-conversation":
      return notWaitingError(answerId, `conversation ${where} does not exist`)
    case "unknown-request":
      return notWaitingError(answerId, `conversation ${where} is not waiting on it`)
    case "already-applied":
      return alreadyAppliedError(answerId, held.decision)
    case "failed":
    case "exhausted":
      return failedTooOftenError(answerId, held.decision)
    case "expired":
      return approvedTooLateError(answerId, held.expiresAt)
    case "busy":
      return beingAppliedError(answerId, conversationId, held.decision)
    case "runtime-held":
      return runtimeHeldError(answerId, held.runtimeKey ?? "", conversationId)
  }
}

/** @internal A fresh, unguessable claim token. */
export function newClaimToken(): string {
  return randomUUID()
}

/**
 * @internal What a release prefixes the stored token with: the claim keeps its answer for the
 * takeover, but the released token matches nothing any more, so a heartbeat that ticks after
 * the release renews nothing and the holder's fenced save is refused. No real token has it.
 */
export const RELEASED_TOKEN_PREFIX = "released:"
