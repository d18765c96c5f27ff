import {
  AnswerConflictError,
  type AnswerDecision,
  AnswerExpiredError,
  AnswerInvalidError,
  ConversationPendingError,
  EngineRunError,
  HostUnsupportedError,
  type Message,
  type PendingEntry,
  type Request,
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
  /** The run (the conversation) waiting on it. */
  runId: string
  entry: PendingEntry
  /** The workflow that waits (a later turn's `<run id>~<turn>`); absent: the run id. */
  workflowId?: string
}

/** @internal What the runs object keeps of a run: its agent, its current turn and how it stands. */
export interface RunState {
  agent: string
  /** The current turn, from 1: its workflow is `turnWorkflowId(run id, turn)`. */
  turn: number
  /** Set by the turn's workflow once it runs: a runtime tree takes no further turns. */
  kind?: "client" | "runtime"
  /** `running` from the turn's start until its workflow ended (`done`) or failed. */
  state: "running" | "done" | "failed"
  /** The request the turn's workflow waits on, if any. */
  waitingOn?: Request | null
}

/** @internal What a turn's workflow reports to the runs object. */
export interface RunUpdate {
  turn: number
  kind?: "client" | "runtime"
  state?: "done" | "failed"
  waitingOn?: Request | null
  transcript?: Message[]
  /** The conversation of a turn waiting on a request (cleared when the turn ends). */
  parked?: Message[] | null
}

/**
 * @internal Why a handler refused, returned as its response (never thrown: a thrown terminal
 * error is logged by the SDK as a failure, with a stack), so the connection throws the typed
 * error (the first decision included).
 */
export type Refusal =
  | { refused: "unknown"; id: string }
  | { refused: "conflict"; id: string; decision: AnswerDecision }
  | { refused: "expired"; id: string; expiresAt: string }
  | { refused: "invalid"; problem: string }
  | { refused: "pending"; id: string; request: Request }
  | { refused: "run"; id: string }
  | { refused: "unsupported"; operation: string; why: string }

/** @internal A handler's refusal, as it crosses the ingress. */
export interface Refused {
  refusal: Refusal
}

/** @internal A refusal for one of `decide`'s typed errors, or undefined for any other error. */
export function refusalOf(error: unknown): Refusal | undefined {
  if (UnknownRequestError.isInstance(error)) return { refused: "unknown", id: error.requestId }
  if (AnswerConflictError.isInstance(error) && error.decision)
    return { refused: "conflict", id: error.requestId, decision: error.decision }
  if (AnswerExpiredError.isInstance(error))
    return { refused: "expired", id: error.requestId, expiresAt: error.expiresAt }
  if (AnswerInvalidError.isInstance(error)) return { refused: "invalid", problem: error.problem }
  return undefined
}

/** @internal True when a handler's response is a refusal. */
export function isRefused(value: unknown): value is Refused {
  return typeof value === "object" && value !== null && "refusal" in value
}

/** @internal The typed error a refusal stands for. */
export function refusalError(refusal: Refusal): Error {
  switch (refusal.refused) {
    case "unknown":
      return new UnknownRequestError(refusal.id)
    case "conflict":
      return new AnswerConflictError(refusal.id, "it was already decided", { decision: refusal.decision })
    case "expired":
      return new AnswerExpiredError(refusal.id, refusal.expiresAt)
    case "invalid":
      return new AnswerInvalidError(refusal.problem)
    case "pending":
      return new ConversationPendingError(refusal.id, refusal.request)
    case "run":
      return new EngineRunError(refusal.id, "is not known to the engine (never started)")
    case "unsupported":
      return new HostUnsupportedError("connectRestate", refusal.operation, refusal.why)
  }
}
