import { ConfigError } from "@toolnexus/core"
/** Options of {@link createRateLimiter}. */
export interface RateLimitOptions {
  /** Requests allowed per window and key. */
  limit: number
  /** The window, in milliseconds. */
  windowMs: number
  /** The clock; tests pass their own. */
  now?: () => number
}

/** A fixed-window counter per key (a user, an API token, a webhook sender). */
export interface RateLimiter {
  /** Counts one request for `key`: `ok`, or refused with the seconds until the window resets. */
  take(key: string): { ok: true } | { ok: false; retryAfterS: number }
}

/**
 * A per-process fixed-window rate limiter. Several instances each allow `limit` per window;
 * that bounds the total at `limit × instances`, which is what a limit on answers needs (it
 * stops a runaway script, not a determined attacker with many tokens).
 */
export function createRateLimiter(opts: RateLimitOptions): RateLimiter {
  const { limit, windowMs } = opts
  if (!Number.isInteger(limit) || limit < 1)
    throw new ConfigError(`limit must be a positive integer, got ${limit}`)
  if (!(windowMs > 0)) throw new ConfigError(`windowMs must be positive, got ${windowMs}`)
  const now = opts.now ?? Date.now
  const windows = new Map<string, { start: number; count: number }>()
  return {
    take(key) {
      const t = now()
      let window = windows.get(key)
      if (!window || t - window.start >= windowMs) {
        // Forget finished windows now and then, so the map stays as small as the active keys.
        if (windows.size > 10_000) {
          for (const [k, w] of windows) if (t - w.start >= windowMs) windows.delete(k)
        }
        window = { start: t, count: 0 }
        windows.set(key, window)
      }
      if (window.count >= limit) {
        return { ok: false, retryAfterS: Math.max(1, Math.ceil((window.start + windowMs - t) / 1000)) }
      }
      window.count++
      return { ok: true }
    },
  }
}
