import {
  AnswerConflictError,
  AnswerExpiredError,
  AnswerInvalidError,
  AnswerMismatchError,
  ConversationPendingError,
  ToolnexusError,
  UnknownRequestError,
} from "@toolnexus/core"
import { redactKeys } from "./error-text.js"
import type { Reply } from "./reply.js"

/** @internal A refusal before any run starts: status, code, message and extra fields of `error`. */
export class Refusal {
  readonly status: number
  readonly code: string
  readonly message: string
  readonly extra: Record<string, unknown>
  constructor(status: number, code: string, message: string, extra: Record<string, unknown> = {}) {
    this.status = status
    this.code = code
    this.message = redactKeys(message)
    this.extra = extra
  }

  /** The JSON reply `{error: {code, message, …}}`. */
  toReply(headers: Record<string, string> = {}): Reply {
    return {
      status: this.status,
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ error: { code: this.code, message: this.message, ...this.extra } }),
    }
  }
}

/** @internal A 400 `TNX_BAD_REQUEST`. */
export function badRequest(message: string): Refusal {
  return new Refusal(400, "TNX_BAD_REQUEST", message)
}

/** @internal A 409 `TNX_ANSWER_CONFLICT` carrying the first decision when it is known. */
export function conflict(
  requestId: string,
  message: string,
  decision?: { ok: boolean; reason?: string },
): Refusal {
  return new Refusal(409, "TNX_ANSWER_CONFLICT", message, {
    requestId,
    ...(decision !== undefined ? { decision } : {}),
  })
}

/**
 * @internal The refusal a request error thrown by a delivery stands for (a race lost after the
 * pre-checks: a second tab, an expiry), or `undefined` when it is a failure of the run itself.
 */
export function refusalOf(error: unknown): Refusal | undefined {
  if (!ToolnexusError.isInstance(error)) return undefined
  if (AnswerConflictError.isInstance(error)) return conflict(error.requestId, error.message, error.decision)
  if (UnknownRequestError.isInstance(error))
    return new Refusal(404, error.code, error.message, { requestId: error.requestId })
  if (AnswerExpiredError.isInstance(error))
    return new Refusal(410, error.code, error.message, {
      requestId: error.requestId,
      expiresAt: error.expiresAt,
    })
  if (AnswerInvalidError.isInstance(error) || AnswerMismatchError.isInstance(error))
    return new Refusal(400, "TNX_ANSWER_INVALID", error.message)
  if (ConversationPendingError.isInstance(error))
    return new Refusal(409, error.code, waitingMessage(error.request.prompt), { request: error.request })
  return undefined
}

/**
 * What a chat shows when a new message arrives while it waits on a request: a page puts the
 * message in front of its user as it is, so it speaks to them, not of server APIs.
 */
function waitingMessage(prompt: string): string {
  const shown = prompt.length > 200 ? `${prompt.slice(0, 200)}…` : prompt
  return `This chat is waiting for your answer to "${shown}". Answer it first, then send your message.`
}
