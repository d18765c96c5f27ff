import {
  type AnswerDecision,
  AnswerConflictError,
  AnswerExpiredError,
  AnswerInvalidError,
  ConfigError,
  type PendingEntry,
  type Request,
  UnknownRequestError,
} from "@toolnexus/core"

/** @internal The default namespace: workflow `toolnexus`, object `toolnexus_requests`. */
export const DEFAULT_NAMESPACE = "toolnexus"

const NAMESPACE = /^[a-zA-Z][a-zA-Z0-9_]{0,40}$/
const RUN_ID = /^[A-Za-z0-9._:-]{1,200}$/

/** @internal The checked namespace. */
export function namespaceOf(namespace: string | undefined): string {
  const ns = namespace ?? DEFAULT_NAMESPACE
  if (!NAMESPACE.test(ns))
    throw new ConfigError(`namespace must match ${NAMESPACE}, got ${JSON.stringify(ns)}`)
  return ns
}

/** @internal The checked run id. */
export function checkRunId(runId: string): string {
  if (typeof runId !== "string" || !RUN_ID.test(runId))
    throw new ConfigError(`run id must match ${RUN_ID}, got ${JSON.stringify(runId)}`)
  return runId
}

/** @internal The workflow's input. */
export interface RunInput {
  agent: string
  prompt: string
}

/** @internal What the requests object keeps for an open request. */
export interface OpenRequest {
  runId: string
  entry: PendingEntry
}

/** @internal What `decide` returns once a decision is recorded. */
export interface Decided {
  runId: string
  request: Request
  decision: AnswerDecision
}

/**
 * @internal Why `decide` refused, carried in a terminal error's message across the ingress, so
 * the connection rethrows the typed error (the first decision included).
 */
export type Refusal =
  | { refused: "unknown"; id: string }
  | { refused: "conflict"; id: string; decision: AnswerDecision }
  | { refused: "expired"; id: string; expiresAt: string }
  | { refused: "invalid"; problem: string }

const MARK = "tnx-refusal:"

/** @internal A refusal as a terminal error's message. */
export function refusalMessage(refusal: Refusal): string {
  return `${MARK}${JSON.stringify(refusal)}`
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
