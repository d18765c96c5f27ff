import type { Answer, AnswerDecision, Message, Request, SaveMeta } from "@toolnexus/core"
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
  RuntimeHold,
} from "../durable-store.js"
import {
  type ClaimGrant,
  type ClaimRefusal,
  claimRefusalError,
  lostClaimError,
  newClaimToken,
} from "./claim-rules.js"
import { sinceOnSet } from "./conversation-row.js"
import { MessageCache } from "./message-cache.js"
import {
  decodeJson,
  decodeTranscript,
  encodeJson,
  encodeMessages,
  type StoredMessageRow,
} from "./message-codec.js"
import {
  checkAnswer,
  checkKey,
  checkSave,
  describe,
  resolveKind,
  resolveLeaseMs,
  resolveLimit,
} from "./option-checks.js"
import { type HolderRow, decisionOf, foldHolders, pageOf } from "./request-index.js"
import { closedStoreError, toStoreError } from "./store-errors.js"
import { WriteCounter, type WriteStats } from "./write-stats.js"
import { ConfigError } from "@toolnexus/core"

/** How a save changes the pending request: its mode and, when set, its columns. */
export interface PendingChange {
  mode: "keep" | "clear" | "set"
  json: string | null
  id: string | null
  kind: string | null
  /**
   * With `set`: whether `pending_since` is kept or starts now (`sinceOnSet`), decided here
   * when the transcript this store last saw is current; `undefined` leaves it to the
   * backend, which decides with the same rule from the row it reads.
   */
  since?: "keep" | "now"
}

/** What a backend's save primitive gets: everything encoded and checked. */
export interface SaveInput {
  id: string
  transcript: readonly Message[]
  pending: PendingChange
  claim: string | undefined
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

/** What a backend's claim primitive gets. */
export interface ClaimInput {
  id: string
  answerId: string
  answerJson: string
  token: string
  leaseMs: number
  runtimeKey: string | undefined
}

/** What a backend's claim primitive reports: a grant with the stored JSON, or a refusal. */
export type ClaimOutcome =
  | { grant: ClaimGrant; pendingJson: string; answerJson: string }
  | { refusal: ClaimRefusal; runtimeKey?: string | null; decisionJson?: string | null }

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
  #closed = false

