import type { Request } from "./types.js"

const MARKER = Symbol.for("toolnexus.error")

/** Stable error codes; each is documented in the core README. */
export type ToolnexusErrorCode =
  | "TNX_CONFIG"
  | "TNX_LLM_HTTP"
  | "TNX_LLM_RESPONSE"
  | "TNX_LLM_STREAM"
  | "TNX_NETWORK"
  | "TNX_ABORTED"
  | "TNX_ANSWER_MISMATCH"
  | "TNX_ANSWER_EXPIRED"
  | "TNX_ANSWER_INVALID"
  | "TNX_ANSWER_CONFLICT"
  | "TNX_APPROVAL_MISMATCH"
  | "TNX_UNKNOWN_REQUEST"
  | "TNX_STORE"
  | "TNX_SCHEMA_VERSION"
  | "TNX_RUNTIME"
  | "TNX_INBOX_FULL"
  | "TNX_CLOSED"
  | "TNX_CONVERSATION_PENDING"
  | "TNX_ENGINE_RUN"
  | "TNX_HOST_UNSUPPORTED"
  | "TNX_STEP_TOO_LARGE"
  | "TNX_MCP_CONNECT"
  | "TNX_MCP_TIMEOUT"
  // @toolnexus/a2a
  | "TNX_A2A_CONNECT"
  // @toolnexus/durable
  | "TNX_RUNTIME_HELD"
  | "TNX_CLAIM_LOST"
  | "TNX_RUNTIME_COLLISION"

/**
 * The base class of every error toolnexus throws. `code` is stable; identity survives
 * duplicate installs (`ToolnexusError.isInstance` and `instanceof` both use a global marker).
 */
export class ToolnexusError extends Error {
  /**
   * `"ToolnexusError"` on the base class; each subclass sets its own class name (`"AbortError"`,
   * …), so `err.name` says which error it is. Test `code` for a stable check.
   */
  override readonly name: string = "ToolnexusError"
  /**
   * The stable error code, `"TNX_…"` (a {@link ToolnexusErrorCode}, or another package's own): test
   * `err.code === "TNX_NETWORK"`, or `isToolnexusError(err, "TNX_NETWORK")`. Fixed by the subclass.
   */
  readonly code: ToolnexusErrorCode | (string & {})
  /**
   * Always `true`, under `Symbol.for("toolnexus.error")`: the brand `ToolnexusError.isInstance` and
   * `instanceof ToolnexusError` check, so an error made by another installed copy still counts.
   */
  readonly [MARKER] = true

  constructor(code: ToolnexusErrorCode | (string & {}), message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
    // One marker per class of the chain, so `isInstance` knows a subclass from another copy
    // of the package by its marker, not its prototype.
    const self = this as unknown as Record<symbol, boolean>
    for (
      let c: unknown = new.target;
      typeof c === "function" && c !== ToolnexusError;
      c = Object.getPrototypeOf(c)
    ) {
      const marker = markerOf(c)
      // Not enumerable: a spread copy (`{ ...error, code }`) is not the class it was made from.
      if (marker !== undefined) Object.defineProperty(self, marker, { value: true })
    }
  }

  /**
   * The code a subclass stands for. It lets `isInstance` recognise the family in an error made
   * by another copy of the package, whose prototype chain is not this one.
   */
  static readonly family: string | undefined

  /**
   * On `ToolnexusError`: true for any toolnexus error, even one created by another copy of the
   * package. On a subclass: true only for that family (`NetworkError.isInstance(abortError)` is
   * false), matched by prototype or, across copies, by code.
   */
  static isInstance<T extends abstract new (...args: any[]) => ToolnexusError>(
    this: T,
    value: unknown,
  ): value is InstanceType<T> {
    // biome-ignore lint/complexity/noThisInStatic: the class it is called on decides the family
    const cls = this as unknown as typeof ToolnexusError
    if (typeof value !== "object" || value === null) return false
    if ((value as Record<symbol, unknown>)[MARKER] !== true) return false
    if (cls === ToolnexusError) return true
    // Inherited unchanged, this would accept every sibling: the retry loop would take a
    // NetworkError for an AbortError and never retry it.
    if (Function.prototype[Symbol.hasInstance].call(cls, value)) return true
    const marker = markerOf(cls)
    if (marker !== undefined && (value as Record<symbol, unknown>)[marker] === true) return true
    // An error made by a copy from before per-class markers: its code names the family.
    const family = Object.hasOwn(cls, "family") ? cls.family : undefined
    return family !== undefined && (value as { code?: unknown }).code === family
  }

