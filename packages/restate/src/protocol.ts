import {
  AnswerConflictError,
  type AnswerDecision,
  AnswerExpiredError,
  AnswerInvalidError,
  type PendingEntry,
  UnknownRequestError,
} from "@toolnexus/core"
import { namespaceOf as checkedNamespace } from "@toolnexus/core/engine"

const NAMESPACE = /^[a-zA-Z][a-zA-Z0-9_]{0,40}$/

/** @internal The checked namespace (a Restate service name; `<namespace>_requests` too). */
export function namespaceOf(namespace: string | undefined): string {
  return checkedNamespace(namespace, NAMESPACE)
}

/** @internal What the requests object keeps for an open request. */
export interface OpenRequest {
  runId: string
  entry: PendingEntry
}

/**
 * @internal Why `decide` refused, carried in a terminal error's message across the ingress, so
 * the connection rethrows the typed error (the first decision included).
 */
type Refusal =
  | { refused: "unknown"; id: string }
  | { refused: "conflict"; id: string; decision: AnswerDecision }
  | { refused: "expired"; id: string; expiresAt: string }
  | { refused: "invalid"; problem: string }

const MARK = "tnx-refusal:"

/**
 * @internal A refusal (one of `decide`'s typed errors) as a terminal error's message and HTTP
 * status, or undefined for any other error.
 */
export function refusalOf(error: unknown): { message: string; status: number } | undefined {
  let refusal: Refusal
  let status: number
  if (UnknownRequestError.isInstance(error)) {
    refusal = { refused: "unknown", id: error.requestId }
    status = 404
  } else if (AnswerConflictError.isInstance(error) && error.decision) {
    refusal = { refused: "conflict", id: error.requestId, decision: error.decision }
    status = 409
  } else if (AnswerExpiredError.isInstance(error)) {
    refusal = { refused: "expired", id: error.requestId, expiresAt: error.expiresAt }
    status = 410
  } else if (AnswerInvalidError.isInstance(error)) {
    refusal = { refused: "invalid", problem: error.problem }
    status = 400
  } else return undefined
  return { message: `${MARK}${JSON.stringify(refusal)}`, status }
}

/** @internal The typed error for a refusal found in an ingress error body, if any. */
export function refusalError(body: string): Error | undefined {
  let message = body
  try {
    const parsed = JSON.parse(body) as { message?: unknown }
    if (typeof parsed.message === "string") message = parsed.message
  } catch {
    // Not JSON: look for the mark in the text itself.
  }
  const at = message.indexOf(MARK)
  if (at < 0) return undefined
  const text = message.slice(at + MARK.length)
  let refusal: Refusal
  try {
    refusal = JSON.parse(text) as Refusal
  } catch {
    try {
      refusal = JSON.parse(text.slice(0, matchingBrace(text) + 1)) as Refusal
    } catch {
      return undefined
    }
  }
  switch (refusal.refused) {
    case "unknown":
      return new UnknownRequestError(refusal.id)
    case "conflict":
      return new AnswerConflictError(refusal.id, "it was already decided", { decision: refusal.decision })
    case "expired":
      return new AnswerExpiredError(refusal.id, refusal.expiresAt)
    case "invalid":
      return new AnswerInvalidError(refusal.problem)
  }
}

function matchingBrace(text: string): number {
  let depth = 0
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (c === "{") depth++
    else if (c === "}") {
      depth--
      if (depth === 0) return i
    }
  }
  return text.length - 1
}
