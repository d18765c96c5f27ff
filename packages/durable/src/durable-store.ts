import type { Answer, ConversationStore, Message, Request, SaveMeta } from "@toolnexus/core"

/** Options of {@link DurableStore.listPending}. */
export interface ListPendingOptions {
  /** At most this many entries (a non-negative integer); all of them when absent. */
  limit?: number
  /** Only requests of this `kind`. */
  kind?: string
}

/** A conversation halted on a request, as listed by {@link DurableStore.listPending}. */
export interface PendingEntry {
  /** The conversation id. */
  id: string
  /** The request the conversation waits on. */
  request: Request
  /** RFC 3339 time at which the request was first saved as pending. */
  since: string
}

/** Options of {@link DurableStore.claimAnswer}. */
export interface ClaimOptions {
  /** How long the claim holds before another delivery may take it over; default 30 000 ms. */
  leaseMs?: number
}

/** Options of {@link DurableStore.listExpiredClaims}. */
export interface ListExpiredClaimsOptions {
  /** At most this many entries (a non-negative integer); all of them when absent. */
  limit?: number
}

/** A claim whose lease ran out before its run was saved, as listed for sweepers. */
export interface ExpiredClaim {
  /** The conversation id. */
  id: string
  /** The request the claimed answer answers. */
  request: Request
  /** The answer stored with the claim: the one a sweeper should complete the run with. */
  answer: Answer
}

/**
 * The exclusive right to apply an answer to a halted conversation, granted by
 * {@link DurableStore.claimAnswer}. Pass `token` as `claim` to the save that consumes it.
 */
export interface AnswerClaim {
  /** Fences the consuming save: only the current holder's save succeeds. */
  token: string
  /** The answer to apply; on a takeover, the one stored by the first claim, not the new one. */
  answer: Answer
  /** The pending request the answer answers. */
  request: Request
  /** True when an expired claim of another delivery was taken over. */
  takeover: boolean
}

/**
 * A {@link ConversationStore} that survives restarts and is shared between processes:
 * append-only transcripts, pending requests, exactly-once answer claims and snapshots.
 */
export interface DurableStore extends ConversationStore {
  /** The conversation's messages, freshly parsed from storage; `undefined` for an unknown id. */
  get(id: string): Promise<Message[] | undefined>
  /**
   * Stores the conversation, writing only what changed since the stored transcript.
   * `meta.pending` sets (a request), clears (`null`) or keeps (absent) the pending request;
   * `meta.claim` makes the save conditional on still holding that claim, and consumes it.
   */
  save(id: string, messages: Message[], meta?: SaveMeta): Promise<void>
  /** The request the conversation halted on, if any. */
  getPending(id: string): Promise<Request | undefined>
  /** Conversations halted on a request, oldest first. */
  listPending(opts?: ListPendingOptions): Promise<PendingEntry[]>
  /**
   * Atomically claims the right to apply `answer` to the conversation's pending request.
   * Throws `UnknownRequestError` when no such request is pending and `AnswerConflictError`
   * when it is held by another delivery or was already applied.
   */
  claimAnswer(id: string, answer: Answer, opts?: ClaimOptions): Promise<AnswerClaim>
  /** Gives a claim up: it expires at once but keeps its answer for the next delivery or a sweep. */
  releaseClaim(id: string, token: string): Promise<void>
  /** Claims whose lease ran out without their run being saved, soonest expired first. */
  listExpiredClaims(opts?: ListExpiredClaimsOptions): Promise<ExpiredClaim[]>
  /** Stores a JSON-serialisable value under `key`, replacing any previous one whole. */
  putSnapshot(key: string, snapshot: unknown): Promise<void>
  /** The value stored under `key`, freshly parsed; `undefined` when there is none. */
  getSnapshot(key: string): Promise<unknown | undefined>
  /** Removes the value stored under `key`, if any. */
  deleteSnapshot(key: string): Promise<void>
  /** Releases the connections the store opened itself; later calls fail with `StoreError`. */
  close(): Promise<void>
}
