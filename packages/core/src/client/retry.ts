import { AbortError, LLMHttpError, LLMStreamError, NetworkError, ToolnexusError } from "../errors.js"
import { type HttpReply, abortErrorOf, transportError } from "./transport.js"
import type { RunSignal } from "../internal/run-abort.js"

/** What `onError` is told about a failed LLM request. */
export interface LLMErrorInfo {
  /** The failure, e.g. an `LLMHttpError`, `LLMStreamError` or `NetworkError`; never an abort or timeout. */
  error?: unknown
  /** The HTTP status when the endpoint answered non-2xx; absent for other failures. */
  status?: number
  /** Which attempt failed, counting from 1. */
  attempt: number
  /**
   * Whether the default policy would retry it: a retryable status, network error or transient
   * stream error, before any output reached the caller.
   */
  retryable: boolean
}

/** @internal Retry settings of one client. */
export interface RetryPolicy {
  retries: number
  retryBaseMs: number
  /** The longest delay a provider's `retry-after` may impose; default 60 s. */
  maxRetryDelayMs: number
  timeoutMs?: number
  onError?: (info: LLMErrorInfo) => "retry" | "fail"
}

/** @internal What one attempt is given: its signal (the run's, plus the timeout). */
export interface Attempt {
  signal: RunSignal | undefined
  /** Set once the attempt delivered output to the caller; a later failure is not retried. */
  delivered: boolean
}

/**
 * @internal Runs `attempt` until it succeeds or a failure is final. Retried: HTTP 408, 409,
 * 429 and 5xx (the provider's `x-should-retry` decides when present), network errors, and
 * transient stream error events before any output. Exponential backoff with jitter, unless the
 * provider asked for a delay (`retry-after-ms`, `Retry-After`), capped by `maxRetryDelayMs`.
 * Aborts are never retried. The per-attempt timeout covers reading the whole reply.
 */
export function withRetries<T>(
  policy: RetryPolicy,
  signal: RunSignal | undefined,
  attempt: (current: Attempt) => Promise<T>,
): Promise<T> {
  if (policy.timeoutMs !== undefined || signal?.aborted) return retrying(policy, signal, attempt, 1)
  // A first attempt without a timeout is not wrapped in an async frame: an async function runs
  // its continuation in its own code, so V8 compiled the retry loop on its own as well as
  // inlined in the request path, inside the first thousand requests.
  const current: Attempt = { signal, delivered: false }
  let first: Promise<T>
  try {
    first = attempt(current)
  } catch (caught) {
    first = Promise.reject(caught)
  }
  return first.then(undefined, (caught: unknown) => retryFirst(policy, signal, caught, current, attempt))
}

/**
 * @internal After a first attempt (`current`, made without a timeout) failed with `caught`:
 * the backoff, then the attempts from the second on; or `caught`'s error thrown when it is
 * not retried. What `withRetries` does on a first failure, for an attempt that calls it itself.
 */
export async function retryFirst<T>(
  policy: RetryPolicy,
  signal: RunSignal | undefined,
  caught: unknown,
  current: Attempt,
  attempt: (current: Attempt) => Promise<T>,
): Promise<T> {
  await retryAfter(policy, signal, failedAttempt(caught, current), current, 1)
  return retrying(policy, signal, attempt, 2)
}

/** The attempts from `from` on, each under the per-attempt timeout. */
async function retrying<T>(
  policy: RetryPolicy,
  signal: RunSignal | undefined,
  attempt: (current: Attempt) => Promise<T>,
  from: number,
): Promise<T> {
  for (let count = from; ; count++) {
    if (signal?.aborted) throw abortErrorOf(signal)
    const timed = policy.timeoutMs === undefined ? undefined : timedSignal(signal, policy.timeoutMs)
    const current: Attempt = { signal: timed ? timed.signal : signal, delivered: false }
    let error: Error
    try {
      return await attempt(current)
    } catch (caught) {
      error = failedAttempt(caught, current)
    } finally {
      timed?.release()
    }
    await retryAfter(policy, signal, error, current, count)
  }
}

