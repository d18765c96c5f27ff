import {
  AbortError,
  LLMHttpError,
  LLMResponseError,
  LLMStreamError,
  NetworkError,
  type ToolnexusError,
} from "@toolnexus/core"
import { ProxyError } from "./proxy-error.js"

/*
 * Where retries happen: in the caller's SDK, never here. The OpenAI SDKs and the AI SDK retry
 * 408/409/429/5xx themselves, so a proxy that also retried would multiply every attempt (3 × 3
 * upstream calls for one caller request). The proxy therefore makes one upstream attempt per
 * caller request (run it with a `retries: 0` client) and reports the upstream's answer with the
 * upstream's status: a 4xx stays that 4xx (not retried by the SDK when it cannot help), a 429
 * keeps its `Retry-After`, and only a real outage (5xx, unreachable, timed out, a malformed
 * reply) is a 5xx.
 */

/**
 * Maps an upstream failure (a toolnexus error of the LLM request) to the caller's error, or
 * returns undefined when `error` is not an upstream failure.
 *
 * @param callerGone whether the caller's own connection aborted the run (then an abort is not a timeout)
 */
export function upstreamError(error: ToolnexusError, callerGone: boolean): ProxyError | undefined {
  if (LLMHttpError.isInstance(error)) return httpError(error)
  if (LLMStreamError.isInstance(error)) return streamError(error)
  if (NetworkError.isInstance(error)) {
    return new ProxyError(502, "upstream_error", `the upstream model is unreachable: ${error.message}`, {
      code: "upstream_unreachable",
    })
  }
  if (LLMResponseError.isInstance(error)) {
    return new ProxyError(
      502,
      "upstream_error",
      `the upstream model sent an invalid reply: ${error.message}`,
      {
        code: "upstream_bad_response",
      },
    )
  }
  if (AbortError.isInstance(error)) {
    // Nobody reads the answer to a caller that hung up; the status only shows in logs.
    if (callerGone) return new ProxyError(499, "upstream_error", "the caller closed the connection")
    return new ProxyError(504, "upstream_error", `the upstream model timed out: ${error.message}`, {
      code: "upstream_timeout",
    })
  }
  return undefined
}

function httpError(error: LLMHttpError): ProxyError {
  const upstream = parseErrorBody(error.bodyExcerpt)
  // Anthropic's 529 "overloaded" is not a status OpenAI clients know; 503 means the same to them.
  const status = error.status === 529 ? 503 : error.status >= 400 && error.status <= 599 ? error.status : 502
  // Core's verdict (the provider's `x-should-retry`, else the status) and the delay the provider
  // asked for (from `retry-after-ms`, `Retry-After` seconds or date), in both forms SDKs read.
  const headers: Record<string, string> = { "x-should-retry": String(error.isRetryable) }
  if (error.retryAfterMs !== undefined) {
    headers["retry-after"] = String(Math.ceil(error.retryAfterMs / 1000))
    headers["retry-after-ms"] = String(Math.round(error.retryAfterMs))
  }
  const detail = upstream?.message ?? error.bodyExcerpt
  const type = upstream?.type ?? (status >= 500 ? "upstream_error" : "invalid_request_error")
  return new ProxyError(status, type, `the upstream model answered HTTP ${error.status}: ${detail}`, {
    code: upstream?.code,
    param: upstream?.param,
    headers,
  })
}

/** The HTTP status an error event's type stands for, as the providers answer it outside a stream. */
const STREAM_ERROR_STATUS: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  rate_limit_exceeded: 429,
  insufficient_quota: 429,
  overloaded_error: 503,
}

/** An error event in the upstream's stream (before any output reached the caller: nothing did). */
function streamError(error: LLMStreamError): ProxyError {
  const status =
    STREAM_ERROR_STATUS[error.errorType] ??
    STREAM_ERROR_STATUS[error.errorCode ?? ""] ??
    (error.isRetryable ? 503 : 502)
  return new ProxyError(
    status,
    error.errorType || "upstream_error",
    `the upstream model failed: ${error.message}`,
    {
      code: error.errorCode,
      retryable: error.isRetryable,
    },
  )
}

/** The fields of an OpenAI (`{error:{message,type,code,param}}`) or Anthropic (`{type:"error", error:{type,message}}`) error body. */
function parseErrorBody(
  text: string,
): { message?: string; type?: string; code?: string; param?: string } | undefined {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    return undefined
  }
  const inner = (body as { error?: unknown } | null)?.error
  if (typeof inner !== "object" || inner === null) return undefined
  const field = (name: string) => {
    const value = (inner as Record<string, unknown>)[name]
    return typeof value === "string" && value !== "" ? value : undefined
  }
  return { message: field("message"), type: field("type"), code: field("code"), param: field("param") }
}
