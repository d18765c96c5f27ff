import type { DurableStore } from "../durable-store.js"
import { ClaimLostError } from "../errors.js"

/** @internal A claim kept alive while its resume runs. */
export interface Heartbeat {
  /** Aborts when the caller's signal does, or when the claim is lost. */
  readonly signal: AbortSignal
  /** Why the claim was lost, once it was. */
  readonly lost: ClaimLostError | undefined
  /** Stops renewing; call it when the resume has settled, whatever the outcome. */
  stop(): void
}

/**
 * @internal Renews the claim `token` holds on conversation `id` every `leaseMs / 3`. When a
 * renewal finds the claim taken over, or fails (the store is unreachable), the returned
 * signal aborts: the loop checks it before every tool and LLM call, and the claim's fenced
 * saves would be refused anyway. Renewals never overlap.
 */
export function startHeartbeat(
  store: DurableStore,
  id: string,
  requestId: string,
  token: string,
  leaseMs: number,
  outer: AbortSignal | undefined,
): Heartbeat {
  // One controller following `outer` by a listener, not `AbortSignal.any` (which registers
  // weak references and a finalizer for every resume); the listener goes at `stop`.
  const controller = new AbortController()
  const signal = controller.signal
  let follow: (() => void) | undefined
  if (outer?.aborted) controller.abort(outer.reason)
  else if (outer) {
    follow = () => controller.abort(outer.reason)
    outer.addEventListener("abort", follow, { once: true })
  }
  let lost: ClaimLostError | undefined
  let renewing = false
  const lose = (detail: string, cause?: unknown) => {
    if (lost) return
    lost = new ClaimLostError(requestId, id, detail, cause === undefined ? undefined : { cause })
    clearInterval(timer)
    controller.abort(lost)
  }
  const timer = setInterval(
    () => {
      if (renewing || lost) return
      renewing = true
      store.renewClaim(id, token, { leaseMs }).then(
        (held) => {
          renewing = false
          if (!held) lose("another delivery took it over, or it was released")
        },
        (error: unknown) => {
          renewing = false
          lose(`renewing it failed (${error instanceof Error ? error.message : String(error)})`, error)
        },
      )
    },
    Math.max(1, Math.floor(leaseMs / 3)),
  )
  timer.unref?.()
  return {
    signal,
    get lost() {
      return lost
    },
    stop: () => {
      clearInterval(timer)
      if (follow) outer?.removeEventListener("abort", follow)
    },
  }
}
