import {
  type Answer,
  AnswerMismatchError,
  type Client,
  type ConversationStore,
  type StreamListener,
  type Request,
  type RunResult,
  type Toolkit,
  UnknownRequestError,
  assertAnswerFits,
} from "@toolnexus/core"
import type { AnswerClaim, DurableStore } from "../durable-store.js"

/** Options of {@link askWithAnswer}. */
export interface AskWithAnswerOptions {
  toolkit?: Toolkit
  /** The conversation id used with `client.ask`. */
  id: string
  answer: Answer
  /** The request it halted on; read from the store when omitted. */
  pending?: Request
  signal?: AbortSignal
  /** How long the claim holds before another delivery may take it over; default 30 s. */
  leaseMs?: number
  /** Events of the resumed run as they happen (streamed text included), as `client.run` gives them. */
  onEvent?: StreamListener
}

/**
 * Resumes a conversation halted by `client.ask(..., { id })` with the answer, through the
 * client's store and core's one stored-continue path (`client.continueRun` without
 * messages). On a durable store the request is claimed atomically first: of two deliveries
 * of the same answer exactly one resumes, the other gets `AnswerConflictError`. The claimed
 * answer is consumed only when the resumed run is saved; if this process dies or the run
 * fails, the claim expires (or is released) and the next delivery or a sweep completes the
 * run with the stored answer.
 *
 * @throws AnswerMismatchError when the answer does not echo the pending request id.
 * @throws AnswerConflictError when another delivery holds or already applied the answer (`decision` says what was decided).
 * @throws RuntimeHeldError when a saved runtime holds the request: use `deliverAnswer` or `resumeRuntime`. Nothing is claimed.
 * @throws UnknownRequestError when the conversation waits on no request.
 * @throws AnswerExpiredError for `ok: true` after the request's `expiresAt`.
 * @example
 * const result = await askWithAnswer(client, { toolkit, id: "order-42", answer: { id: req.id, ok: true } })
 */
export async function askWithAnswer(client: Client, opts: AskWithAnswerOptions): Promise<RunResult> {
  const store = client.conversationStore()
  const { id, answer, toolkit, signal, onEvent } = opts
  if (!isDurable(store))
    return client.continueRun({ id, answer, pending: opts.pending, toolkit, signal, onEvent })
  const claim = await claimFor(store, id, answer, opts.leaseMs)
  try {
    return await client.continueRun({
      id,
      answer: claim.answer,
      pending: claim.request,
      claim: claim.token,
      toolkit,
      signal,
      onEvent,
    })
  } catch (error) {
    // The decision is kept with the claim: the next delivery or a sweep completes the run.
    await store.releaseClaim(id, claim.token).catch(() => {})
    throw error
  }
}

/** Claims the conversation's request, checking expiry first and naming a wrong id a mismatch. */
async function claimFor(
  store: DurableStore,
  id: string,
  answer: Answer,
  leaseMs: number | undefined,
): Promise<AnswerClaim> {
  const stored = await store.getPending(id)
  // Expiry is checked before claiming; a different id is left to the claim, which tells an
  // answer already applied (the run moved on) from one that never matched.
  if (stored?.id === answer.id) assertAnswerFits(stored, answer)
  try {
    return await store.claimAnswer(id, answer, { leaseMs })
  } catch (error) {
    // A wrong id for a conversation that does wait is a mismatch, not an unknown request.
    if (stored && UnknownRequestError.isInstance(error)) throw new AnswerMismatchError(answer.id, stored.id)
    throw error
  }
}

/** @internal */
export function isDurable(store: ConversationStore): store is DurableStore {
  return typeof (store as Partial<DurableStore>).claimAnswer === "function"
}