  /**
   * Backs `instanceof`: `x instanceof ToolnexusError` is `ToolnexusError.isInstance(x)` (true for an
   * error from any installed copy); on a subclass that does not override it, the ordinary
   * prototype-chain check.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    // `instanceof` asks the class on its right, so `this` is that class here.
    // biome-ignore lint/complexity/noThisInStatic: see above
    // biome-ignore lint/complexity/noUselessThisAlias: names the class for the two checks below
    const cls = this
    if (cls === ToolnexusError) return ToolnexusError.isInstance(value)
    return Function.prototype[Symbol.hasInstance].call(cls, value)
  }
}

/**
 * The global marker of an error class: its own static `marker` (agents' classes declare
 * one), else `Symbol.for("toolnexus.error.<family code>")` for a class with its own `family`.
 */
function markerOf(cls: unknown): symbol | undefined {
  const c = cls as { marker?: unknown; family?: unknown }
  if (Object.hasOwn(c, "marker") && typeof c.marker === "symbol") return c.marker
  if (Object.hasOwn(c, "family") && typeof c.family === "string")
    return Symbol.for(`toolnexus.error.${c.family}`)
  return undefined
}

/**
 * True for an error of the toolnexus family from any package and any installed copy, and, with
 * `code`, only for that code: one check for every package's errors.
 *
 * @example
 * try { await deliverAnswer(store, answer, opts) } catch (e) {
 *   if (isToolnexusError(e, "TNX_ANSWER_CONFLICT")) console.log("already decided", e.message)
 * }
 */
export function isToolnexusError<C extends ToolnexusErrorCode>(
  value: unknown,
  code?: C,
): value is ToolnexusError & { /** Narrowed to the `code` argument, when one is given. */ readonly code: C } {
  return ToolnexusError.isInstance(value) && (code === undefined || value.code === code)
}

/** A misconfiguration by the caller: bad options, an invalid tool name, a duplicate tool. */
export class ConfigError extends ToolnexusError {
  /** Always `"ConfigError"`; the stable check is `err.code === "TNX_CONFIG"`. */
  override readonly name = "ConfigError"
  static override readonly family = "TNX_CONFIG"
  constructor(message: string, options?: { cause?: unknown }) {
    super("TNX_CONFIG", message, options)
  }
}

/** The LLM endpoint answered with a non-2xx status. */
export class LLMHttpError extends ToolnexusError {
  /** Always `"LLMHttpError"`; the stable check is `err.code === "TNX_LLM_HTTP"`. */
  override readonly name = "LLMHttpError"
  static override readonly family = "TNX_LLM_HTTP"
  /** The HTTP status the endpoint answered with (e.g. 429, 503). */
  readonly status: number
  /** The first 500 characters of the response body. */
  readonly bodyExcerpt: string
  /** Whether the client retries it: the provider's `x-should-retry`, else the status. */
  readonly isRetryable: boolean
  /** The delay the provider asked for (`retry-after-ms` / `Retry-After`), when it did. */
  readonly retryAfterMs: number | undefined
  constructor(status: number, body: string, opts: { shouldRetry?: boolean; retryAfterMs?: number } = {}) {
    const bodyExcerpt = body.length > 500 ? `${body.slice(0, 500)}…` : body
    super("TNX_LLM_HTTP", `LLM endpoint answered HTTP ${status}: ${bodyExcerpt}`)
    this.status = status
    this.bodyExcerpt = bodyExcerpt
    this.isRetryable = opts.shouldRetry ?? isRetryableStatus(status)
    this.retryAfterMs = opts.retryAfterMs
  }
}

/** @internal Statuses retried with backoff: 408, 409, 429 and every 5xx (Anthropic's 529 too). */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || (status >= 500 && status <= 599)
}

