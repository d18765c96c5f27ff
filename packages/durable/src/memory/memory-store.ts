import type { DurableStore, RuntimeHold } from "../durable-store.js"
import { RELEASED_TOKEN_PREFIX, claimHolderToRead, judgeClaim } from "../store-engine/claim-rules.js"
import { type ConversationRow, nextConversationRow } from "../store-engine/conversation-row.js"
import { byteLength, rewritePlan } from "../store-engine/message-codec.js"
import type { HolderRow, RequestRow } from "../store-engine/request-index.js"
import {
  type CommitOutcome,
  type SnapshotInput,
  type WrittenSave,
  type ClaimFailure,
  type ClaimInput,
  type ClaimOutcome,
  DurableStoreBase,
  type DurableStoreOptions,
  type FailedRow,
  type SaveInput,
  type SaveOutcome,
  type StoredTranscript,
} from "../store-engine/store-base.js"

/**
 * @internal A conversation as the memory store keeps it: the SQL backends' row, with its
 * messages as the JSON bodies the codec wrote (so every read parses fresh objects, and a
 * corrupt body behaves as on disk).
 */
export interface MemoryConversation extends Omit<ConversationRow, "revision" | "messageCount" | "updatedAt"> {
  /** The transcript's version: a fresh value of the store's clock at each save. */
  version: number
  bodies: string[]
}

/** @internal A request index row as the memory store keeps it. */
export interface MemoryRequest extends Omit<RequestRow, "requestId"> {
  lastError: string | null
}

/**
 * @internal What a memory store holds. Stores made on the same data behave like processes
 * sharing one database (each keeps its own transcript cache); the contract suite uses that.
 */
export class MemoryData {
  readonly conversations = new Map<string, MemoryConversation>()
  readonly requests = new Map<string, MemoryRequest>()
  readonly snapshots = new Map<string, string>()
  /**
   * The conversations waiting on each request id (the SQL backends' index on `pending_id`), so
   * finding a request's holders does not read every conversation.
   */
  readonly holders = new Map<string, Set<string>>()
  /** The open requests each parked runtime's snapshot holds (the index on `runtime_key`). */
  readonly held = new Map<string, Set<string>>()
  /** Versions only grow, across conversations too: a recreated conversation never reuses one. */
  clock = 0

  /** Moves conversation `id` from the holders of `from` to those of `to` (either may be none). */
  rehold(id: string, from: string | null | undefined, to: string | null | undefined): void {
    if (from === to) return
    if (from != null) {
      const set = this.holders.get(from)
      set?.delete(id)
      if (set?.size === 0) this.holders.delete(from)
    }
    if (to != null) {
      const set = this.holders.get(to)
      if (set) set.add(id)
      else this.holders.set(to, new Set([id]))
    }
  }
}

/**
 * @internal The memory backend of {@link DurableStoreBase}: the same claims, request index,
 * decisions and sweeps as SQLite, PostgreSQL and Redis, on maps. Every primitive runs to its
 * end without awaiting, so each is atomic; the claim decision is `judgeClaim`'s, as everywhere.
 */
export class MemoryStore extends DurableStoreBase {
  protected readonly storeName = "MemoryStore"
  // Nothing to wait on: no deadline timer is needed around a primitive.
  protected override readonly blocking = true
  readonly #data: MemoryData

  constructor(options: DurableStoreOptions = {}, data: MemoryData = new MemoryData()) {
    super(options, "MemoryStore")
    this.#data = data
  }

  protected async ready(): Promise<void> {}

  protected async release(): Promise<void> {}

  protected async readTranscript(id: string): Promise<StoredTranscript | undefined> {
    const conv = this.#data.conversations.get(id)
    return conv && transcriptOf(conv)
  }

  protected async writeTranscript(input: SaveInput): Promise<SaveOutcome> {
    return this.#writeTranscript(input)
  }

