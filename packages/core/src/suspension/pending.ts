import { ConfigError } from "../errors.js"
import type { Request, ToolResult } from "../types.js"
import { drawEntropy, entropyPool } from "../internal/entropy.js"

/** What a tool passes to {@link pending}: a request without an id, or with its own. */
export interface PendingInput {
  /** What is asked for; open: `"approval"`, `"authorization"`, `"input"`, `"question"` or your own. */
  kind: string
  /** The text shown to whoever answers; also the result text the model sees while the call waits. */
  prompt: string
  /** The request's id, matching `^[A-Za-z0-9._:-]{1,200}$`; default a fresh random `pnd-…` id. */
  id?: string
  /** A link for whoever answers (where the user logs in, for `"authorization"`); the model sees it too. */
  url?: string
  /** Details for whoever answers (never credentials); copied to the request as it is. */
  data?: Record<string, unknown>
  /** RFC 3339 date-time with an offset after which an `ok: true` answer is refused; default never. */
  expiresAt?: string
}

/** The 64 characters of base64url: each random byte gives one of them (6 bits). */
const ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
/** Random characters per id: 22 × 6 = 132 bits, more than a v4 UUID's 122. */
const ID_RANDOM = 22
// "pnd-" and the random characters are written here and read out as one flat string: a
// concatenated one stays a chain of pieces for as long as a parked run keeps it.
const scratch = Buffer.from(`pnd-${"-".repeat(ID_RANDOM)}`, "latin1")

/** @internal A fresh, collision-resistant request id: `pnd-` and 22 base64url characters. */
export function newRequestId(): string {
  const at = drawEntropy(ID_RANDOM)
  for (let i = 0; i < ID_RANDOM; i++)
    scratch[4 + i] = ID_ALPHABET.charCodeAt((entropyPool[at + i] as number) & 63)
  return scratch.toString("latin1")
}

/**
 * Suspends the tool call: the returned result tells the loop that something outside the
 * process must happen first. With a `waitFor` the loop asks it and retries the tool with
 * `ctx.answer`; without one the run halts with `status: "pending"`.
 *
 * Suspension is control flow, not failure: do not catch it and report it as an error.
 *
 * @param req - the kind of request, the prompt shown to whoever answers, and optional url/data/expiry.
 * @returns a tool result carrying the request in `metadata.pending`.
 * @throws ConfigError when `id` is outside `^[A-Za-z0-9._:-]{1,200}$` or `expiresAt` is not an
 *   RFC 3339 date-time with an offset.
 * @example
 * run: (args, ctx) => ctx?.answer?.ok ? pay(args) : pending({ kind: "approval", prompt: `Pay ${args.amount}?` })
 */
export function pending(req: PendingInput): ToolResult {
  if (req.id !== undefined && !isRequestId(req.id)) {
    throw new ConfigError(
      `pending: id must match ${REQUEST_ID.source} (letters, digits, . _ : -; at most 200), got ${JSON.stringify(req.id)}`,
    )
  }
  if (req.expiresAt !== undefined && !isTimestampWithOffset(req.expiresAt)) {
    throw new ConfigError(
      `pending: expiresAt must be an RFC 3339 date-time with an offset (e.g. "2026-12-01T09:30:00Z"), got ${JSON.stringify(req.expiresAt)}`,
    )
  }
  const request: Request = { id: req.id ?? newRequestId(), kind: req.kind, prompt: req.prompt }
  if (req.url !== undefined) request.url = req.url
  if (req.data !== undefined) request.data = req.data
  if (req.expiresAt !== undefined) request.expiresAt = req.expiresAt
  const output = req.url === undefined ? req.prompt : `${req.prompt}\n${req.url}`
  return { output, isError: true, metadata: { pending: request } }
}

/**
 * Suspends the tool call until the user has logged in at `url` (kind `"authorization"`).
 * Credentials never travel in the answer: the tool reads them from where the login put them.
 *
 * @example
 * run: (args, ctx) => tokens.has(user) ? fetchMail(user) : authRequired(loginUrl, "Sign in to read your mail")
 */
export function authRequired(url: string, prompt = "Authorization required"): ToolResult {
  return pending({ kind: "authorization", prompt, url })
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,200}$/
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))$/

/** @internal True when `id` may name a request: it travels in URLs, keys and logs unescaped. */
export function isRequestId(id: unknown): id is string {
  return typeof id === "string" && REQUEST_ID.test(id)
}

/** @internal True for an RFC 3339 date-time with an explicit offset (`Z` or `±hh:mm`). */
export function isTimestampWithOffset(value: unknown): value is string {
  if (typeof value !== "string") return false
  const m = RFC3339.exec(value)
  if (!m) return false
  const [month, day, hour, minute, second] = [m[2], m[3], m[4], m[5], m[6]].map(Number) as number[]
  const daysInMonth = new Date(Date.UTC(Number(m[1]), month as number, 0)).getUTCDate()
  const offsetOk = m[9] === undefined || (Number(m[9]) <= 23 && Number(m[10]) <= 59)
  return (
    (month as number) >= 1 &&
    (month as number) <= 12 &&
    (day as number) >= 1 &&
    (day as number) <= daysInMonth &&
    (hour as number) <= 23 &&
    (minute as number) <= 59 &&
    (second as number) <= 60 &&
    offsetOk
  )
}

/** True when `value` has the shape of a {@link Request}. */
export function isRequest(value: unknown): value is Request {
  if (typeof value !== "object" || value === null) return false
  const r = value as Record<string, unknown>
  return typeof r.id === "string" && typeof r.kind === "string" && typeof r.prompt === "string"
}

/**
 * The request a tool result suspends on, or `undefined` when it is an ordinary result.
 * A result is a suspension iff `metadata.pending` is a {@link Request}.
 */
export function pendingOf(result: ToolResult): Request | undefined {
  const candidate = result.metadata?.pending
  return isRequest(candidate) ? candidate : undefined
}
