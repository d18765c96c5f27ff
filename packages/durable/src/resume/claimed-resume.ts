import { type Answer, AnswerMismatchError, UnknownRequestError } from "@toolnexus/core"
import type { AnswerClaim, DurableStore } from "../durable-store.js"
import { DEFAULT_LEASE_MS } from "../store-engine/option-checks.js"
import { type Heartbeat, startHeartbeat } from "./claim-heartbeat.js"

/** @internal How a {@link resumeClaimed} claim is taken and kept. */
export interface ClaimedResumeOptions {
  /** The claim's lease, renewed every `leaseMs / 3`; default 30 s. */
  leaseMs?: number
  /** Claims (attempts) before the request is `failed`; default 3. */
  maxAttempts?: number
  /** Aborts the resume; a lost claim aborts it too. */
  signal?: AbortSignal
  /** The saved runtime the claim is taken for (see `ClaimOptions.runtimeKey`). */
  runtimeKey?: string
}

/** @internal What the resume step gets: the claim it runs under, and the signal it must obey. */
export interface HeldClaim {
  claim: AnswerClaim
  /** Aborts when the caller's signal does, or when the claim is lost. */
  signal: AbortSignal
}

/**
 * @internal The one exactly-once resume: claims `answer` on conversation `conversationId`,
 * keeps the claim alive with a heartbeat while `resume` runs core's stored continue under it
 * (`claim` as an explicit save option, checkpoints under it), and then:
 * - `resume` resolved and `failureOf` finds nothing wrong: its save consumed the claim;
 *   the result is returned;
 * - `resume` threw, or resolved with a result `failureOf` names a failure: the claim is
 *   released with that error (an attempt counted; the decision kept for the next delivery or
 *   a sweep), then the error is thrown, or the failed result returned;
 * - the claim was lost meanwhile: `ClaimLostError` is thrown and nothing is released (the
 *   claim is someone else's now).
 *
 * A claim refused because the conversation waits on another request is an
 * `AnswerMismatchError`; every other refusal is the store's, from the one table of refusals.
 */
export async function resumeClaimed<R>(
  store: DurableStore,
  conversationId: string,
  answer: Answer,
  opts: ClaimedResumeOptions,
  resume: (held: HeldClaim) => Promise<R>,
  failureOf: (result: R) => Error | undefined = () => undefined,
): Promise<R> {
  const { leaseMs = DEFAULT_LEASE_MS, maxAttempts, signal, runtimeKey } = opts
  let claim: AnswerClaim
  try {
    claim = await store.claimAnswer(conversationId, answer, { leaseMs, maxAttempts, runtimeKey })
  } catch (error) {
    // Told apart in a function of its own, which a granted claim (a resume's first act) never compiles.
    return refusedClaim(store, conversationId, answer, error)
  }
  const heartbeat = startHeartbeat(store, conversationId, claim.request.id, claim.token, leaseMs, signal)
  let result: R
  try {
    result = await resume({ claim, signal: heartbeat.signal })
  } catch (error) {
    await released(store, conversationId, claim.token, maxAttempts, heartbeat, error)
    throw error
  } finally {
    heartbeat.stop()
  }
  const failure = failureOf(result)
  if (failure !== undefined)
    await released(store, conversationId, claim.token, maxAttempts, heartbeat, failure)
  return result
}

/**
 * A failed resume's claim: released with `error` (an attempt counted), unless it was lost
 * meanwhile (then `ClaimLostError` is thrown: the claim is someone else's). Its own function:
 * a resume's first LLM request is sent before any of this runs (fresh-process resume, DESIGN §7).
 */
async function released(
  store: DurableStore,
  id: string,
  token: string,
  maxAttempts: number | undefined,
  heartbeat: Heartbeat,
  error: unknown,
): Promise<void> {
  if (heartbeat.lost) throw heartbeat.lost
  await store.releaseClaim(id, token, { error, maxAttempts }).catch(() => {})
}

/** A refused claim's error, naming an answer to another request a mismatch. */
async function refusedClaim(store: DurableStore, id: string, answer: Answer, error: unknown): Promise<never> {
  if (!UnknownRequestError.isInstance(error)) throw error
  // A different id is told apart by the claim: an answer already applied (the run moved
  // on) is a conflict; one that never matched a waiting conversation is a mismatch.
  const stored = await store.getPending(id)
  if (stored) throw new AnswerMismatchError(answer.id, stored.id)
  throw error
}
