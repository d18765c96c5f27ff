import { AnswerInvalidError } from "../errors.js"
import type { Answer } from "../types.js"

/**
 * Checks that `value` is an answer of the wire shape: `{ id: non-empty string, ok: boolean,
 * data?: plain object, reason?: string }`. Every entry point that takes an answer calls it
 * first, so a malformed one changes nothing.
 *
 * @throws AnswerInvalidError naming the first problem found.
 * @example
 * assertAnswer(JSON.parse(body)) // then deliver it
 */
export function assertAnswer(value: unknown): asserts value is Answer {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new AnswerInvalidError(`the answer must be an object, got ${shown(value)}`)
  }
  const { id, ok, data, reason } = value as Record<string, unknown>
  if (typeof id !== "string" || id === "") {
    throw new AnswerInvalidError(`answer.id must be a non-empty string, got ${shown(id)}`)
  }
  if (typeof ok !== "boolean") throw new AnswerInvalidError(`answer.ok must be a boolean, got ${shown(ok)}`)
  if (data !== undefined && !isPlainObject(data)) {
    throw new AnswerInvalidError(`answer.data must be a plain object, got ${shown(data)}`)
  }
  if (reason !== undefined && typeof reason !== "string") {
    throw new AnswerInvalidError(`answer.reason must be a string, got ${shown(reason)}`)
  }
}

function isPlainObject(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

function shown(value: unknown): string {
  if (value === null) return "null"
  if (Array.isArray(value)) return "an array"
  if (typeof value === "string")
    return `string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`
  if (typeof value === "object")
    return `an object (${Object.getPrototypeOf(value)?.constructor?.name ?? "no prototype"})`
  return `${typeof value} ${String(value)}`
}
