/**
 * The `type` values of the OpenAI error shape this proxy answers with; an upstream error keeps
 * the upstream's own type, so any string may appear.
 */
export type ProxyErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "conflict_error"
  | "upstream_error"
  | "server_error"
  | (string & {})

/** Options of a {@link ProxyError} beyond status, type and message. */
export interface ProxyErrorOptions {
  /** The request field at fault (OpenAI's `param`). */
  param?: string
  /** OpenAI's machine-readable `code`, e.g. `"invalid_api_key"`. */
  code?: string
  /** Response headers, e.g. an upstream's `retry-after`. */
  headers?: Record<string, string>
  /**
   * Sent as `x-should-retry`, which the OpenAI SDKs obey: false for errors that repeating the
   * same request cannot fix (a 409 is not retried twice for nothing), true where a retry helps.
   */
  retryable?: boolean
  /** Fields the body's `error` carries beyond OpenAI's four, e.g. an expiry's `requestId` and `expiresAt`. */
  fields?: Record<string, unknown>
}

/**
 * A failure the proxy reports to its caller as an HTTP status and an OpenAI-shaped error body
 * (`{ error: { message, type, param, code } }`), so OpenAI SDKs surface it like any API error.
 */
export class ProxyError extends Error {
  override readonly name = "ProxyError"
  /** A 4xx or 5xx status. */
  readonly status: number
  readonly type: ProxyErrorType
  readonly param: string | null
  readonly code: string | null
  readonly headers: Record<string, string>
  /** Extra fields of the body's `error`. */
  readonly fields: Record<string, unknown>

  constructor(status: number, type: ProxyErrorType, message: string, options: ProxyErrorOptions = {}) {
    super(message)
    this.status = status
    this.type = type
    this.param = options.param ?? null
    this.code = options.code ?? null
    this.headers = { ...options.headers }
    this.fields = { ...options.fields }
    if (options.retryable !== undefined) this.headers["x-should-retry"] = String(options.retryable)
  }
}

/** A 400 for a request the proxy cannot read; `param` names the offending field. */
export function badRequest(message: string, param?: string): ProxyError {
  return new ProxyError(400, "invalid_request_error", message, { param, retryable: false })
}

/** A 409: the request refers to tool calls or items that are not (or no longer) open. */
export function conflict(message: string, param?: string): ProxyError {
  return new ProxyError(409, "conflict_error", message, { param, retryable: false })
}

/** A 409 that says not to retry: resuming with these results failed `maxAttempts` times. */
export function failedTooOften(): ProxyError {
  return new ProxyError(
    409,
    "conflict_error",
    "resuming with these tool results failed too often; the conversation waits for an operator (retryFailed)",
    { param: "messages", retryable: false },
  )
}

/**
 * A 410 `answer_expired`: the tool results answer a request past its `expiresAt` (refused by
 * the claim, or already declined `expired`). 410 with the
 * request's id and `expiresAt` is every toolnexus door's contract for an expired answer (DESIGN §17).
 */
export function expiredError(requestId: string, expiresAt: string): ProxyError {
  const message =
    `the tool calls these results answer expired at ${expiresAt}; ` +
    "start a new conversation by ending the messages with a user message"
  return new ProxyError(410, "invalid_request_error", message, {
    param: "messages",
    code: "answer_expired",
    retryable: false,
    fields: { requestId, expiresAt },
  })
}

/** The JSON body of an error response, in OpenAI's error shape (plus the error's extra fields). */
export function errorBody(error: ProxyError): {
  error: {
    message: string
    type: string
    param: string | null
    code: string | null
    [field: string]: unknown
  }
} {
  return {
    error: {
      ...error.fields,
      message: error.message,
      type: error.type,
      param: error.param,
      code: error.code,
    },
  }
}