/** Error types a provider reports for a passing condition (overload, rate limit, server fault). */
const TRANSIENT_STREAM_ERRORS: ReadonlySet<string> = new Set([
  "overloaded_error",
  "api_error",
  "rate_limit_error",
  "server_error",
  "rate_limit_exceeded",
])

/**
 * A streamed reply reported an error event (Anthropic `error`, an OpenAI `{error}` chunk, a
 * Responses `error` / `response.failed`). Retried only when its type is transient and nothing
 * of the reply was delivered yet.
 */
export class LLMStreamError extends ToolnexusError {
  /** Always `"LLMStreamError"`; the stable check is `err.code === "TNX_LLM_STREAM"`. */
  override readonly name = "LLMStreamError"
  static override readonly family = "TNX_LLM_STREAM"
  /** The provider's error type (`overloaded_error`, `insufficient_quota`, …), or "". */
  readonly errorType: string
  /** The provider's error code, when it gave one. */
  readonly errorCode: string | undefined
  /** True for a transient type before any output; false once output was delivered. */
  readonly isRetryable: boolean
  constructor(info: { type?: string; code?: string; message?: string }, afterOutput = false) {
    const errorType = info.type ?? ""
    const label = [errorType, info.code].filter(Boolean).join("/") || "error"
    super(
      "TNX_LLM_STREAM",
      `the LLM stream reported ${label}${afterOutput ? " after output had been delivered" : ""}: ${info.message ?? ""}`,
    )
    this.errorType = errorType
    this.errorCode = info.code
    const code = info.code ?? ""
    // A gateway's numeric code is the HTTP status it stands for.
    const transient =
      TRANSIENT_STREAM_ERRORS.has(errorType) ||
      TRANSIENT_STREAM_ERRORS.has(code) ||
      (/^\d{3}$/.test(code) && isRetryableStatus(Number(code)))
    this.isRetryable = !afterOutput && transient
  }
}

/** The LLM endpoint answered 2xx with something that is not a valid reply. */
export class LLMResponseError extends ToolnexusError {
  /** Always `"LLMResponseError"`; the stable check is `err.code === "TNX_LLM_RESPONSE"`. */
  override readonly name = "LLMResponseError"
  static override readonly family = "TNX_LLM_RESPONSE"
  constructor(message: string, options?: { cause?: unknown }) {
    super("TNX_LLM_RESPONSE", message, options)
  }
}

/** The endpoint could not be reached (connection refused, reset, DNS). Retried. */
export class NetworkError extends ToolnexusError {
  /** Always `"NetworkError"`; the stable check is `err.code === "TNX_NETWORK"`. */
  override readonly name = "NetworkError"
  static override readonly family = "TNX_NETWORK"
  constructor(message: string, options?: { cause?: unknown }) {
    super("TNX_NETWORK", message, options)
  }
}

/** The run was aborted by its signal or by `timeoutMs`. Never retried. */
export class AbortError extends ToolnexusError {
  /** Always `"AbortError"`; the stable check is `err.code === "TNX_ABORTED"`. */
  override readonly name = "AbortError"
  static override readonly family = "TNX_ABORTED"
  constructor(message = "the run was aborted", options?: { cause?: unknown }) {
    super("TNX_ABORTED", message, options)
  }
}

/** An answer whose id does not echo the pending request id. Nothing was changed. */
export class AnswerMismatchError extends ToolnexusError {
  /** Always `"AnswerMismatchError"`; the stable check is `err.code === "TNX_ANSWER_MISMATCH"`. */
  override readonly name = "AnswerMismatchError"
  static override readonly family = "TNX_ANSWER_MISMATCH"
  /** The `id` the refused answer carried. */
  readonly answerId: string
  /** The id of the request the run waits on, which the answer should have echoed. */
  readonly pendingId: string
  constructor(answerId: string, pendingId: string) {
    super(
      "TNX_ANSWER_MISMATCH",
      `the answer (id ${JSON.stringify(answerId)}) does not echo the pending request id ${JSON.stringify(pendingId)}; nothing was changed`,
    )
    this.answerId = answerId
    this.pendingId = pendingId
  }
}