  /** The save itself, run to its end: `writeCommit` calls it with no promise per save. */
  #writeTranscript(input: SaveInput): SaveOutcome {
    const { id, claim, reusable } = input
    const data = this.#data
    const previous = data.conversations.get(id)
    if (claim !== undefined) {
      const lost = this.#lostClaim(id, claim)
      if (lost !== undefined) return { lostClaim: lost }
    }
    const now = Date.now()
    // A checkpoint is fenced by the claim but leaves it held: only the final save consumes it.
    const consumed = input.checkpoint ? undefined : claim
    const next = nextConversationRow(
      previous && rowOf(previous),
      input.transcript.length,
      input.pending,
      consumed,
      now,
    )
    const stored = previous?.bodies ?? []
    let keep: number
    let bodies: string[]
    let read = 0
    if (previous === undefined) {
      // A new conversation (a chat's first turn): nothing stored to compare with or keep.
      keep = 0
      bodies = input.encode()
    } else if (reusable !== undefined && reusable.revision === previous.version) {
      keep = reusable.length
      bodies = input.encode(keep)
    } else {
      const plan = rewritePlan(
        stored.map((body, seq) => ({ seq, body })),
        input.encode(),
      )
      read = stored.length
      keep = plan.keep
      bodies = plan.bodies
    }
    for (const body of bodies) flatten(body)
    if (next.pending !== null) flatten(next.pending)
    const version = ++data.clock
    data.rehold(id, previous?.pendingId, next.pendingId)
    data.conversations.set(id, {
      version,
      bodies: previous === undefined ? bodies : stored.slice(0, keep).concat(bodies),
      pending: next.pending,
      pendingId: next.pendingId,
      pendingKind: next.pendingKind,
      pendingSince: next.pendingSince,
      consumedId: next.consumedId,
      claimToken: next.claimToken,
      claimRequestId: next.claimRequestId,
      createdAt: next.createdAt,
    })
    const request = consumed === undefined ? undefined : data.requests.get(previous?.claimRequestId ?? "")
    if (request !== undefined) {
      // A consumed claim leaves its answer as the request's decision.
      request.state = "applied"
      request.claimToken = null
      request.claimExpiresAt = null
    }
    return {
      revision: version,
      pendingId: next.pendingId,
      stats: {
        messageRowsWritten: bodies.length,
        messageBytesWritten: byteLength(bodies),
        messageRowsDeleted: Math.max(0, stored.length - keep),
        messageRowsRead: read,
      },
    }
  }

  /** The request a save fenced by `claim` would report lost; `undefined` while the claim is held. */
  #lostClaim(id: string, claim: string): string | null | undefined {
    const previous = this.#data.conversations.get(id)
    const held =
      previous?.claimRequestId == null ? undefined : this.#data.requests.get(previous.claimRequestId)
    if (previous?.claimToken === claim && held?.claimToken === claim) return undefined
    return previous?.claimRequestId ?? previous?.pendingId ?? null
  }

  /**
   * Every save and the snapshot, after checking every claim first: each primitive runs to its
   * end without awaiting, so started one after the other nothing interleaves with them.
   */
  protected async writeCommit(
    saves: SaveInput[],
    snapshot: SnapshotInput | undefined,
  ): Promise<CommitOutcome> {
    for (const input of saves) {
      const lost = input.claim === undefined ? undefined : this.#lostClaim(input.id, input.claim)
      if (lost !== undefined) return { lostClaim: { id: input.id, requestId: lost } }
    }
    // Synchronous, one after the other: no promise per save, no `Promise.all` a turn.
    const outcomes: WrittenSave[] = []
    for (const input of saves) outcomes.push(this.#writeTranscript(input) as WrittenSave)
    if (snapshot !== undefined) this.#writeSnapshot(snapshot.key, snapshot.body, snapshot.holds)
    return outcomes
  }

  protected async readPendingJson(id: string): Promise<string | null | undefined> {
    return this.#data.conversations.get(id)?.pending
  }

  protected async readHolders(filter: { kind?: string; requestId?: string }): Promise<HolderRow[]> {
    const rows: HolderRow[] = []
    const { conversations, holders } = this.#data
    // One request's holders from its index; a listing reads every conversation, as SQL scans.
    const ids = filter.requestId === undefined ? conversations.keys() : (holders.get(filter.requestId) ?? [])
    for (const id of ids) {
      const conv = conversations.get(id)
      if (conv === undefined) continue
      if (conv.pendingId === null || conv.pending === null) continue
      if (filter.requestId !== undefined && conv.pendingId !== filter.requestId) continue
      if (filter.kind !== undefined && conv.pendingKind !== filter.kind) continue
      rows.push(this.#holderOf(id, conv))
    }
    return rows
  }

  protected async readDecisionJson(requestId: string): Promise<string | null | undefined> {
    const request = this.#data.requests.get(requestId)
    return request?.state === "applied" ? request.claimAnswer : undefined
  }

  protected async readFailed(): Promise<FailedRow[]> {
    const rows: FailedRow[] = []
    for (const [id, conv] of this.#data.conversations) {
      const request = conv.pendingId === null ? undefined : this.#data.requests.get(conv.pendingId)
      if (request?.state !== "failed") continue
      rows.push({ ...this.#holderOf(id, conv), lastError: request.lastError })
    }
    return rows
  }

  protected async writeClaim(input: ClaimInput): Promise<ClaimOutcome> {
    const { id, answerId } = input
    const data = this.#data
    const conv = data.conversations.get(id)
    const request = data.requests.get(answerId)
    const holderId = claimHolderToRead(request, id)
    const holderPendingId =
      holderId === undefined
        ? (conv?.pendingId ?? null)
        : (data.conversations.get(holderId)?.pendingId ?? null)
    const now = Date.now()
    const judged = judgeClaim(
      {
        conversation: conv && {
          pendingJson: conv.pending,
          pendingId: conv.pendingId,
          consumedId: conv.consumedId,
        },
        // Object.assign: a key added after a spread is defined through the runtime.
        request: request && Object.assign({}, request, { claimHolderPendingId: holderPendingId }),
        now,
      },
      input,
    )
    if (judged.write === "fail" && request !== undefined) {
      request.state = "failed"
      request.lastError = input.exhaustedErrorJson()
    }
    if (judged.write !== "grant") return judged.outcome
    const claimed = request ?? emptyRequest()
    claimed.state = "claimed"
    claimed.attempts += 1
    claimed.claimToken = input.token
    claimed.claimConversationId = id
    claimed.claimAnswer = judged.answerJson
    claimed.claimExpiresAt = judged.claimExpiresAt
    data.requests.set(answerId, claimed)
    const waiting = conv as MemoryConversation
    waiting.claimToken = input.token
    waiting.claimRequestId = answerId
    // Pointing the claim changes neither the version nor the messages.
    return Object.assign({}, judged.outcome, { transcript: transcriptOf(waiting) })
  }

  protected async expireClaim(id: string, token: string, failure?: ClaimFailure): Promise<void> {
    const request = this.#claimOf(id, token)
    if (request === undefined) return
    if (failure !== undefined && request.state !== "claimed") return
    const now = Date.now()
    // Never later: releasing an already expired claim must not make it look freshly expired.
    request.claimExpiresAt = Math.min(request.claimExpiresAt ?? now, now)
    // The token is revoked: the holder's renew and fenced save fail from now on, while the
    // claim keeps its answer for the takeover.
    request.claimToken = `${RELEASED_TOKEN_PREFIX}${token}`
    if (failure === undefined) return
    request.lastError = failure.errorJson
    if (request.attempts >= failure.maxAttempts) request.state = "failed"
  }

  protected async renewLease(id: string, token: string, leaseMs: number): Promise<boolean> {
    const request = this.#claimOf(id, token)
    if (request?.state !== "claimed") return false
    request.claimExpiresAt = Date.now() + leaseMs
    return true
  }

  protected async reopenRequest(requestId: string): Promise<string | null> {
    const request = this.#data.requests.get(requestId)
    if (request?.state !== "failed") return null
    // Expired at once: the next delivery takes it over with the stored decision.
    request.state = "claimed"
    request.attempts = 0
    request.claimExpiresAt = 0
    return request.claimAnswer
  }

  protected async readExpiredClaims(
    limit: number | undefined,
  ): Promise<{ id: string; pending: string; answer: string }[]> {
    const now = Date.now()
    const expired: { id: string; pending: string; answer: string; at: number; requestId: string }[] = []
    for (const [requestId, request] of this.#data.requests) {
      if (request.state !== "claimed" || request.claimToken === null || (request.claimExpiresAt ?? 0) > now)
        continue
      const id = request.claimConversationId
      const conv = id === null ? undefined : this.#data.conversations.get(id)
      if (id === null || conv?.pendingId !== requestId || conv.pending === null) continue
      expired.push({
        id,
        pending: conv.pending,
        answer: request.claimAnswer ?? "null",
        at: request.claimExpiresAt ?? 0,
        requestId,
      })
    }
    expired.sort(
      (a, b) => a.at - b.at || (a.requestId < b.requestId ? -1 : a.requestId > b.requestId ? 1 : 0),
    )
    return expired.slice(0, limit).map(({ id, pending, answer }) => ({ id, pending, answer }))
  }

  protected async removeConversation(id: string): Promise<void> {
    const data = this.#data
    const conv = data.conversations.get(id)
    // The conversation's open request goes with it unless another conversation still holds
    // it; an applied request keeps its decision.
    const ids = new Set<string>()
    if (conv?.pendingId != null) ids.add(conv.pendingId)
    for (const [requestId, request] of data.requests)
      if (request.claimConversationId === id) ids.add(requestId)
    data.rehold(id, conv?.pendingId, null)
    for (const requestId of ids) {
      const request = data.requests.get(requestId)
      if (request?.state === "applied") continue
      if (data.holders.has(requestId)) continue // held elsewhere
      if (request?.runtimeKey != null) data.held.get(request.runtimeKey)?.delete(requestId)
      data.requests.delete(requestId)
    }
    data.conversations.delete(id)
  }

  protected async writeSnapshot(key: string, body: string, holds: RuntimeHold[] | undefined): Promise<void> {
    this.#writeSnapshot(key, body, holds)
  }

  #writeSnapshot(key: string, body: string, holds: RuntimeHold[] | undefined): void {
    const data = this.#data
    data.snapshots.set(key, flatten(body))
    if (holds === undefined) return
    const before = data.held.get(key)
    const now = new Set<string>()
    for (const requestId of before ?? []) {
      const request = data.requests.get(requestId)
      if (request?.runtimeKey !== key || (request.state !== "open" && request.state !== "claimed")) continue
      request.runtimeKey = null
      request.conversationId = null
      request.path = null
    }
    for (const hold of holds) {
      const request = data.requests.get(hold.requestId) ?? emptyRequest()
      if (request.state !== "open" && request.state !== "claimed") continue
      // A request moving here from another runtime's snapshot leaves that one's index.
      if (request.runtimeKey !== null && request.runtimeKey !== key)
        data.held.get(request.runtimeKey)?.delete(hold.requestId)
      request.runtimeKey = key
      request.conversationId = hold.conversationId
      request.path = hold.path ? JSON.stringify(hold.path) : null
      data.requests.set(hold.requestId, request)
      now.add(hold.requestId)
    }
    if (now.size > 0) data.held.set(key, now)
    else data.held.delete(key)
  }

  protected async insertSnapshot(key: string, body: string): Promise<boolean> {
    if (this.#data.snapshots.has(key)) return false
    this.#data.snapshots.set(key, flatten(body))
    return true
  }

  protected async readSnapshot(key: string): Promise<string | undefined> {
    return this.#data.snapshots.get(key)
  }

  protected async removeSnapshot(key: string): Promise<void> {
    const data = this.#data
    data.snapshots.delete(key)
    // The index keeps only what a later snapshot under this key must still clear: open requests.
    const held = data.held.get(key)
    if (held === undefined) return
    for (const requestId of held) {
      const state = data.requests.get(requestId)?.state
      if (state !== "open" && state !== "claimed") held.delete(requestId)
    }
    if (held.size === 0) data.held.delete(key)
  }

  /** The request whose live or released claim `token` took through conversation `id`. */
  #claimOf(id: string, token: string): MemoryRequest | undefined {
    // Almost always the request the conversation points at: a heartbeat needs no scan.
    const pointed = this.#data.requests.get(this.#data.conversations.get(id)?.claimRequestId ?? "")
    if (pointed?.claimConversationId === id && pointed.claimToken === token) return pointed
    for (const request of this.#data.requests.values()) {
      if (request.claimConversationId === id && request.claimToken === token) return request
    }
    return undefined
  }

  #holderOf(id: string, conv: MemoryConversation): HolderRow {
    const request = this.#data.requests.get(conv.pendingId as string)
    return {
      conversationId: id,
      requestId: conv.pendingId as string,
      pending: conv.pending as string,
      sinceMs: conv.pendingSince ?? conv.createdAt,
      request: request
        ? {
            state: request.state,
            runtimeKey: request.runtimeKey,
            conversationId: request.conversationId,
            path: request.path,
            attempts: request.attempts,
          }
        : null,
    }
  }
}

/**
 * `text` as one string: a `JSON.stringify` result of more than a few dozen characters is a
 * tree of the builder's parts and their joins, which a kept body would hold for as long as the
 * store does (a 300-character run record: 480 heap bytes instead of 320, and three more
 * objects for every GC to mark). Reading a character makes V8 flatten it in place; the GC then
 * drops the tree.
 */
function flatten(text: string): string {
  text.charCodeAt(0)
  return text
}

function transcriptOf(conv: MemoryConversation): StoredTranscript {
  return {
    revision: conv.version,
    count: conv.bodies.length,
    pendingId: conv.pendingId,
    rows: conv.bodies.map((body, seq) => ({ seq, body })),
  }
}

function rowOf(conv: MemoryConversation): ConversationRow {
  return {
    revision: conv.version,
    messageCount: conv.bodies.length,
    pending: conv.pending,
    pendingId: conv.pendingId,
    pendingKind: conv.pendingKind,
    pendingSince: conv.pendingSince,
    consumedId: conv.consumedId,
    claimToken: conv.claimToken,
    claimRequestId: conv.claimRequestId,
    createdAt: conv.createdAt,
    updatedAt: conv.createdAt,
  }
}

function emptyRequest(): MemoryRequest {
  return {
    state: "open",
    runtimeKey: null,
    conversationId: null,
    path: null,
    attempts: 0,
    claimToken: null,
    claimConversationId: null,
    claimAnswer: null,
    claimExpiresAt: null,
    lastError: null,
  }
}

/**
 * A {@link DurableStore} in this process's memory: claims, the request index, decisions,
 * leases, attempts and sweeps behave as on SQLite, PostgreSQL and Redis (it passes the same
 * `describeStoreContract` suite), but nothing outlives the process. Loads no driver. For
 * tests, demos and single-process hosts that want exactly-once answers without a database.
 *
 * @example
 * const store = createMemoryStore()
 * const client = createClient({ ...llm, style: "openai", store })
 * // … a run halts on request "r-1"; later, once, even if delivered twice:
 * await askWithAnswer(client, { id: "chat-1", answer: { id: "r-1", ok: true } })
 */
export function createMemoryStore(options?: DurableStoreOptions): DurableStore {
  return new MemoryStore(options)
}
