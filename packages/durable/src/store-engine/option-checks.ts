import { ConfigError, type SaveMeta, assertAnswer } from "@toolnexus/core"
import type { CorruptRow } from "../errors.js"

/** The lease of a claim when `claimAnswer` is not given one. */
export const DEFAULT_LEASE_MS = 30_000

/** How many claims a request gets before it is `failed`, when not told otherwise. */
export const DEFAULT_MAX_ATTEMPTS = 3

/** The deadline of one store operation when not told otherwise. */
export const DEFAULT_OP_TIMEOUT_MS = 10_000

/** @internal `maxAttempts` as a positive integer; `ConfigError` otherwise. */
export function resolveMaxAttempts(maxAttempts: unknown): number {
  if (maxAttempts === undefined) return DEFAULT_MAX_ATTEMPTS
  if (typeof maxAttempts !== "number" || !Number.isInteger(maxAttempts) || maxAttempts < 1) {
    badOption("maxAttempts must be a positive integer", maxAttempts)
  }
  return maxAttempts
}

/** @internal The options every store shares, checked: `opTimeoutMs` and `onCorrupt`. */
export function resolveStoreOptions(
  options: unknown,
  store: string,
): { opTimeoutMs: number; onCorrupt: ((row: CorruptRow, error: unknown) => void) | undefined } {
  checkOptions(options, store)
  const { opTimeoutMs = DEFAULT_OP_TIMEOUT_MS, onCorrupt } = options
  if (typeof opTimeoutMs !== "number" || !Number.isFinite(opTimeoutMs) || opTimeoutMs <= 0) {
    badOption(`${store} option \`opTimeoutMs\` must be a positive number of milliseconds`, opTimeoutMs)
  }
  if (onCorrupt !== undefined && typeof onCorrupt !== "function") {
    badOption(`${store} option \`onCorrupt\` must be a function`, onCorrupt)
  }
  return {
    opTimeoutMs: Math.ceil(opTimeoutMs),
    onCorrupt: onCorrupt as ((row: CorruptRow, error: unknown) => void) | undefined,
  }
}

/** @internal Throws `ConfigError` unless `value` is a non-empty string; `what` names it. */
export function checkKey(value: unknown, what: string): asserts value is string {
  if (typeof value !== "string" || value.length === 0) {
    badOption(`${what} must be a non-empty string`, value)
  }
}

/** @internal Validates the arguments of `save` before anything is sent to storage. */
export function checkSave(
  id: unknown,
  messages: unknown,
  meta: unknown,
): asserts meta is SaveMeta | undefined {
  checkKey(id, "the conversation id")
  if (!Array.isArray(messages)) {
    badOption("messages must be an array", messages)
  }
  if (meta === undefined) return
  if (typeof meta !== "object" || meta === null) {
    badOption("the save meta must be an object", meta)
  }
  const { pending, claim } = meta as SaveMeta
  if (pending !== undefined && pending !== null) {
    if (typeof pending !== "object" || typeof pending.id !== "string" || typeof pending.kind !== "string") {
      throw new ConfigError("meta.pending must be a request with a string id and kind, or null")
    }
  }
  if (claim !== undefined) checkKey(claim, "meta.claim")
}

/**
 * @internal Validates an answer at an entry point: `AnswerInvalidError` unless of the wire shape.
 * Core's check itself, not a function calling it: one function fewer on a resume's first path.
 */
export { assertAnswer as checkAnswer }

/** @internal The lease in whole milliseconds; `ConfigError` unless positive and finite. */
export function resolveLeaseMs(leaseMs: unknown): number {
  if (leaseMs === undefined) return DEFAULT_LEASE_MS
  if (typeof leaseMs !== "number" || !Number.isFinite(leaseMs) || leaseMs <= 0) {
    badOption("leaseMs must be a positive number of milliseconds", leaseMs)
  }
  return Math.ceil(leaseMs)
}

/** @internal A list limit: `undefined` means no limit; otherwise a non-negative integer. */
export function resolveLimit(limit: unknown): number | undefined {
  if (limit === undefined) return undefined
  if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 0) {
    badOption("limit must be a non-negative integer", limit)
  }
  return limit
}

/** @internal An optional `kind` filter: `undefined` or a string. */
export function resolveKind(kind: unknown): string | undefined {
  if (kind === undefined || typeof kind === "string") return kind
  badOption("kind must be a string", kind)
}

/** @internal Throws `ConfigError` unless the options value is a plain object. */
export function checkOptions(options: unknown, store: string): asserts options is Record<string, unknown> {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    badOption(`${store} options must be an object`, options)
  }
}

/**
 * @internal Throws `ConfigError` unless exactly one of `keys` is set in `options`: a store is
 * given either something to connect with or an existing connection, never both.
 */
export function checkExactlyOne(
  options: Record<string, unknown>,
  keys: readonly string[],
  store: string,
): string {
  const present = keys.filter((key) => options[key] !== undefined)
  if (present.length !== 1) {
    const names = keys.map((key) => `\`${key}\``).join(" or ")
    const got = present.length === 0 ? "neither" : `${present.map((k) => `\`${k}\``).join(" and ")}`
    throw new ConfigError(`${store} needs exactly one of ${names}; got ${got}`)
  }
  return present[0] as string
}

/** @internal A short description of an unexpected value for error messages. */
export function describe(value: unknown): string {
  if (value === null) return "null"
  if (Array.isArray(value)) return "an array"
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)
  if (typeof value === "object") return "an object"
  return `${typeof value} ${String(value)}`
}

/**
 * @internal Throws `ConfigError` saying `what` an option must be and what was given instead.
 * Its own function: a valid option (every store a resume opens) never compiles the message.
 */
export function badOption(what: string, got: unknown): never {
  throw new ConfigError(`${what}, got ${describe(got)}`)
}
