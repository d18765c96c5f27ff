import { AbortError, LLMHttpError, NetworkError } from "../errors.js"
import { type HttpReply, type Transport, abortErrorOf, transportError } from "./transport.js"

/** What `onError` is told about a failed LLM request. */
export interface LLMErrorInfo {
  error?: unknown
  status?: number
  attempt: number
  retryable: boolean
}

/** @internal Retry settings of one client. */
export interface RetryPolicy {
  retries: number
  retryBaseMs: number
  timeoutMs?: number
  onError?: (info: LLMErrorInfo) => "retry" | "fail"
}

/**
 * @internal Sends a request, retrying 429/5xx and network errors with exponential backoff and
 * jitter (a delay-seconds `Retry-After` wins). Aborts are never retried. Resolves with a 2xx
 * reply whose body the caller reads; `release` clears the per-attempt timeout.
 */
export async function sendWithRetries(
  transport: Transport,
  url: string,
  headers: Record<string, string>,
  body: string,
  policy: RetryPolicy,
  signal: AbortSignal | undefined,
): Promise<{ reply: HttpReply; signal: AbortSignal | undefined; release(): void }> {
  for (let attempt = 1; ; attempt++) {
    if (signal?.aborted) throw abortErrorOf(signal)
    const { signal: attemptSignal, release } = attemptSignalOf(signal, policy.timeoutMs)
    let failure: { error?: unknown; status?: number; retryable: boolean; retryAfterMs?: number }
    try {
      const reply = await transport(url, { headers, body, signal: attemptSignal })
      if (reply.status >= 200 && reply.status < 300) return { reply, signal: attemptSignal, release }
      const text = await reply.text().catch(() => "")
      release()
      const error = new LLMHttpError(reply.status, redactSecrets(text, headers), retryHeadersOf(reply))
      failure = { error, status: reply.status, retryable: error.isRetryable, retryAfterMs: retryAfter(reply) }
    } catch (error) {
      release()
      if (AbortError.isInstance(error)) throw error
      const mapped = transportError(error, attemptSignal)
      if (AbortError.isInstance(mapped)) throw mapped
      failure = { error: mapped, retryable: NetworkError.isInstance(mapped) }
    }
    const info = { error: failure.error, status: failure.status, attempt, retryable: failure.retryable }
    const decision = policy.onError?.(info) ?? (failure.retryable ? "retry" : "fail")
    if (decision !== "retry" || attempt > policy.retries) throw failure.error
    await sleep(failure.retryAfterMs ?? backoff(policy.retryBaseMs, attempt), signal)
  }
}

/** Names of headers whose values are credentials. */
const SECRET_HEADER = /authorization|key|token|secret/i

/**
 * Some endpoints and gateways echo the credential they refused ("Incorrect API key provided:
 * sk-…"); the error body must not carry it into messages and logs.
 */
function redactSecrets(text: string, headers: Record<string, string>): string {
  let out = text
  for (const [name, value] of Object.entries(headers)) {
    if (!SECRET_HEADER.test(name)) continue
    // The whole value first, then the bare token of a "Bearer …" / "Basic …" value.
    for (const secret of [value, value.replace(/^(bearer|basic)\s+/i, "")]) {
      // Very short values would redact ordinary words; real credentials are longer.
      if (secret.length >= 8) out = out.split(secret).join("[redacted]")
    }
  }
  return out
}

const RETRY_HEADERS = ["retry-after", "retry-after-ms", "x-should-retry"] as const

function retryHeadersOf(reply: HttpReply): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of RETRY_HEADERS) {
    const value = reply.header(name)
    if (value !== undefined) out[name] = value
  }
  return out
}

function retryAfter(reply: HttpReply): number | undefined {
  const value = reply.header("retry-after")?.trim()
  return value && /^\d+$/.test(value) ? Number(value) * 1000 : undefined
}

function backoff(baseMs: number, attempt: number): number {
  const ceiling = baseMs * 2 ** (attempt - 1)
  return ceiling / 2 + Math.random() * (ceiling / 2)
}

function attemptSignalOf(
  signal: AbortSignal | undefined,
  timeoutMs: number | undefined,
): { signal: AbortSignal | undefined; release(): void } {
  if (timeoutMs === undefined) return { signal, release: noop }
  const controller = new AbortController()
  const timer = setTimeout(
    () => controller.abort(new AbortError(`the LLM request timed out after ${timeoutMs} ms`)),
    timeoutMs,
  )
  const onAbort = () => controller.abort(signal?.reason)
  signal?.addEventListener("abort", onAbort, { once: true })
  return {
    signal: controller.signal,
    release() {
      clearTimeout(timer)
      signal?.removeEventListener("abort", onAbort)
    },
  }
}

function noop(): void {}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortErrorOf(signal))
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort)
      resolve()
    }, ms)
    const onAbort = () => {
      clearTimeout(timer)
      reject(abortErrorOf(signal as AbortSignal))
    }
    signal?.addEventListener("abort", onAbort, { once: true })
  })
}
