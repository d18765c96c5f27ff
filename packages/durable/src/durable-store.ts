import type {
  Answer,
  AnswerDecision,
  ConversationStore,
  Message,
  PendingEntry,
  Request,
  SaveMeta,
} from "@toolnexus/core"

// Moved to core (an engine connection lists the same entries); re-exported from here as before.
export type { PendingEntry }

/** Options of {@link DurableStore.listPending}. */
export interface ListPendingOptions {
  /** At most this many entries (a non-negative integer); all of them when absent. */
  limit?: number
  /** Only requests of this `kind`. */
  kind?: string
  /**
   * A request id: continue the listing after it (the last id of the previous page). When it
   * is no longer open, the listing goes on from the first entry whose id sorts after it.
   */
  after?: string
}

/** A request whose resumes kept failing, as listed by {@link DurableStore.listFailed}. */
export interface FailedEntry extends Omit<PendingEntry, "state"> {
  /** Always `"failed"`: the request used up its attempts and waits for `retryFailed`. */
  state: "failed"
  /**
   * The error of the last failed resume, as recorded when its claim was released (`{ name:
   * "Error", message: "no error was recorded" }` when none was).
   */
  lastError: {
    /** The error's `name` (`"Error"` for a thrown value that is not an `Error`). */
    name: string
    /** The error's string `code` (a toolnexus error's `TNX_…` code); absent when it had none. */
    code?: string
    /** The error's message, cut to its first 2 000 characters. */
    message: string
  }
}

/** Options of {@link DurableStore.listFailed}. */
export interface ListFailedOptions {
  /** At most this many entries (a non-negative integer); all of them when absent. */
  limit?: number
}

/**
 * A request of a saved runtime's tree, recorded with its snapshot so that any delivery of
 * the answer is routed to the runtime (see {@link DurableStore.putSnapshot}).
 */
export interface RuntimeHold {
  /** The id of the request a parked handle of the tree waits on. */
  requestId: string
  /** The deepest handle's conversation id. */
  conversationId: string
  /** The deepest handle's id segments. */
  path?: string[]
}

/** Options of {@link DurableStore.putSnapshot}. */
export interface PutSnapshotOptions {
  /** The requests the runtime saved under this key holds, replacing those it held before. */
  holds?: RuntimeHold[]
}

/** One conversation's final save in a {@link ResumeCommit}: what `save(id, messages, meta)` would write. */
export interface CommitSave {
  /** The conversation id. */
  id: string
  /** The whole transcript; only what changed since the stored one is written. */
  messages: Message[]
  /**
   * As for `save`: `pending` sets, clears (`null`) or keeps the pending request, and `claim`
   * fences the whole commit and is consumed by it. A checkpoint is never part of a commit.
   */
  meta?: SaveMeta
}

/**
 * What a resumed cascade changed, written by {@link DurableStore.commitResume} in one store
 * call: the conversations it saved (one of them carrying the claim it consumes) and the
 * runtime's new snapshot with the requests its tree now holds.
 */
export interface ResumeCommit {
  /** The conversations' final saves, at most one per id. */
  saves: CommitSave[]
  /** The runtime's snapshot, stored as `putSnapshot(key, value, { holds })` would. */
  snapshot?: {
    /** The runtime key. */
    key: string
    /** The JSON-serialisable snapshot. */
    value: unknown
    /** The requests the tree holds, replacing those it held before. */
    holds?: RuntimeHold[]
  }
}

/** Options of {@link DurableStore.claimAnswer}. */
export interface ClaimOptions {
  /** How long the claim holds before another delivery may take it over; default 30 000 ms. */
  leaseMs?: number
  /**
   * The saved runtime the claim is taken for. A request a saved runtime holds is refused
   * with `RuntimeHeldError` unless this names that runtime: its handles are never replayed
   * as plain conversations.
   */
  runtimeKey?: string
  /**
   * A takeover of a request already claimed this many times (its workers died) is refused
   * and marks the request `failed`; default 3.
   */
  maxAttempts?: number
}

/** Options of {@link DurableStore.renewClaim}. */
export interface RenewOptions {
  /** The new lease from now; default 30 000 ms. */
  leaseMs?: number
}

