import { type Answer, ConfigError, type SaveMeta } from "@toolnexus/core"

/** The lease of a claim when `claimAnswer` is not given one. */
export const DEFAULT_LEASE_MS = 30_000

/** @internal Throws `ConfigError` unless `value` is a non-empty string; `what` names it. */
export function checkKey(value: unknown, what: string): asserts value is string {
  if (typeof value !== "string" || value.length === 0) {
    throw new ConfigError(`${what} must be a non-empty string, got ${describe(value)}`)
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
    throw new ConfigError(`messages must be an array, got ${describe(messages)}`)
  }
  if (meta === undefined) return
  if (typeof meta !== "object" || meta === null) {
    throw new ConfigError(`the save meta must be an object, got ${describe(meta)}`)
  }
  const { pending, claim } = meta as SaveMeta
  if (pending !== undefined && pending !== null) {
    if (typeof pending !== "object" || typeof pending.id !== "string" || typeof pending.kind !== "string") {
      throw new ConfigError("meta.pending must be a request with a string id and kind, or null")
    }
  }
  if (claim !== undefined) checkKey(claim, "meta.claim")
}

/** @internal Validates an answer handed to `claimAnswer`. */
export function checkAnswer(answer: unknown): asserts answer is Answer {
  if (typeof answer !== "object" || answer === null) {
    throw new ConfigError(`the answer must be an object, got ${describe(answer)}`)
  }
  const { id, ok } = answer as Partial<Answer>
  checkKey(id, "answer.id")
  if (typeof ok !== "boolean") throw new ConfigError(`answer.ok must be a boolean, got ${describe(ok)}`)
}

/** @internal The lease in whole milliseconds; `ConfigError` unless positive and finite. */
export function resolveLeaseMs(leaseMs: unknown): number {
  if (leaseMs === undefined) return DEFAULT_LEASE_MS
  if (typeof leaseMs !== "number" || !Number.isFinite(leaseMs) || leaseMs <= 0) {
    throw new ConfigError(`leaseMs must be a positive number of milliseconds, got ${describe(leaseMs)}`)
  }
  return Math.ceil(leaseMs)
}

/** @internal A list limit: `undefined` means no limit; otherwise a non-negative integer. */
export function resolveLimit(limit: unknown): number | undefined {
  if (limit === undefined) return undefined
  if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 0) {
    throw new ConfigError(`limit must be a non-negative integer, got ${describe(limit)}`)
  }
  return limit
}

/** @internal An optional `kind` filter: `undefined` or a string. */
export function resolveKind(kind: unknown): string | undefined {
  if (kind === undefined || typeof kind === "string") return kind
  throw new ConfigError(`kind must be a string, got ${describe(kind)}`)
}

/** @internal Throws `ConfigError` unless the options value is a plain object. */
export function checkOptions(options: unknown, store: string): asserts options is Record<string, unknown> {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new ConfigError(`${store} options must be an object, got ${describe(options)}`)
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
