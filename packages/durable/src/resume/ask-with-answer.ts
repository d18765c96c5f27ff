import {
  type Answer,
  AnswerMismatchError,
  type Client,
  type ConversationStore,
  type EventListener,
  type Request,
  type RunResult,
  type Toolkit,
  UnknownRequestError,
  assertAnswerFits,
} from "@toolnexus/core"
import type { DurableStore } from "../durable-store.js"

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
  onEvent?: EventListener
}

/**
 * Resumes a conversation halted by `client.ask(..., { id })` with the answer, through the
 * client's store. On a durable store the pending request is claimed atomically first: of two
 * deliveries of the same answer exactly one resumes, the other gets `AnswerConflictError`.
 * The claimed answer is consumed only when the resumed run is saved; if this process dies
 * or the run fails, the claim expires (or is released) and the next delivery or a sweep
 * completes the run with the stored answer.
 *
 * @throws AnswerMismatchError when the answer does not echo the pending request id.
 * @throws AnswerConflictError when another delivery holds or already applied the answer.
 * @throws UnknownRequestError when the conversation waits on no request.
 * @throws AnswerExpiredError for `ok: true` after the request's `expiresAt`.
 * @example
 * const result = await askWithAnswer(client, { toolkit, id: "order-42", answer: { id: req.id, ok: true } })
 */
export async function askWithAnswer(client: Client, opts: AskWithAnswerOptions): Promise<RunResult> {
  const store = client.conversationStore()
  return isDurable(store) ? claimAndResume(client, store, opts) : resumeUnclaimed(client, store, opts)
}

async function claimAndResume(
  client: Client,
  store: DurableStore,
  opts: AskWithAnswerOptions,
): Promise<RunResult> {
  const { id, answer, toolkit, signal, onEvent } = opts
  const stored = await store.getPending(id)
  // Expiry is checked before claiming; a different id is left to the claim, which tells an
  // answer already applied (the run moved on) from one that never matched.
  if (stored?.id === answer.id) assertAnswerFits(stored, answer)
  let claim: Awaited<ReturnType<DurableStore["claimAnswer"]>>
  try {
    claim = await store.claimAnswer(id, answer, { leaseMs: opts.leaseMs })
  } catch (error) {
    // A wrong id for a conversation that does wait is a mismatch, not an unknown request.
    if (stored && UnknownRequestError.isInstance(error)) throw new AnswerMismatchError(answer.id, stored.id)
    throw error
  }
  try {
    const messages = (await store.get(id)) ?? []
    const run = await client.continueRun({
      toolkit,
      messages,
      pending: claim.request,
      answer: claim.answer,
      signal,
      id,
      onEvent,
    })
    await store.save(id, run.messages, { pending: run.pending ?? null, claim: claim.token })
    return run
  } catch (error) {
    // The decision is kept with the claim: the next delivery or a sweep completes the run.
    await store.releaseClaim(id, claim.token).catch(() => {})
    throw error
  }
}

async function resumeUnclaimed(
  client: Client,
  store: ConversationStore,
  opts: AskWithAnswerOptions,
): Promise<RunResult> {
  const { id, answer, toolkit, signal, onEvent } = opts
  const pending =
    opts.pending ??
    (await (store as { getPending?: (id: string) => Promise<Request | undefined> }).getPending?.(id))
  if (!pending)
    throw new UnknownRequestError(answer.id, `conversation ${JSON.stringify(id)} waits on no request`)
  const messages = await store.get(id)
  if (!messages) throw new UnknownRequestError(answer.id, `conversation ${JSON.stringify(id)} does not exist`)
  const run = await client.continueRun({ toolkit, messages, pending, answer, signal, id, onEvent })
  await store.save(id, run.messages, { pending: run.pending ?? null })
  return run
}

/** Options of {@link sweepExpiredClaims}. */
export interface SweepOptions {
  toolkit?: Toolkit
  /** At most this many claims per sweep; default 100. */
  limit?: number
  leaseMs?: number
}

/**
 * Completes the runs whose claims expired (their worker died mid-resume) with the answers
 * stored on the claims. Each run is taken over through `askWithAnswer`, so a sweep racing
 * a redelivery still applies every answer exactly once.
 *
 * @returns the conversations completed, and those that failed again (their claims stay for the next sweep).
 */
export async function sweepExpiredClaims(
  client: Client,
  opts: SweepOptions = {},
): Promise<{ completed: { id: string; result: RunResult }[]; failed: { id: string; error: unknown }[] }> {
  const store = client.conversationStore()
  if (!isDurable(store)) return { completed: [], failed: [] }
  const completed: { id: string; result: RunResult }[] = []
  const failed: { id: string; error: unknown }[] = []
  for (const claim of await store.listExpiredClaims({ limit: opts.limit ?? 100 })) {
    try {
      const result = await askWithAnswer(client, {
        id: claim.id,
        answer: claim.answer,
        toolkit: opts.toolkit,
        leaseMs: opts.leaseMs,
      })
      completed.push({ id: claim.id, result })
    } catch (error) {
      failed.push({ id: claim.id, error })
    }
  }
  return { completed, failed }
}

/** @internal */
export function isDurable(store: ConversationStore): store is DurableStore {
  return typeof (store as Partial<DurableStore>).claimAnswer === "function"
}
