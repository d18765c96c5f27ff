import {
  type Answer,
  type AnswerDecision,
  ConfigError,
  type Message,
  type Request,
  type SaveMeta,
  StoreError,
} from "@toolnexus/core"
import type { ApprovalGrant, GrantQuery } from "@toolnexus/core"
import type {
  AnswerClaim,
  ClaimOptions,
  DurableStore,
  ExpiredClaim,
  FailedEntry,
  ListExpiredClaimsOptions,
  ListFailedOptions,
  ListPendingOptions,
  PendingEntry,
  PutSnapshotOptions,
  ReleaseOptions,
  RenewOptions,
  ResumeCommit,
  RuntimeHold,
} from "../durable-store.js"
import type { CorruptRow } from "../errors.js"
import { findGrant } from "../host/grants.js"
import { lostClaimError } from "./claim-refusals.js"
import {
  type ClaimGrant,
  type ClaimRefusal,
  RELEASED_TOKEN_PREFIX,
  claimRefusalError,
  newClaimToken,
} from "./claim-rules.js"
import { type PendingChange, sinceOnSet } from "./conversation-row.js"
import { MessageCache } from "./message-cache.js"
import {
  decodeJson,
  decodeTranscript,
  encodeJson,
  encodeMessages,
  isStoredAnswer,
  isStoredRequest,
  type StoredMessageRow,
} from "./message-codec.js"
import {
  DEFAULT_MAX_ATTEMPTS,
  checkAnswer,
  checkKey,
  checkSave,
  describe,
  resolveKind,
  resolveLeaseMs,
  resolveLimit,
  resolveMaxAttempts,
  resolveStoreOptions,
} from "./option-checks.js"
import { type HolderRow, decisionOf, foldHolders, pageOf } from "./request-index.js"
import { closedStoreError, toStoreError } from "./store-errors.js"
import { WriteCounter, type WriteStats } from "./write-stats.js"

/** What a backend's save primitive gets: everything encoded and checked. */
export interface SaveInput {
  id: string
  transcript: readonly Message[]
  pending: PendingChange
  claim: string | undefined
  /** A checkpoint: the claim fences the save but is not consumed (the pending request is kept). */
  checkpoint: boolean
  /**
   * What `transcript` keeps of the one this store last saved or loaded: at `revision` the
   * backend stores `stored` rows, of which the first `length` stay; a backend that uses it
   * writes from `length` on and deletes the stored rows from there when `length < stored`.
   */
  reusable: { revision: number; length: number; stored: number } | undefined
  /** The JSON bodies of `transcript[from..]`. */
  encode(from?: number): string[]
}

/** What a backend's save primitive reports; `pendingId` is the request pending after it. */
export type SaveOutcome =
  | { revision: number; pendingId: string | null; stats: Omit<WriteStats, "saves"> }
  | { lostClaim: string | null }

/** A snapshot as a backend's primitives get it: encoded, its holds checked. */
export interface SnapshotInput {
  key: string
  body: string
  holds: RuntimeHold[] | undefined
}

/** A save's outcome when it was written. */
export type WrittenSave = Exclude<SaveOutcome, { lostClaim: string | null }>

/** What a backend's commit primitive reports: each save's outcome, or the save whose claim was lost. */
export type CommitOutcome = WrittenSave[] | { lostClaim: { id: string; requestId: string | null } }

/** What a backend's claim primitive gets. */
export interface ClaimInput {
  id: string
  answerId: string
  answerJson: string
  token: string
  leaseMs: number
  runtimeKey: string | undefined
  /** Whether the answer approves (`ok: true`): only those are refused after `expiresAt`. */
  approves: boolean
  /** A takeover of a request claimed this many times already is refused and marks it failed. */
  maxAttempts: number
  /**
   * The `lastError` recorded when a takeover finds the attempts used up; built only then (a
   * granted claim, the common case, never needs it).
   */
  exhaustedErrorJson(): string
}

/** What a backend's release primitive gets for a resume that failed. */
export interface ClaimFailure {
  /** `{ name, code?, message }` as JSON, recorded as the request's `lastError`. */
  errorJson: string
  /** At this many attempts the request becomes `failed`. */
  maxAttempts: number
}

