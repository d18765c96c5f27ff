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
  if (answerExpired(pending, answer, now)) {
    throw new AnswerExpiredError(pending.id, String(pending.expiresAt))
  }
}

/**
 * The one expiry judgement of an answer (§9): true when `answer` approves (`ok: true`) and
 * `request`'s `expiresAt` is past at `now` (or does not parse). A declining answer is never
 * late: an expired request can still be answered `ok: false`. Every place that refuses a late
 * approval — claims in every store, the engines' `decide`, a resume — asks this.
 *
 * @example
 * answerExpired({ id: "r", kind: "approval", prompt: "?", expiresAt: "2020-01-01T00:00:00Z" }, { ok: true }) // true
 */
export function answerExpired(request: Request, answer: Pick<Answer, "ok">, now = Date.now()): boolean {
  return answer.ok === true && isExpired(request, now)
}

/**
 * When `request` expires, in epoch ms: `undefined` without an `expiresAt`, and 0 (long past)
 * for one that does not parse — a deadline nobody can read must not mean "never". The one
 * reading of `expiresAt`: {@link isExpired} and the engines' timers use it.
 *
 * @example
 * expiryTime({ id: "pnd-1", kind: "approval", prompt: "?", expiresAt: "2026-01-01T00:00:00Z" }) // 1767225600000
 */
export function expiryTime(request: Request): number | undefined {
  if (request.expiresAt === undefined) return undefined
  const at = typeof request.expiresAt === "string" ? Date.parse(request.expiresAt) : Number.NaN
  return Number.isFinite(at) ? at : 0
}

/**
 * True when `request` has an `expiresAt` that is past at `now`, or one that does not parse
 * as a date (treated as past, the safe reading of an unreadable deadline).
 */
export function isExpired(request: Request, now = Date.now()): boolean {
  const at = expiryTime(request)
  return at !== undefined && now > at
}
