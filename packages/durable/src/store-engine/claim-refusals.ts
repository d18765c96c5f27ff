import {
  AnswerConflictError,
  type AnswerDecision,
  AnswerExpiredError,
  UnknownRequestError,
} from "@toolnexus/core"
import type { DurableStore } from "../durable-store.js"
import { RuntimeHeldError } from "../errors.js"

/*
 * Every refusal of an answer, written once. The stores' claim primitive, the resume paths
 * and the routing of `deliverAnswer` / `retryFailed` all take their errors from here, so a
 * refusal reads the same whichever way the answer arrived.
 */

/** @internal The request's answer was applied already; `decision` is the first decision. */
export function alreadyAppliedError(requestId: string, decision?: AnswerDecision): AnswerConflictError {
  return new AnswerConflictError(requestId, "it was already applied", decision ? { decision } : {})
}

/** @internal The request is `failed` (its resumes failed `maxAttempts` times); only `retryFailed` moves it on. */
export function failedTooOftenError(requestId: string, decision?: AnswerDecision): AnswerConflictError {
  return new AnswerConflictError(
    requestId,
    "its resumes failed too often; the decision is kept and only retryFailed moves it on",
    decision ? { decision } : {},
  )
}

/**
 * @internal Another delivery holds a live claim on the request (taken through `conversationId`).
 * `decision` is the claimed answer's: the first decision, since a takeover completes that answer.
 */
export function beingAppliedError(
  requestId: string,
  conversationId: string,
  decision?: AnswerDecision,
): AnswerConflictError {
  return new AnswerConflictError(
    requestId,
    `it is being applied by another delivery (through ${JSON.stringify(conversationId)})`,
    decision ? { decision } : {},
  )
}

/** @internal An approving answer arrived after the request's `expiresAt`; nothing was claimed. */
export function approvedTooLateError(requestId: string, expiresAt: string | undefined): AnswerExpiredError {
  return new AnswerExpiredError(requestId, expiresAt ?? "(unknown)")
}

/** @internal A saved runtime's tree holds the request; a plain-conversation delivery claims nothing. */
export function runtimeHeldError(
  requestId: string,
  runtimeKey: string,
  conversationId: string,
): RuntimeHeldError {
  return new RuntimeHeldError(requestId, runtimeKey, conversationId)
}

/** @internal Nothing waits on the request where it was looked for (`where` says where, and what). */
export function notWaitingError(requestId: string, where: string): UnknownRequestError {
  return new UnknownRequestError(requestId, where)
}

/** @internal The error a save fenced by a claim it no longer holds throws; nothing was written. */
export function lostClaimError(conversationId: string, requestId: string | null): AnswerConflictError {
  return new AnswerConflictError(
    requestId ?? "(none)",
    `the claim used to save conversation ${JSON.stringify(conversationId)} is no longer held ` +
      "(it was taken over, or never existed); nothing was written",
  )
}

/**
 * @internal The refusal for an answer to a request no holder waits on any more: applied
 * already (with the first decision), failed too often, or unknown (`where` names where it
 * was looked for).
 */
export async function settledRequestError(
  store: DurableStore,
  requestId: string,
  where: string,
): Promise<AnswerConflictError | UnknownRequestError> {
  const decision = await store.getDecision(requestId)
  if (decision) return alreadyAppliedError(requestId, decision)
  if ((await store.listFailed()).some((failed) => failed.request.id === requestId)) {
    return failedTooOftenError(requestId)
  }
  return notWaitingError(requestId, where)
}

/**
 * @internal A decision is recorded on the request (a claim whose lease ran out keeps it) and
 * waits for a sweep or a retry to apply it; `decision` is that first decision.
 */
export function decisionWaitingError(requestId: string, decision: AnswerDecision): AnswerConflictError {
  return new AnswerConflictError(requestId, "a decision is recorded on it and waits to be applied", {
    decision,
  })
}

/** @internal A retry of a request with nothing to apply again: it is open, or being applied now. */
export function nothingToRetryError(requestId: string, state: "open" | "claimed"): AnswerConflictError {
  return new AnswerConflictError(
    requestId,
    state === "open"
      ? "no decision is recorded on it yet: approve or decline it"
      : "its decision is being applied now (the claim's lease has not run out)",
  )
}

/**
 * @internal Why request `requestId` cannot be retried when the store says it is not failed:
 * applied before (with its decision), open (answer it instead), or unknown.
 */
export async function notFailedError(
  store: DurableStore,
  requestId: string,
): Promise<AnswerConflictError | UnknownRequestError> {
  const decision = await store.getDecision(requestId)
  if (decision) return alreadyAppliedError(requestId, decision)
  const open = await store.findRequest(requestId)
  return notWaitingError(
    requestId,
    open ? `it is not failed (it is ${open.state}): deliver an answer to it instead` : "nothing waits on it",
  )
}