/**
 * A conversation as a backend reads it: the version (`revision`), the number of messages,
 * the pending request's id and the message rows.
 */
export interface StoredTranscript {
  revision: number
  count: number
  pendingId: string | null
  rows: readonly StoredMessageRow[]
}

/**
 * What a backend's claim primitive reports: a grant with the stored JSON, or a refusal. A
 * backend that reads a transcript in the claim's own statement returns it as `transcript`
 * (of conversation `transcriptOf`, by default the claimed one): the resume's load of that
 * conversation then needs no read of its own.
 */
export type ClaimOutcome =
  | {
      grant: ClaimGrant
      /** The JSON of the request claimed; not read when `pending` is given. */
      pendingJson: string | undefined
      /** The request claimed, when the backend built it without JSON text (SQLite's stamped form). */
      pending?: Request
      answerJson: string
      transcript?: StoredTranscript
      transcriptOf?: string
    }
  | { refusal: ClaimRefusal; runtimeKey?: string | null; decisionJson?: string | null; expiresAt?: string }

/** Options every durable store takes beside its connection. */
export interface DurableStoreOptions {
  /**
   * The deadline of every store operation, in ms (default 10 000): a hung connection fails
   * with `StoreError` instead of hanging. Leases must be at least twice as long.
   */
  opTimeoutMs?: number
  /**
   * Told about each stored row a listing (`listPending`, `listExpiredClaims`, `listFailed`,
   * and so the sweeps) skipped because it cannot be read; the row is left untouched. A direct
   * read of it throws `CorruptDataError` instead.
   */
  onCorrupt?: (info: CorruptRow, error: unknown) => void
}

/** A failed request as a backend reads it. */
export interface FailedRow extends HolderRow {
  lastError: string | null
}

/**
 * The part every durable store shares, as langgraphjs' `BaseCheckpointSaver` does
 * for checkpointers: argument checks, encoding and decoding, errors, the transcript cache
 * for prefix-reuse saves, write stats, and the request index's folding and paging. A
 * backend supplies only its primitives, each one atomic on its storage.
 */
export abstract class DurableStoreBase implements DurableStore {
  readonly #cache = new MessageCache()
  readonly #writes = new WriteCounter()
  readonly #onCorrupt: (row: CorruptRow, error: unknown) => void
  #closed = false
  #ready = false
  /** The transcript the last granted claim read, until the resume's load takes it (see `get`). */
  #claimed: { id: string; stored: StoredTranscript } | undefined
  /** Durable stores keep settled tool results mid-run (see `ConversationStore.checkpoints`). */
  readonly checkpoints = true
  /** The deadline of every operation, in ms. */
  readonly opTimeoutMs: number

  constructor(options: DurableStoreOptions, storeName: string) {
    const resolved = resolveStoreOptions(options, storeName)
    this.opTimeoutMs = resolved.opTimeoutMs
    const sink = resolved.onCorrupt
    this.#onCorrupt = sink
      ? (row, error) => {
          try {
            sink(row, error)
          } catch {
            // A failing reporter must not turn a skipped row into a failed listing.
          }
        }
      : () => {}
  }

