import { type Message, StoreError } from "@toolnexus/core"
import { CorruptDataError, type CorruptRow } from "../errors.js"
import { packMessage, unpackMessage } from "./compact-message.js"

/**
 * @internal The stored bodies of `messages[from..]`: compact where the message has a compact
 * shape (see compact-message.ts), else its JSON. Throws `StoreError` naming the conversation
 * and position of a message that has no JSON form.
 */
export function encodeMessages(id: string, messages: readonly Message[], from = 0): string[] {
  const bodies: string[] = []
  for (let i = from; i < messages.length; i++) {
    const message = messages[i] as Message
    bodies.push(
      packMessage(message) ?? encodeJson(message, () => `message ${i} of conversation ${JSON.stringify(id)}`),
    )
  }
  return bodies
}

/**
 * @internal Parses the stored body of message `index` of conversation `id`. A body that is not
 * JSON is a corrupt row: it fails loudly rather than yielding a shortened transcript.
 */
export function decodeMessage(id: string, index: number, body: unknown): Message {
  if (typeof body !== "string") corrupt(messageRow(id), `message ${index} is missing`)
  let message: unknown
  try {
    message = JSON.parse(body)
  } catch (cause) {
    corrupt(messageRow(id), `message ${index} is not valid JSON`, cause)
  }
  if (Array.isArray(message))
    return unpackMessage(message) ?? corrupt(messageRow(id), `message ${index} is not a compact message`)
  if (typeof message !== "object" || message === null)
    corrupt(messageRow(id), `message ${index} is not a message object`)
  return message as Message
}

// Corrupt data is thrown by functions of their own: reading sound rows (every resume) never
// compiles the messages.

/** Throws `CorruptDataError` on `row`, saying `what` is wrong with it (and the parse error as `cause`). */
function corrupt(row: CorruptRow, what: string, cause?: unknown): never {
  throw new CorruptDataError(row, what, cause === undefined ? undefined : { cause })
}

function messageRow(id: string): CorruptRow {
  return { table: "tnx_messages", key: id }
}

/** @internal How many leading entries two lists of stored bodies share. */
export function commonPrefixLength(stored: readonly string[], given: readonly string[]): number {
  const max = Math.min(stored.length, given.length)
  let i = 0
  while (i < max && stored[i] === given[i]) i++
  return i
}

/** @internal The UTF-8 size of bodies, which is what a write costs. */
export function byteLength(bodies: readonly string[]): number {
  let total = 0
  for (const body of bodies) total += Buffer.byteLength(body)
  return total
}

/**
 * @internal `JSON.stringify(value)`, failing with `StoreError` when the value has no JSON form
 * (`undefined`, a function, a cycle, a bigint). `what` is computed only on failure.
 */
export function encodeJson(value: unknown, what: () => string): string {
  let text: string | undefined
  try {
    text = JSON.stringify(value)
  } catch (cause) {
    throw new StoreError(`${what()} cannot be stored: it is not JSON-serialisable`, { cause })
  }
  if (text === undefined) throw new StoreError(`${what()} cannot be stored: it is not JSON-serialisable`)
  return text
}

/**
 * @internal Parses a stored JSON value of `row`, failing with `CorruptDataError` naming the
 * row and `what` when it is missing, not JSON, or refused by `check` (a shape test).
 */
export function decodeJson<T>(
  text: unknown,
  what: () => string,
  row: CorruptRow,
  check?: (value: unknown) => boolean,
): T {
  if (typeof text !== "string") corrupt(row, `${what()} is missing`)
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (cause) {
    corrupt(row, `${what()} is not valid JSON`, cause)
  }
  if (check && !check(value)) corrupt(row, `${what()} does not have the shape it must have`)
  return value as T
}

/** @internal Shape test of a stored request: an object with string `id`, `kind` and `prompt`. */
export function isStoredRequest(value: unknown): boolean {
  const r = value as Record<string, unknown> | null
  return (
    typeof r === "object" &&
    r !== null &&
    typeof r.id === "string" &&
    typeof r.kind === "string" &&
    typeof r.prompt === "string"
  )
}

/** @internal Shape test of a stored answer: an object with a string `id` and a boolean `ok`. */
export function isStoredAnswer(value: unknown): boolean {
  const a = value as Record<string, unknown> | null
  return typeof a === "object" && a !== null && typeof a.id === "string" && typeof a.ok === "boolean"
}

/** A stored message row of the SQL backends. */
export interface StoredMessageRow {
  seq: number | string
  body: unknown
}

/**
 * @internal Parses a stored transcript whose rows are ordered by `seq`. A gap, a count that
 * disagrees with the conversation row, or a body that is not JSON fails with `StoreError`
 * naming the conversation and position.
 */
export function decodeTranscript(
  id: string,
  expectedCount: number,
  rows: readonly StoredMessageRow[],
): Message[] {
  const messages: Message[] = []
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as StoredMessageRow
    if (Number(row.seq) !== i) corrupt(messageRow(id), `message ${i} is missing`)
    messages.push(decodeMessage(id, i, row.body))
  }
  if (messages.length !== expectedCount)
    corrupt(
      { table: "tnx_conversations", key: id },
      `it should hold ${expectedCount} messages, storage holds ${messages.length}`,
    )
  return messages
}

/**
 * @internal The stored bodies up to the first gap in `seq`, for a save to compare against: a
 * position after a gap can never be kept, so the save rewrites from there.
 */
export function contiguousBodies(rows: readonly StoredMessageRow[]): string[] {
  const bodies: string[] = []
  for (const row of rows) {
    if (Number(row.seq) !== bodies.length || typeof row.body !== "string") break
    bodies.push(row.body)
  }
  return bodies
}

/**
 * @internal The slow path of a save, shared by the SQL backends: how many stored messages
 * the given transcript keeps (the common prefix of the stored bodies up to any gap), and the
 * bodies to write after them.
 */
export function rewritePlan(
  stored: readonly StoredMessageRow[],
  given: readonly string[],
): { keep: number; bodies: string[]; deletes: boolean } {
  const keep = commonPrefixLength(contiguousBodies(stored), given)
  return { keep, bodies: given.slice(keep), deletes: stored.length > keep }
}
