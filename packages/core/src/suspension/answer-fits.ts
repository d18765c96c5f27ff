import { AnswerExpiredError, AnswerMismatchError } from "../errors.js"
import type { Answer, Request } from "../types.js"

/**
 * Checks that `answer` may resume `pending`, before anything is changed. An `expiresAt` that
 * does not parse counts as already past: a deadline nobody can read must not mean "never".
 *
 * @throws AnswerMismatchError when the ids differ; AnswerExpiredError for `ok: true` after `expiresAt`.
 */
export function assertAnswerFits(pending: Request, answer: Answer, now = Date.now()): void {
  if (answer.id !== pending.id) throw new AnswerMismatchError(answer.id, pending.id)
  if (answer.ok && isExpired(pending, now)) {
    throw new AnswerExpiredError(pending.id, String(pending.expiresAt))
  }
}

/**
 * True when `request` has an `expiresAt` that is past at `now`, or one that does not parse
 * as a date (treated as past, the safe reading of an unreadable deadline).
 */
export function isExpired(request: Request, now = Date.now()): boolean {
  if (request.expiresAt === undefined) return false
  const expires = typeof request.expiresAt === "string" ? Date.parse(request.expiresAt) : Number.NaN
  return !Number.isFinite(expires) || now > expires
}