  /** The class name used in errors, e.g. `"SqliteStore"`. */
  protected abstract readonly storeName: string
  /** Resolves once the schema is current (runs the migrations on first use). */
  protected abstract ready(): Promise<void>
  /**
   * True when the driver blocks until each operation is done (better-sqlite3): a timer could
   * never fire before the work settles, so none is set, and the driver's own busy timeout is
   * the deadline.
   */
  protected readonly blocking: boolean = false
  protected abstract readTranscript(id: string): Promise<StoredTranscript | undefined>
  protected abstract writeTranscript(input: SaveInput): Promise<SaveOutcome>
  /**
   * The JSON of the request conversation `id` waits on (`null`: none; `undefined`: no such
   * conversation), or the request itself when the backend builds it without JSON text.
   */
  protected abstract readPendingJson(id: string): Promise<string | Request | null | undefined>
  /** Conversations waiting on a request of `kind`, or on request `requestId`, with index rows. */
  protected abstract readHolders(filter: { kind?: string; requestId?: string }): Promise<HolderRow[]>
  /** The stored answer of an applied request, `null`/`undefined` when it is not applied. */
  protected abstract readDecisionJson(requestId: string): Promise<string | null | undefined>
  protected abstract readFailed(): Promise<FailedRow[]>
  protected abstract writeClaim(input: ClaimInput): Promise<ClaimOutcome>
  /** Expires the claim now if `token` holds it; with `failure`, records it and may mark the request failed. */
  protected abstract expireClaim(id: string, token: string, failure?: ClaimFailure): Promise<void>
  /** Extends the lease of the claim `token` holds on conversation `id`; false when it no longer holds. */
  protected abstract renewLease(id: string, token: string, leaseMs: number): Promise<boolean>
  /** Moves a failed request back to claimed with an expired lease and 0 attempts; its stored answer, or null. */
  protected abstract reopenRequest(requestId: string): Promise<string | null>
  protected abstract readExpiredClaims(
    limit: number | undefined,
  ): Promise<{ id: string; pending: string; answer: string }[]>
  protected abstract removeConversation(id: string): Promise<void>
  protected abstract writeSnapshot(key: string, body: string, holds: RuntimeHold[] | undefined): Promise<void>
  /**
   * Writes every save and the snapshot atomically (see `commitResume`): all of them, or
   * nothing when a save's claim is no longer held (`lostClaim` names that save's conversation).
   * The outcomes are in the order of `saves`.
   */
  protected abstract writeCommit(
    saves: SaveInput[],
    snapshot: SnapshotInput | undefined,
  ): Promise<CommitOutcome>
  /** Stores `body` under `key` unless a snapshot is there, atomically; true when it stored it. */
  protected abstract insertSnapshot(key: string, body: string): Promise<boolean>
  protected abstract readSnapshot(key: string): Promise<string | null | undefined>
  protected abstract removeSnapshot(key: string): Promise<void>
  /** Releases what the store opened itself. */
  protected abstract release(): Promise<void>

  /** Turns a driver failure into the store's error; backends may add what they know. */
  protected storeError(error: unknown, what: string): Error {
    return toStoreError(error, `${this.storeName} failed to ${what}`)
  }

  /** @internal What this store wrote so far; tests use it to check saves are incremental. */
  get stats(): WriteStats {
    return this.#writes.snapshot()
  }

  async get(id: string): Promise<Message[] | undefined> {
    checkKey(id, "the conversation id")
    // The transcript kept by the last claim when it is this conversation's, taken once (see
    // `claimAnswer`); written here, not in a method of its own: a cold resume compiles every
    // function it runs before its first request.
    const kept = this.#claimed
    let stored: StoredTranscript | undefined
    if (kept !== undefined && kept.id === id && !this.#closed) {
      this.#claimed = undefined
      stored = kept.stored
    } else stored = await this.#use("read conversation", id, () => this.readTranscript(id))
    if (stored === undefined) return undefined
    const messages = decodeTranscript(id, stored.count, stored.rows)
    this.#cache.remember(id, stored.revision, messages, stored.pendingId)
    return messages
  }

  async save(id: string, messages: Message[], meta?: SaveMeta): Promise<void> {
    checkSave(id, messages, meta)
    const input = this.#saveInput(id, messages, meta)
    const outcome = await this.#use("save conversation", id, () => this.writeTranscript(input))
    if ("lostClaim" in outcome) throw lostClaimError(id, outcome.lostClaim)
    this.#saved(input, outcome)
  }

