/** The `type` values of the OpenAI error shape this proxy answers with. */
export type ProxyErrorType = "invalid_request_error" | "conflict_error" | "upstream_error" | "server_error"

/**
 * A failure the proxy reports to its caller as an HTTP status and an OpenAI-shaped error body
 * (`{ error: { message, type, param, code } }`), so OpenAI SDKs surface it like any API error.
 */
export class ProxyError extends Error {
  override readonly name = "ProxyError"
  readonly status: 400 | 404 | 409 | 500 | 502
  readonly type: ProxyErrorType
  /** The request field at fault, when there is one (OpenAI's `param`). */
  readonly param: string | null

  constructor(status: ProxyError["status"], type: ProxyErrorType, message: string, param?: string) {
    super(message)
    this.status = status
    this.type = type
    this.param = param ?? null
  }
}

/** A 400 for a request the proxy cannot read; `param` names the offending field. */
export function badRequest(message: string, param?: string): ProxyError {
  return new ProxyError(400, "invalid_request_error", message, param)
}

/** The JSON body of an error response, in OpenAI's error shape. */
export function errorBody(error: ProxyError): {
  error: { message: string; type: ProxyErrorType; param: string | null; code: string | null }
} {
  return { error: { message: error.message, type: error.type, param: error.param, code: null } }
}