// A failed attempt's handling is kept out of `withRetries`, which every LLM request runs: a
// request that succeeds (the first one of a cold process) never compiles it.

/** The error of a failed attempt; an abort is thrown at once (never retried). */
function failedAttempt(caught: unknown, current: Attempt): Error {
  const error = AbortError.isInstance(caught) ? (caught as Error) : classify(caught, current.signal)
  if (AbortError.isInstance(error)) throw error
  return error
}

/** Waits out the backoff before attempt `count + 1`, or throws `error` when it is not retried. */
async function retryAfter(
  policy: RetryPolicy,
  signal: RunSignal | undefined,
  error: Error,
  current: Attempt,
  count: number,
): Promise<void> {
  const retryable = !current.delivered && isRetryable(error)
  const status = LLMHttpError.isInstance(error) ? error.status : undefined
  const info: LLMErrorInfo = { error, status, attempt: count, retryable }
  const decision = policy.onError?.(info) ?? (retryable ? "retry" : "fail")
  // Output already delivered would be delivered twice: nothing after it is retried.
  if (decision !== "retry" || current.delivered || count > policy.retries) throw error
  const asked = LLMHttpError.isInstance(error) ? error.retryAfterMs : undefined
  const delay = asked === undefined ? backoff(policy.retryBaseMs, count) : asked
  await sleep(Math.min(delay, policy.maxRetryDelayMs), signal)
}

/** Our own errors stay as they are; anything else failed while sending or reading. */
function classify(error: unknown, signal: RunSignal | undefined): Error {
  if (ToolnexusError.isInstance(error)) return error as Error
  return transportError(error, signal)
}

function isRetryable(error: Error): boolean {
  if (NetworkError.isInstance(error)) return true
  if (LLMHttpError.isInstance(error) || LLMStreamError.isInstance(error)) return error.isRetryable
  return false
}

/**
 * @internal The error of a non-2xx reply, with what the provider said about retrying it:
 * `x-should-retry` and the delay of `retry-after-ms` or `Retry-After` (seconds or HTTP-date).
 */
export function httpErrorOf(reply: HttpReply, body: string): LLMHttpError {
  const should = reply.header("x-should-retry")?.trim().toLowerCase()
  const opts: { shouldRetry?: boolean; retryAfterMs?: number } = {}
  if (should === "true") opts.shouldRetry = true
  else if (should === "false") opts.shouldRetry = false
  const delay = retryAfterMs(reply)
  if (delay !== undefined) opts.retryAfterMs = delay
  return new LLMHttpError(reply.status, body, opts)
}

function retryAfterMs(reply: HttpReply): number | undefined {
  const ms = reply.header("retry-after-ms")?.trim()
  if (ms && /^\d+(\.\d+)?$/.test(ms)) return Number(ms)
  const value = reply.header("retry-after")?.trim()
  if (!value) return undefined
  if (/^\d+(\.\d+)?$/.test(value)) return Number(value) * 1000
  const date = Date.parse(value)
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined
}

function backoff(baseMs: number, attempt: number): number {
  const ceiling = baseMs * 2 ** (attempt - 1)
  return ceiling / 2 + Math.random() * (ceiling / 2)
}

/** The run's signal plus the per-attempt timeout; `release` clears both. */
function timedSignal(
  signal: RunSignal | undefined,
  timeoutMs: number,
): { signal: AbortSignal; release(): void } {
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

function sleep(ms: number, signal: RunSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortErrorOf(signal))
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort)
      resolve()
    }, ms)
    const onAbort = () => {
      clearTimeout(timer)
      reject(abortErrorOf(signal as RunSignal))
    }
    signal?.addEventListener("abort", onAbort, { once: true })
  })
}