  async commitResume(commit: ResumeCommit): Promise<void> {
    if (typeof commit !== "object" || commit === null || !Array.isArray(commit.saves)) {
      throw new ConfigError(`commitResume needs { saves: [...] }, got ${describe(commit)}`)
    }
    const saves = commit.saves
    // A single save (a turn's commit) builds no set of ids: less code on a turn's path.
    const ids = saves.length > 1 ? new Set<string>() : undefined
    for (const { id, messages, meta } of saves) {
      checkSave(id, messages, meta)
      if (meta?.checkpoint)
        throw new ConfigError(`commitResume: the save of ${JSON.stringify(id)} is a checkpoint`)
      if (ids === undefined) continue
      if (ids.has(id))
        throw new ConfigError(`commitResume: conversation ${JSON.stringify(id)} is saved twice`)
      ids.add(id)
    }
    const snapshot =
      commit.snapshot &&
      this.#snapshotInput(commit.snapshot.key, commit.snapshot.value, commit.snapshot.holds)
    const inputs: SaveInput[] = []
    for (const { id, messages, meta } of saves) inputs.push(this.#saveInput(id, messages, meta))
    const outcome = await this.#use("commit a resume", undefined, () => this.writeCommit(inputs, snapshot))
    if ("lostClaim" in outcome) throw lostClaimError(outcome.lostClaim.id, outcome.lostClaim.requestId)
    for (let i = 0; i < inputs.length; i++) this.#saved(inputs[i] as SaveInput, outcome[i] as WrittenSave)
  }

  /** What a backend's save primitive gets for `save(id, messages, meta)`, checked already. */
  #saveInput(id: string, messages: Message[], meta: SaveMeta | undefined): SaveInput {
    this.#dropClaimed(id)
    // The caller may keep appending to its array while we work; save what it held now.
    const transcript = messages.slice()
    const pending = meta?.pending
    const change: PendingChange =
      pending === undefined
        ? { mode: "keep", json: null, id: null, kind: null }
        : pending === null
          ? { mode: "clear", json: null, id: null, kind: null }
          : {
              mode: "set",
              json: encodeJson(pending, () => `the pending request of conversation ${JSON.stringify(id)}`),
              id: pending.id,
              kind: pending.kind,
            }
    const checkpoint = meta?.checkpoint === true
    const reusable = this.#cache.reusablePrefix(id, transcript)
    if (reusable !== undefined && change.mode === "set")
      change.since = sinceOnSet(reusable.pendingId, change.id)
    return {
      id,
      transcript,
      // A checkpoint never changes what the conversation waits on.
      pending: checkpoint ? { mode: "keep", json: null, id: null, kind: null } : change,
      claim: meta?.claim,
      checkpoint,
      reusable,
      encode: (from = 0) => encodeMessages(id, transcript, from),
    }
  }