/** An `ok: true` answer arrived after the request's `expiresAt`. */
export class AnswerExpiredError extends ToolnexusError {
  /** Always `"AnswerExpiredError"`; the stable check is `err.code === "TNX_ANSWER_EXPIRED"`. */
  override readonly name = "AnswerExpiredError"
  static override readonly family = "TNX_ANSWER_EXPIRED"
  /** The id of the expired request. */
  readonly requestId: string
  /** The request's `expiresAt` (RFC 3339), or `"(unknown)"` when the refusing store lacks it. */
  readonly expiresAt: string
  constructor(requestId: string, expiresAt: string) {
    super(
      "TNX_ANSWER_EXPIRED",
      `request ${requestId} expired at ${expiresAt}; it can only be answered { ok: false, reason: "expired" }`,
    )
    this.requestId = requestId
    this.expiresAt = expiresAt
  }
}

/**
 * An answer is not of the wire shape `{ id: non-empty string, ok: boolean, data?: plain
 * object, reason?: string }`. Thrown before anything is claimed, run or changed.
 */
export class AnswerInvalidError extends ToolnexusError {
  /** Always `"AnswerInvalidError"`; the stable check is `err.code === "TNX_ANSWER_INVALID"`. */
  override readonly name = "AnswerInvalidError"
  static override readonly family = "TNX_ANSWER_INVALID"
  /** What is wrong with it, e.g. `answer.ok must be a boolean, got string "yes"`. */
  readonly problem: string
  constructor(problem: string) {
    super("TNX_ANSWER_INVALID", `invalid answer: ${problem}`)
    this.problem = problem
  }
}

/** The decision an applied answer made: what `AnswerConflictError.decision` reports. */
export interface AnswerDecision {
  /** Whether the applied answer approved (`true`) or declined (`false`). */
  ok: boolean
  /** The applied answer's `reason` when it declined (e.g. `"expired"`); absent when it gave none. */
  reason?: string
}

/**
 * The answer was already claimed or applied by another delivery. When it was applied,
 * `decision` is the first decision (`ok`, and `reason` when declined), whatever the refused
 * answer said.
 */
export class AnswerConflictError extends ToolnexusError {
  /** Always `"AnswerConflictError"`; the stable check is `err.code === "TNX_ANSWER_CONFLICT"`. */
  override readonly name = "AnswerConflictError"
  static override readonly family = "TNX_ANSWER_CONFLICT"
  /** The id of the request whose answer was refused (`"(none)"` for a lost claim with no request). */
  readonly requestId: string
  /** The first decision on the request, when the refusing side knows it; absent otherwise. */
  readonly decision?: AnswerDecision
  constructor(
    requestId: string,
    detail = "it is already being applied or was applied",
    options?: { decision?: AnswerDecision },
  ) {
    super("TNX_ANSWER_CONFLICT", `the answer to request ${requestId} was not applied: ${detail}`)
    this.requestId = requestId
    if (options?.decision !== undefined) this.decision = options.decision
  }
}

/**
 * An approval is being applied to a call whose arguments are not the ones the approver saw:
 * the transcript's call (e.g. in client-written history) hashes differently from the request's
 * `data.argsHash`. Thrown before anything runs or is saved.
 */
export class ApprovalMismatchError extends ToolnexusError {
  /** Always `"ApprovalMismatchError"`; the stable check is `err.code === "TNX_APPROVAL_MISMATCH"`. */
  override readonly name = "ApprovalMismatchError"
  static override readonly family = "TNX_APPROVAL_MISMATCH"
  /** The id of the approval request. */
  readonly requestId: string
  /** The tool the approved call names. */
  readonly tool: string
  /** The request's `data.argsHash`: the sha-256 of the canonical arguments the approver saw. */
  readonly expected: string
  /** The sha-256 of the canonical arguments the call to resume carries. */
  readonly actual: string
  constructor(requestId: string, tool: string, expected: string, actual: string) {
    super(
      "TNX_APPROVAL_MISMATCH",
      `the approval ${requestId} for ${tool} does not cover this call: its arguments hash to ${actual}, ` +
        `the approver saw ${expected}; nothing was run or changed`,
    )
    this.requestId = requestId
    this.tool = tool
    this.expected = expected
    this.actual = actual
  }
}