/** Options of {@link DurableStore.releaseClaim}. */
export interface ReleaseOptions {
  /**
   * Why the resume failed, recorded as the request's `lastError`. With it the release counts
   * as a failed attempt: at `maxAttempts` attempts the request becomes `failed`.
   */
  error?: unknown
  /** Default 3. */
  maxAttempts?: number
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
  /**
   * The open request with this id, wherever it is held: its deepest holder, saved runtime
   * and path. `undefined` when no conversation waits on it (unknown, or already applied).
   */
  findRequest(requestId: string): Promise<PendingEntry | undefined>
  /** Open requests, one entry per request id, ordered by `since` then request id. */
  listPending(opts?: ListPendingOptions): Promise<PendingEntry[]>
  /** Requests whose resumes failed too often to be retried by sweeps. */
  listFailed(opts?: ListFailedOptions): Promise<FailedEntry[]>
  /**
   * The first decision applied to a request, once an answer to it was consumed; `undefined`
   * while it is open or unknown.
   */
  getDecision(requestId: string): Promise<AnswerDecision | undefined>
  /**
   * Atomically claims the right to apply `answer` to the conversation's pending request.
   * Claims are per request id: one claim at a time across every conversation holding it,
   * and once an answer was applied every further claim is refused.
   *
   * @throws UnknownRequestError when no such request is pending on the conversation.
   * @throws AnswerConflictError when another delivery holds it, or it was applied (`decision` set).
   * @throws RuntimeHeldError when a saved runtime holds the request and `opts.runtimeKey` does not name it.
   */
  claimAnswer(id: string, answer: Answer, opts?: ClaimOptions): Promise<AnswerClaim>
  /**
   * Gives a claim up: it expires at once but keeps its answer for the next delivery or a
   * sweep. With `opts.error` the failure is recorded, and after `opts.maxAttempts` claims
   * the request becomes `failed` (skipped by sweeps, listed by `listFailed`).
   */
  releaseClaim(id: string, token: string, opts?: ReleaseOptions): Promise<void>
  /**
   * Extends the lease of the claim `token` holds on conversation `id` (the heartbeat).
   * `false` when the claim is no longer held (taken over, applied, or released).
   */
  renewClaim(id: string, token: string, opts?: RenewOptions): Promise<boolean>
  /**
   * Moves a `failed` request back to claimable with its stored decision and no attempts
   * counted, and returns that decision; `undefined` when the request is not failed.
   * `retryFailed` uses it, then delivers the decision.
   */
  reopenFailed(requestId: string): Promise<Answer | undefined>
  /** The deadline of every operation, in ms (the store option `opTimeoutMs`). */
  readonly opTimeoutMs: number
  /** Claims whose lease ran out without their run being saved, soonest expired first. */
  listExpiredClaims(opts?: ListExpiredClaimsOptions): Promise<ExpiredClaim[]>
  /** Removes the conversation with its messages, its pending request and their claims. */
  deleteConversation(id: string): Promise<void>
  /**
   * Stores a JSON-serialisable value under `key`, replacing any previous one whole. With
   * `opts.holds`, atomically records the requests the runtime saved under `key` holds.
   */
  putSnapshot(key: string, snapshot: unknown, opts?: PutSnapshotOptions): Promise<void>
  /**
   * Stores a JSON-serialisable value under `key` unless one is there, atomically: `true` when
   * this call stored it, `false` when `key` held a value (left as it was). Across processes
   * sharing the store exactly one of several racing calls gets `true` (a store host's run ids).
   */
  createSnapshot(key: string, snapshot: unknown): Promise<boolean>
  /**
   * Writes a resumed cascade's outcome in one store call, all or nothing (one SQLite or
   * PostgreSQL transaction, one Redis script): each conversation as `save` writes it, and the
   * snapshot with its holds as `putSnapshot` does. A save's `meta.claim` fences the whole
   * commit: when the claim is no longer held nothing is written; otherwise
   * the commit consumes it, so the decision is applied together with everything it changed.
   *
   * @throws AnswerConflictError when a save's claim is no longer held; nothing is written.
   * @throws ConfigError for a checkpoint in `saves` or an id saved twice.
   */
  commitResume(commit: ResumeCommit): Promise<void>
  /** The value stored under `key`, freshly parsed; `undefined` when there is none. */
  getSnapshot(key: string): Promise<unknown | undefined>
  /** Removes the value stored under `key`, if any. */
  deleteSnapshot(key: string): Promise<void>
  /** Releases the connections the store opened itself; later calls fail with `StoreError`. */
  close(): Promise<void>
}