  /** Records a written save: its stats, and its transcript for the next prefix-reuse save. */
  #saved(input: SaveInput, outcome: WrittenSave): void {
    this.#writes.record(outcome.stats)
    this.#cache.remember(input.id, outcome.revision, input.transcript, outcome.pendingId)
  }

  /** What a backend's snapshot primitive gets, checked and encoded. */
  #snapshotInput(key: string, snapshot: unknown, holds: RuntimeHold[] | undefined): SnapshotInput {
    checkKey(key, "the snapshot key")
    if (holds !== undefined) {
      if (!Array.isArray(holds)) throw new ConfigError(`opts.holds must be an array, got ${describe(holds)}`)
      for (const hold of holds) {
        checkKey(hold?.requestId, "a hold's requestId")
        checkKey(hold.conversationId, "a hold's conversationId")
      }
    }
    return { key, body: encodeJson(snapshot, () => `snapshot ${JSON.stringify(key)}`), holds }
  }

  async getPending(id: string): Promise<Request | undefined> {
    checkKey(id, "the conversation id")
    const json = await this.#use("read the pending request of", id, () => this.readPendingJson(id))
    if (json == null) return undefined
    if (typeof json === "object") return json
    return decodeJson<Request>(json, () => "its pending request", conversationRow(id), isStoredRequest)
  }

  async findRequest(requestId: string): Promise<PendingEntry | undefined> {
    checkKey(requestId, "the request id")
    const rows = await this.#use("find request", requestId, () => this.readHolders({ requestId }))
    return foldHolders(rows)[0]
  }

  async listPending(opts?: ListPendingOptions): Promise<PendingEntry[]> {
    const limit = resolveLimit(opts?.limit)
    const kind = resolveKind(opts?.kind)
    const after = opts?.after
    if (after !== undefined && (typeof after !== "string" || after === "")) {
      throw new ConfigError(`after must be a request id, got ${describe(after)}`)
    }
    if (limit === 0) return []
    const rows = await this.#use("list pending requests", undefined, () =>
      this.readHolders(kind === undefined ? {} : { kind }),
    )
    return pageOf(foldHolders(rows, this.#onCorrupt), after, limit)
  }

  async listFailed(opts?: ListFailedOptions): Promise<FailedEntry[]> {
    const limit = resolveLimit(opts?.limit)
    if (limit === 0) return []
    const rows = await this.#use("list failed requests", undefined, () => this.readFailed())
    // Folded like pending entries (one per request id), then marked failed with their error.
    const errors = new Map(rows.map((row) => [row.requestId, row.lastError]))
    const open = rows.map((row) => ({
      ...row,
      request: row.request && { ...row.request, state: "open" as const },
    }))
    const failed: FailedEntry[] = []
    for (const { state: _open, ...entry } of foldHolders(open, this.#onCorrupt)) {
      const id = entry.request.id
      const stored = errors.get(id)
      try {
        const lastError = stored
          ? decodeJson<FailedEntry["lastError"]>(
              stored,
              () => "its last error",
              requestRow(id),
              isErrorRecord,
            )
          : { name: "Error", message: "no error was recorded" }
        failed.push({ ...entry, state: "failed", lastError })
      } catch (error) {
        this.#onCorrupt(requestRow(id), error)
      }
    }
    return failed.slice(0, limit)
  }

  /**
   * The approval grant (§19) covering a call of `query.tool` in `query.conversationId`: the
   * conversation's, then its run's principal's (a store host's `start({ principal })`).
   */
  async findApprovalGrant(query: GrantQuery): Promise<ApprovalGrant | undefined> {
    return findGrant(this, query)
  }

  async getDecision(requestId: string): Promise<AnswerDecision | undefined> {
    checkKey(requestId, "the request id")
    const json = await this.#use("read the decision on request", requestId, () =>
      this.readDecisionJson(requestId),
    )
    return decisionOf(json ?? null, requestId)
  }

  async claimAnswer(id: string, answer: Answer, opts?: ClaimOptions): Promise<AnswerClaim> {
    checkKey(id, "the conversation id")
    checkAnswer(answer)
    const leaseMs = this.#leaseOf(opts?.leaseMs)
    const maxAttempts =
      opts?.maxAttempts === undefined ? DEFAULT_MAX_ATTEMPTS : resolveMaxAttempts(opts.maxAttempts)
    const runtimeKey = opts?.runtimeKey
    if (runtimeKey !== undefined) checkKey(runtimeKey, "opts.runtimeKey")
    const input: ClaimInput = {
      id,
      answerId: answer.id,
      answerJson: encodeJson(answer, () => `the answer to request ${JSON.stringify(answer.id)}`),
      token: newClaimToken(),
      leaseMs,
      runtimeKey,
      approves: answer.ok,
      maxAttempts,
      exhaustedErrorJson: () => exhaustedErrorJson(maxAttempts),
    }
    let outcome: ClaimOutcome
    try {
      outcome = await this.#use("claim an answer for conversation", id, () => this.writeClaim(input))
    } catch (error) {
      return this.#unacknowledged(id, input.token, error)
    }
    if ("refusal" in outcome) this.#refuse(id, answer.id, outcome)
    const claim: AnswerClaim = {
      token: input.token,
      // The answer JSON this call encoded (a first claim) is parsed without a shape check: it
      // is the answer checked above. A takeover's is the stored one, decoded and checked.
      answer:
        outcome.answerJson === input.answerJson
          ? JSON.parse(input.answerJson)
          : decodeJson<Answer>(
              outcome.answerJson,
              () => "its claimed answer",
              requestRow(answer.id),
              isStoredAnswer,
            ),
      request:
        outcome.pending ??
        decodeJson<Request>(
          outcome.pendingJson,
          () => "its pending request",
          conversationRow(id),
          isStoredRequest,
        ),
      takeover: outcome.grant === "takeover",
    }
    if (outcome.transcript !== undefined) {
      // The transcript the claim read stands for the resume's load, which follows in the same
      // run of the microtask queue (`askWithAnswer` loads right after claiming, with no I/O
      // between, and a saved runtime's cascade loads its deepest holder first). It is dropped
      // once that queue is empty (`process.nextTick` from a promise job runs then), so a later
      // `get` never returns a transcript older than its own call. Not `setImmediate`: its timer
      // machinery was first-run code of every cold resume, and an object per resume.
      const kept = { id: outcome.transcriptOf ?? id, stored: outcome.transcript }
      this.#claimed = kept
      process.nextTick(() => {
        if (this.#claimed === kept) this.#claimed = undefined
      })
    }
    return claim
  }

  // The claim's two failures, kept out of `claimAnswer` so that a claim granted (a resume's
  // first act) compiles neither.

  /** A claim whose write failed: it may have been written before the reply was lost. */
  async #unacknowledged(id: string, token: string, error: unknown): Promise<never> {
    // Expired at once, so a claim nobody holds never blocks the request for a whole lease.
    await this.#use("expire an unacknowledged claim", undefined, () => this.expireClaim(id, token)).catch(
      () => {},
    )
    throw error
  }

  /** Throws the typed error of a claim the store refused. */
  #refuse(id: string, answerId: string, outcome: Extract<ClaimOutcome, { refusal: ClaimRefusal }>): never {
    this.#dropClaimed(id)
    const decision = decisionOf(outcome.decisionJson ?? null, answerId)
    throw claimRefusalError(outcome.refusal, id, answerId, {
      runtimeKey: outcome.runtimeKey,
      ...(decision ? { decision } : {}),
      ...(outcome.expiresAt !== undefined ? { expiresAt: outcome.expiresAt } : {}),
    })
  }

  async renewClaim(id: string, token: string, opts?: RenewOptions): Promise<boolean> {
    checkKey(id, "the conversation id")
    checkKey(token, "the claim token")
    const leaseMs = this.#leaseOf(opts?.leaseMs)
    // A released token as stored is no token: it renews nothing.
    if (token.startsWith(RELEASED_TOKEN_PREFIX)) return false
    return this.#use("renew a claim on conversation", id, () => this.renewLease(id, token, leaseMs))
  }

  async releaseClaim(id: string, token: string, opts?: ReleaseOptions): Promise<void> {
    checkKey(id, "the conversation id")
    checkKey(token, "the claim token")
    const failure: ClaimFailure | undefined =
      opts?.error === undefined
        ? undefined
        : {
            errorJson: JSON.stringify(errorRecord(opts.error)),
            maxAttempts: resolveMaxAttempts(opts.maxAttempts),
          }
    this.#dropClaimed(id)
    await this.#use("release a claim on conversation", id, () => this.expireClaim(id, token, failure))
  }

  async reopenFailed(requestId: string): Promise<Answer | undefined> {
    checkKey(requestId, "the request id")
    const json = await this.#use("reopen failed request", requestId, () => this.reopenRequest(requestId))
    if (json == null) return undefined
    return decodeJson<Answer>(json, () => "its stored decision", requestRow(requestId), isStoredAnswer)
  }

  async listExpiredClaims(opts?: ListExpiredClaimsOptions): Promise<ExpiredClaim[]> {
    const limit = resolveLimit(opts?.limit)
    if (limit === 0) return []
    const rows = await this.#use("list expired claims", undefined, () => this.readExpiredClaims(limit))
    const claims: ExpiredClaim[] = []
    for (const row of rows) {
      let request: Request
      try {
        request = decodeJson<Request>(
          row.pending,
          () => "its pending request",
          conversationRow(row.id),
          isStoredRequest,
        )
      } catch (error) {
        this.#onCorrupt(conversationRow(row.id), error)
        continue
      }
      try {
        const answer = decodeJson<Answer>(
          row.answer,
          () => "its claimed answer",
          requestRow(request.id),
          isStoredAnswer,
        )
        claims.push({ id: row.id, request, answer })
      } catch (error) {
        this.#onCorrupt(requestRow(request.id), error)
      }
    }
    return claims
  }

  async deleteConversation(id: string): Promise<void> {
    checkKey(id, "the conversation id")
    this.#dropClaimed(id)
    await this.#use("delete conversation", id, () => this.removeConversation(id))
    this.#cache.forget(id)
  }

  async putSnapshot(key: string, snapshot: unknown, opts?: PutSnapshotOptions): Promise<void> {
    const { body, holds } = this.#snapshotInput(key, snapshot, opts?.holds)
    await this.#use("store snapshot", key, () => this.writeSnapshot(key, body, holds))
  }

  async createSnapshot(key: string, snapshot: unknown): Promise<boolean> {
    checkKey(key, "the snapshot key")
    const body = encodeJson(snapshot, () => `snapshot ${JSON.stringify(key)}`)
    return this.#use("create snapshot", key, () => this.insertSnapshot(key, body))
  }

  async getSnapshot(key: string): Promise<unknown | undefined> {
    checkKey(key, "the snapshot key")
    const body = await this.#use("read snapshot", key, () => this.readSnapshot(key))
    if (body == null) return undefined
    return decodeJson(body, () => "the snapshot", { table: "tnx_snapshots", key })
  }

  async deleteSnapshot(key: string): Promise<void> {
    checkKey(key, "the snapshot key")
    await this.#use("delete snapshot", key, () => this.removeSnapshot(key))
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    await this.release()
  }

  #dropClaimed(id: string): void {
    if (this.#claimed?.id === id) this.#claimed = undefined
  }

  /** A lease for a claim: positive, and at least twice the operation deadline. */
  #leaseOf(leaseMs: unknown): number {
    const lease = resolveLeaseMs(leaseMs)
    if (lease < 2 * this.opTimeoutMs) {
      throw new ConfigError(
        `leaseMs (${lease}) must be at least 2 × opTimeoutMs (${this.opTimeoutMs}) of the ${this.storeName}: ` +
          "a renewal that takes a whole deadline must still land before the lease runs out",
      )
    }
    return lease
  }

  /**
   * The one wrapper of every primitive: closed check, schema ready, errors typed, and the
   * operation deadline (the driver's own timeouts are set too; this bounds whatever they
   * miss, such as a caller's pool or client). Preparing the schema on first use runs several
   * statements, so it gets five deadlines.
   */
  async #use<T>(verb: string, key: string | undefined, fn: () => Promise<T>): Promise<T> {
    if (this.#closed) throw closedStoreError(this.storeName)
    try {
      if (!this.#ready) {
        // A blocking store's setup runs to its end before any timer could fire: no deadline to
        // arm (and none of its code to compile on a cold resume's first call).
        await (this.blocking
          ? this.ready()
          : this.#within(5 * this.opTimeoutMs, "prepare its schema", undefined, () => this.ready()))
        this.#ready = true
        if (this.#closed) throw closedStoreError(this.storeName)
      }
      return await (this.blocking ? fn() : this.#within(this.opTimeoutMs, verb, key, fn))
    } catch (error) {
      throw this.storeError(error, whatOf(verb, key))
    }
  }

  async #within<T>(ms: number, verb: string, key: string | undefined, fn: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const what = whatOf(verb, key)
        reject(new StoreError(`${this.storeName} could not ${what}: no reply within ${ms} ms (opTimeoutMs)`))
      }, ms)
      timer.unref?.()
    })
    const work = fn()
    try {
      return await Promise.race([work, deadline])
    } finally {
      clearTimeout(timer)
      // A late failure of the abandoned work must not surface as an unhandled rejection.
      work.catch(() => {})
    }
  }
}

