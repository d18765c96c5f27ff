import {
  AnswerConflictError,
  AnswerExpiredError,
  AnswerMismatchError,
  LLMHttpError,
  LLMResponseError,
  NetworkError,
  StoreError,
  ToolnexusError,
  UnknownRequestError,
} from "@toolnexus/core"
import type { ContentfulStatusCode } from "hono/utils/http-status"
import { friendlyError } from "./friendly-error.js"

/** An error the API reports with this status and code. */
export class HttpError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    message: string,
    /** Extra response headers, e.g. `retry-after`. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
    this.name = "HttpError"
  }
}

/**
 * The JSON error body of every failed call; some codes add fields (`answer_expired`: `requestId`,
 * `expiresAt`; `answer_conflict`: `requestId` and the first `decision`, when known).
 */
export interface ErrorBody {
  error: { code: string; message: string; [field: string]: unknown }
}

/** The JSON error body for a code and message, with the code's extra fields. */
export function errorBody(code: string, message: string, extra: Record<string, unknown> = {}): ErrorBody {
  return { error: { code, message, ...extra } }
}

/**
 * Maps an error to the status and code the API answers with; model failures get a one-line
 * message with the fix, and messages of unknown errors stay private. An approval after the
 * request's `expiresAt` is a 410 with `requestId` and `expiresAt`, the contract of every
 * toolnexus door (DESIGN §17).
 */
export function classify(
  error: unknown,
  modelUrl?: string,
): { status: ContentfulStatusCode; code: string; message: string; extra?: Record<string, unknown> } {
  if (error instanceof HttpError) return { status: error.status, code: error.code, message: error.message }
  const message = error instanceof Error ? error.message : String(error)
  if (UnknownRequestError.isInstance(error)) return { status: 404, code: "unknown_request", message }
  // The first decision, when known: a caller retrying an answer (after a 504 `run_pending`, say)
  // learns whether the decision that stands is its own.
  if (AnswerConflictError.isInstance(error))
    return {
      status: 409,
      code: "answer_conflict",
      message,
      ...(error.decision !== undefined
        ? { extra: { requestId: error.requestId, decision: error.decision } }
        : {}),
    }
  if (AnswerExpiredError.isInstance(error))
    return {
      status: 410,
      code: "answer_expired",
      message,
      extra: { requestId: error.requestId, expiresAt: error.expiresAt },
    }
  if (AnswerMismatchError.isInstance(error)) return { status: 422, code: "answer_mismatch", message }
  if (
    LLMHttpError.isInstance(error) ||
    LLMResponseError.isInstance(error) ||
    NetworkError.isInstance(error)
  ) {
    return { status: 502, code: "model_failed", message: friendlyError(error, modelUrl) }
  }
  if (StoreError.isInstance(error)) return { status: 503, code: "store_unavailable", message }
  // toolnexus errors never carry secrets, so their messages may be shown.
  if (ToolnexusError.isInstance(error)) return { status: 500, code: error.code.toLowerCase(), message }
  return { status: 500, code: "internal_error", message: "internal error; see the service log" }
}