/** No suspended run holds a request with this id. */
export class UnknownRequestError extends ToolnexusError {
  /** Always `"UnknownRequestError"`; the stable check is `err.code === "TNX_UNKNOWN_REQUEST"`. */
  override readonly name = "UnknownRequestError"
  static override readonly family = "TNX_UNKNOWN_REQUEST"
  /** The request id nothing waits on: the answer's `id`, or the id looked up. */
  readonly requestId: string
  constructor(requestId: string, where = "no suspended run holds it") {
    super("TNX_UNKNOWN_REQUEST", `unknown request ${JSON.stringify(requestId)}: ${where}`)
    this.requestId = requestId
  }
}

/**
 * `ask` with the id of a conversation that waits on a request: answering it comes first,
 * so the request is never silently dropped. Nothing was changed.
 */
export class ConversationPendingError extends ToolnexusError {
  /** Always `"ConversationPendingError"`; the stable check is `err.code === "TNX_CONVERSATION_PENDING"`. */
  override readonly name = "ConversationPendingError"
  static override readonly family = "TNX_CONVERSATION_PENDING"
  /** The id of the conversation `ask` was called with. */
  readonly conversationId: string
  /** The request the conversation waits on: answer it (`askWithAnswer` or `continueRun`) first. */
  readonly request: Request
  constructor(conversationId: string, request: Request) {
    super(
      "TNX_CONVERSATION_PENDING",
      `conversation ${JSON.stringify(conversationId)} waits on request ${request.id} (${request.kind}: ` +
        `${JSON.stringify(request.prompt)}); answer it (askWithAnswer or continueRun) before asking anything new`,
    )
    this.conversationId = conversationId
    this.request = request
  }
}

/**
 * A `RunHost` operation this host cannot perform (e.g. `events` on an engine connection, whose
 * runs stream in the engine's workers): nothing was changed. Test `err.operation` to fall back.
 */
export class HostUnsupportedError extends ToolnexusError {
  /** Always `"HostUnsupportedError"`; the stable check is `err.code === "TNX_HOST_UNSUPPORTED"`. */
  override readonly name = "HostUnsupportedError"
  static override readonly family = "TNX_HOST_UNSUPPORTED"
  /** The host, e.g. `"connectRestate"`. */
  readonly host: string
  /** The operation refused, e.g. `"events"` or `"start({ onEvent })"`. */
  readonly operation: string
  constructor(host: string, operation: string, why: string) {
    super("TNX_HOST_UNSUPPORTED", `${host} does not support ${operation}: ${why}`)
    this.host = host
    this.operation = operation
  }
}

/** A store failed: unreachable server, corrupt row, failed transaction. */
export class StoreError extends ToolnexusError {
  /** Always `"StoreError"`; the stable check is `err.code === "TNX_STORE"`. */
  override readonly name = "StoreError"
  static override readonly family = "TNX_STORE"
  constructor(message: string, options?: { cause?: unknown }) {
    super("TNX_STORE", message, options)
  }
}

/** A persisted format (snapshot, store schema) has a version this code does not know. */
export class SchemaVersionError extends ToolnexusError {
  /** Always `"SchemaVersionError"`; the stable check is `err.code === "TNX_SCHEMA_VERSION"`. */
  override readonly name = "SchemaVersionError"
  static override readonly family = "TNX_SCHEMA_VERSION"
  /** The version found in the persisted data, as read: possibly not a number at all. */
  readonly found: unknown
  /** The versions this code reads, e.g. `[1, 2, 3]`. */
  readonly supported: readonly unknown[]
  constructor(what: string, found: unknown, supported: readonly unknown[]) {
    super(
      "TNX_SCHEMA_VERSION",
      `${what} has schema version ${JSON.stringify(found)}; this version of toolnexus reads ${supported.map((v) => JSON.stringify(v)).join(", ")}. Upgrade toolnexus to read it.`,
    )
    this.found = found
    this.supported = supported
  }
}