/**
 * What a primitive was doing, for its error: `verb` and the quoted key it did it on. Built only
 * when an error needs it, never per call (every store call named its key up front before).
 */
function whatOf(verb: string, key: string | undefined): string {
  return key === undefined ? verb : `${verb} ${JSON.stringify(key)}`
}

/** The `lastError` of a request whose claims ran out `maxAttempts` times. */
function exhaustedErrorJson(maxAttempts: number): string {
  return JSON.stringify({
    name: "LeaseExpired",
    message: `its claim's lease ran out ${maxAttempts} times without the resume being saved (its workers stopped)`,
  })
}

function conversationRow(key: string): CorruptRow {
  return { table: "tnx_conversations", key }
}

function requestRow(key: string): CorruptRow {
  return { table: "tnx_requests", key }
}

function isErrorRecord(value: unknown): boolean {
  const e = value as Record<string, unknown> | null
  return typeof e === "object" && e !== null && typeof e.name === "string" && typeof e.message === "string"
}

/** @internal What `lastError` records of a failure: its name, code and message. */
export function errorRecord(error: unknown): FailedEntry["lastError"] {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code
    return {
      name: error.name,
      ...(typeof code === "string" ? { code } : {}),
      message: error.message.slice(0, 2000),
    }
  }
  return { name: "Error", message: String(error).slice(0, 2000) }
}
