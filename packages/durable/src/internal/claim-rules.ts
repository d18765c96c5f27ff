import { randomUUID } from "node:crypto"
import { AnswerConflictError, UnknownRequestError } from "@toolnexus/core"

/** @internal What a backend stores about a conversation's pending request and its claim. */
export interface ClaimState {
  pendingId: string | null
  /** The request whose answer was last applied by a claimed save. */
  consumedId: string | null
  claimToken: string | null
  /** The request the claim was taken for; a claim for any other request is void. */
  claimRequestId: string | null
  /** Epoch milliseconds. */
  claimExpiresAt: number | null
}

/** @internal Why a claim is refused; each maps to one error. */
export type ClaimRefusal = "no-conversation" | "unknown-request" | "already-applied" | "busy"

/** @internal What `claimAnswer` does when it is not refused. */
export type ClaimGrant = "claim" | "takeover"

/**
 * @internal The claim rules shared by every backend. `state` is `undefined` for an unknown
 * conversation; `now` is epoch milliseconds on the clock the backend stores expiries with.
 */
export function decideClaim(
  state: ClaimState | undefined,
  answerId: string,
  now: number,
): ClaimGrant | ClaimRefusal {
  if (state === undefined) return "no-conversation"
  if (state.pendingId !== answerId) {
    return state.consumedId === answerId ? "already-applied" : "unknown-request"
  }
  if (!holdsLiveClaim(state)) return "claim"
  return (state.claimExpiresAt ?? 0) > now ? "busy" : "takeover"
}

/** @internal True when the stored claim belongs to the request still pending. */
export function holdsLiveClaim(state: ClaimState): boolean {
  // A save without a claim may replace the pending request and leaves claim columns alone,
  // so a claim left over from an earlier request must not block the new one.
  return state.claimToken !== null && state.claimRequestId === state.pendingId
}

/** @internal The error `claimAnswer` throws for a refusal. */
export function claimRefusalError(refusal: ClaimRefusal, conversationId: string, answerId: string): Error {
  const where = JSON.stringify(conversationId)
  switch (refusal) {
    case "no-conversation":
      return new UnknownRequestError(answerId, `conversation ${where} does not exist`)
    case "unknown-request":
      return new UnknownRequestError(answerId, `conversation ${where} is not waiting on it`)
    case "already-applied":
      return new AnswerConflictError(answerId, `it was already applied to conversation ${where}`)
    case "busy":
      return new AnswerConflictError(
        answerId,
        `it is being applied by another delivery to conversation ${where}`,
      )
  }
}

/** @internal The error a save fenced by a claim it no longer holds throws; nothing was written. */
export function lostClaimError(conversationId: string, requestId: string | null): AnswerConflictError {
  return new AnswerConflictError(
    requestId ?? "(none)",
    `the claim used to save conversation ${JSON.stringify(conversationId)} is no longer held ` +
      "(it was taken over, or never existed); nothing was written",
  )
}

/** @internal A fresh, unguessable claim token. */
export function newClaimToken(): string {
  return randomUUID()
}
