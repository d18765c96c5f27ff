import { AnswerInvalidError } from "../errors.js"
import type { Answer } from "../types.js"

/**
 * Checks that `value` is an answer of the wire shape: `{ id: non-empty string, ok: boolean,
 * data?: plain object, reason?: string }`, with `data` nesting at most
 * 1,000 levels. Every entry point that takes an answer calls it first, so a
 * malformed one changes nothing.
 *
 * @throws AnswerInvalidError naming the first problem found.
 * @example
 * assertAnswer(JSON.parse(body)) // then deliver it
 */
export function assertAnswer(value: unknown): asserts value is Answer {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    invalidAnswer("the answer must be an object", value)
  const { id, ok, data, reason } = value as Record<string, unknown>
  if (typeof id !== "string" || id === "") invalidAnswer("answer.id must be a non-empty string", id)
  if (typeof ok !== "boolean") invalidAnswer("answer.ok must be a boolean", ok)
  if (data !== undefined && !isPlainObject(data)) invalidAnswer("answer.data must be a plain object", data)
  if (data !== undefined && nestsDeeperThan(data, MAX_ANSWER_DEPTH)) {
    throw new AnswerInvalidError(`answer.data must nest at most ${MAX_ANSWER_DEPTH} levels deep`)
  }
  if (reason !== undefined && typeof reason !== "string")
    invalidAnswer("answer.reason must be a string", reason)
}

/** Throws `AnswerInvalidError` saying `what`, and what was given instead (a function: a valid answer never compiles it). */
function invalidAnswer(what: string, got: unknown): never {
  throw new AnswerInvalidError(`${what}, got ${shown(got)}`)
}

/**
 * How deep an answer's `data` may nest. Every store writes with `JSON.stringify`, which runs
 * out of stack at a few thousand levels: a deeper answer would fail only when written, after
 * its claim was taken. No real answer comes near this.
 */
const MAX_ANSWER_DEPTH = 1_000

/** Whether `value` nests objects and arrays deeper than `max` levels (walked without recursion). */
function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]]
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [item, depth] = next
    if (depth > max) return true
    for (const child of Array.isArray(item) ? item : Object.values(item as object))
      if (typeof child === "object" && child !== null) stack.push([child, depth + 1])
  }
  return false
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
