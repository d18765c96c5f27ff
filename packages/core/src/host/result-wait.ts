import { AbortError } from "../errors.js"
import type { HostResultOptions } from "./run-host.js"

/** One `RunHost.result` wait's end: its `timeoutMs` and the caller's `signal`, as one signal. */
export interface ResultWait {
  /** Aborts at `timeoutMs` or with the caller's signal; undefined when the wait has neither. */
  signal: AbortSignal | undefined
  /** The `AbortError` a host throws once `signal` aborted, naming which end it was. */
  error(): AbortError
}

/** The wait with neither end: nothing aborts it, so its `error` is never asked for. */
const UNBOUNDED: ResultWait = {
  signal: undefined,
  error: () => new AbortError("the wait for a result was aborted"),
}

/**
 * The end of a `result` wait on run `runId` (every host's one reading of `timeoutMs` and
 * `signal`): a host races its wait against `signal` and throws `error()` when it aborts.
 */
export function resultWait(runId: string, opts: HostResultOptions = {}): ResultWait {
  const { timeoutMs, signal: caller } = opts
  // Neither end (a door's wait, most of them): one shared wait, no arrays or closure a call.
  if (timeoutMs === undefined && caller === undefined) return UNBOUNDED
  const timeout = timeoutMs === undefined ? undefined : AbortSignal.timeout(Math.max(0, timeoutMs))
  const signals = [caller, timeout].filter((s): s is AbortSignal => s !== undefined)
  const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0]
  return {
    signal,
    error: () =>
      caller?.aborted
        ? new AbortError(`the wait for the result of run ${runId} was aborted`, { cause: caller.reason })
        : new AbortError(`no result of run ${runId} within ${timeoutMs} ms`),
  }
}

/**
 * `promise`'s value, or `wait.error()` thrown as soon as `wait.signal` aborts (the promise is
 * left to settle; its rejection is then observed, never unhandled).
 */
export function untilResultWait<T>(promise: Promise<T>, wait: ResultWait): Promise<T> {
  const { signal } = wait
  if (signal === undefined) return promise
  if (signal.aborted) {
    promise.catch(() => undefined)
    return Promise.reject(wait.error())
  }
  return new Promise<T>((resolve, reject) => {
    const stop = () => {
      promise.catch(() => undefined)
      reject(wait.error())
    }
    signal.addEventListener("abort", stop, { once: true })
    promise.then(
      (value) => {
        signal.removeEventListener("abort", stop)
        resolve(value)
      },
      (error: unknown) => {
        signal.removeEventListener("abort", stop)
        reject(error)
      },
    )
  })
}