  /** The class name used in errors, e.g. `"SqliteStore"`. */
  protected abstract readonly storeName: string
  /** Resolves once the schema is current (runs the migrations on first use). */
  protected abstract ready(): Promise<void>
  protected abstract readTranscript(
    id: string,
  ): Promise<
    | { revision: number; count: number; pendingId: string | null; rows: readonly StoredMessageRow[] }
    | undefined
  >
  protected abstract writeTranscript(input: SaveInput): Promise<SaveOutcome>
  protected abstract readPendingJson(id: string): Promise<string | null | undefined>
  /** Conversations waiting on a request of `kind`, or on request `requestId`, with index rows. */
  protected abstract readHolders(filter: { kind?: string; requestId?: string }): Promise<HolderRow[]>
  /** The stored answer of an applied request, `null`/`undefined` when it is not applied. */
  protected abstract readDecisionJson(requestId: string): Promise<string | null | undefined>
  protected abstract readFailed(): Promise<FailedRow[]>
  protected abstract writeClaim(input: ClaimInput): Promise<ClaimOutcome>
  protected abstract expireClaim(id: string, token: string): Promise<void>
  protected abstract readExpiredClaims(
    limit: number | undefined,
  ): Promise<{ id: string; pending: string; answer: string }[]>
  protected abstract removeConversation(id: string): Promise<void>
  protected abstract writeSnapshot(key: string, body: string, holds: RuntimeHold[] | undefined): Promise<void>
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
    const stored = await this.#use(`read conversation ${JSON.stringify(id)}`, () => this.readTranscript(id))
    if (stored === undefined) return undefined
    const messages = decodeTranscript(id, stored.count, stored.rows)
    this.#cache.remember(id, stored.revision, messages, stored.pendingId)
    return messages
  }

  async save(id: string, messages: Message[], meta?: SaveMeta): Promise<void> {
    checkSave(id, messages, meta)
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
    const reusable = this.#cache.reusablePrefix(id, transcript)
    if (reusable !== undefined && change.mode === "set")
      change.since = sinceOnSet(reusable.pendingId, change.id)
    const input: SaveInput = {
      id,
      transcript,
      pending: change,
      claim: meta?.claim,
      reusable,
      encode: (from = 0) => encodeMessages(id, transcript, from),
    }
    const outcome = await this.#use(`save conversation ${JSON.stringify(id)}`, () =>
      this.writeTranscript(input),
    )
    if ("lostClaim" in outcome) throw lostClaimError(id, outcome.lostClaim)
    this.#writes.record(outcome.stats)
    this.#cache.remember(id, outcome.revision, transcript, outcome.pendingId)
  }

  async getPending(id: string): Promise<Request | undefined> {
    checkKey(id, "the conversation id")
    const json = await this.#use(`read the pending request of ${JSON.stringify(id)}`, () =>
      this.readPendingJson(id),
    )
    if (json == null) return undefined
    return decodeJson<Request>(json, () => `the pending request of conversation ${JSON.stringify(id)}`)
  }

  async findRequest(requestId: string): Promise<PendingEntry | undefined> {
    checkKey(requestId, "the request id")
    const rows = await this.#use(`find request ${JSON.stringify(requestId)}`, () =>
      this.readHolders({ requestId }),
    )
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
    const rows = await this.#use("list pending requests", () =>
      this.readHolders(kind === undefined ? {} : { kind }),
    )
    return pageOf(foldHolders(rows), after, limit)
  }

  async listFailed(opts?: ListFailedOptions): Promise<FailedEntry[]> {
    const limit = resolveLimit(opts?.limit)
    if (limit === 0) return []
    const rows = await this.#use("list failed requests", () => this.readFailed())
    // Folded like pending entries (one per request id), then marked failed with their error.
    const errors = new Map(rows.map((row) => [row.requestId, row.lastError]))
    const open = rows.map((row) => ({
      ...row,
      request: row.request && { ...row.request, state: "open" as const },
    }))
    return foldHolders(open)
      .map(({ state: _open, ...entry }) => {
        const stored = errors.get(entry.request.id)
        const lastError = stored
          ? decodeJson<FailedEntry["lastError"]>(
              stored,
              () => `the last error of request ${entry.request.id}`,
            )
          : { name: "Error", message: "no error was recorded" }
        return { ...entry, state: "failed" as const, lastError }
      })
      .slice(0, limit)
  }

  async getDecision(requestId: string): Promise<AnswerDecision | undefined> {
    checkKey(requestId, "the request id")
    const json = await this.#use(`read the decision on request ${JSON.stringify(requestId)}`, () =>
      this.readDecisionJson(requestId),
    )
    return decisionOf(json ?? null, requestId)
  }

  async claimAnswer(id: string, answer: Answer, opts?: ClaimOptions): Promise<AnswerClaim> {
    checkKey(id, "the conversation id")
    checkAnswer(answer)
    const leaseMs = resolveLeaseMs(opts?.leaseMs)
    const runtimeKey = opts?.runtimeKey
    if (runtimeKey !== undefined) checkKey(runtimeKey, "opts.runtimeKey")
    const input: ClaimInput = {
      id,
      answerId: answer.id,
      answerJson: encodeJson(answer, () => `the answer to request ${JSON.stringify(answer.id)}`),
      token: newClaimToken(),
      leaseMs,
      runtimeKey,
    }
    const outcome = await this.#use(`claim an answer for conversation ${JSON.stringify(id)}`, () =>
      this.writeClaim(input),
    )
    if ("refusal" in outcome) {
      const decision = decisionOf(outcome.decisionJson ?? null, answer.id)
      throw claimRefusalError(outcome.refusal, id, answer.id, {
        runtimeKey: outcome.runtimeKey,
        ...(decision ? { decision } : {}),
      })
    }
    return {
      token: input.token,
      answer: decodeJson<Answer>(outcome.answerJson, () => `the claimed answer of ${JSON.stringify(id)}`),
      request: decodeJson<Request>(outcome.pendingJson, () => `the pending request of ${JSON.stringify(id)}`),
      takeover: outcome.grant === "takeover",
    }
  }

  async releaseClaim(id: string, token: string): Promise<void> {
    checkKey(id, "the conversation id")
    checkKey(token, "the claim token")
    await this.#use(`release a claim on conversation ${JSON.stringify(id)}`, () =>
      this.expireClaim(id, token),
    )
  }

  async listExpiredClaims(opts?: ListExpiredClaimsOptions): Promise<ExpiredClaim[]> {
    const limit = resolveLimit(opts?.limit)
    if (limit === 0) return []
    const rows = await this.#use("list expired claims", () => this.readExpiredClaims(limit))
    return rows.map((row) => ({
      id: row.id,
      request: decodeJson<Request>(row.pending, () => `the pending request of conversation ${row.id}`),
      answer: decodeJson<Answer>(row.answer, () => `the claimed answer of conversation ${row.id}`),
    }))
  }

  async deleteConversation(id: string): Promise<void> {
    checkKey(id, "the conversation id")
    await this.#use(`delete conversation ${JSON.stringify(id)}`, () => this.removeConversation(id))
    this.#cache.forget(id)
  }

  async putSnapshot(key: string, snapshot: unknown, opts?: PutSnapshotOptions): Promise<void> {
    checkKey(key, "the snapshot key")
    const holds = opts?.holds
    if (holds !== undefined) {
      if (!Array.isArray(holds)) throw new ConfigError(`opts.holds must be an array, got ${describe(holds)}`)
      for (const hold of holds) {
        checkKey(hold?.requestId, "a hold's requestId")
        checkKey(hold.conversationId, "a hold's conversationId")
      }
    }
    const body = encodeJson(snapshot, () => `snapshot ${JSON.stringify(key)}`)
    await this.#use(`store snapshot ${JSON.stringify(key)}`, () => this.writeSnapshot(key, body, holds))
  }

  async getSnapshot(key: string): Promise<unknown | undefined> {
    checkKey(key, "the snapshot key")
    const body = await this.#use(`read snapshot ${JSON.stringify(key)}`, () => this.readSnapshot(key))
    if (body == null) return undefined
    return decodeJson(body, () => `snapshot ${JSON.stringify(key)}`)
  }

  async deleteSnapshot(key: string): Promise<void> {
    checkKey(key, "the snapshot key")
    await this.#use(`delete snapshot ${JSON.stringify(key)}`, () => this.removeSnapshot(key))
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    await this.release()
  }

  /** The one wrapper of every primitive: closed check, schema ready, errors typed. */
  async #use<T>(what: string, fn: () => Promise<T>): Promise<T> {
    if (this.#closed) throw closedStoreError(this.storeName)
    await this.ready()
    if (this.#closed) throw closedStoreError(this.storeName)
    try {
      return await fn()
    } catch (error) {
      throw this.storeError(error, what)
    }
  }
}
