import type { ApprovalGrant, GrantQuery } from "../host/approval-grants.js"
import type { Message, Request } from "../types.js"

/** What a save records beside the messages. */
export interface SaveMeta {
  /** The request the conversation halted on, or `null` once it no longer waits. */
  pending?: Request | null
  /**
   * A claim token from a durable store's `claimAnswer`, passed explicitly by whoever holds
   * the claim: the save succeeds only while that claim is held, and consumes it. Stores
   * without claims ignore it.
   */
  claim?: string
  /**
   * A mid-run save of settled tool results (a checkpoint): the pending request is kept and
   * `claim`, when given, fences the save but stays held, to be consumed by the final save.
   */
  checkpoint?: boolean
}

/**
 * A snapshot written by a conversation's final save in the same store call (see
 * `AskOptions.commitSnapshot`): a JSON-serialisable `value` stored under `key`, replacing
 * what was there.
 */
export interface CommittedSnapshot {
  /** The snapshot key. */
  key: string
  /** The JSON-serialisable value. */
  value: unknown
}

/**
 * Where conversations live between calls. Implementations must treat saved message
 * objects as immutable: the loop never mutates a message after appending it, so a store
 * may compare by identity to write only what was appended.
 */
export interface ConversationStore {
  /** The conversation's messages; `undefined` for an unknown id. */
  get(id: string): Promise<Message[] | undefined>
  /** Stores the conversation; `meta` sets or clears its pending request and names a claim. */
  save(id: string, messages: Message[], meta?: SaveMeta): Promise<void>
  /**
   * The request the conversation halted on, if any. Optional: without it `ask` cannot refuse
   * a new prompt to a waiting conversation and `continueRun` needs `pending` passed in.
   */
  getPending?(id: string): Promise<Request | undefined>
  /**
   * True for stores that outlive the process (durable stores): the stored path then
   * checkpoints each turn's settled tool results before the next LLM request by default.
   */
  readonly checkpoints?: boolean
  /**
   * The approval grant (§19, `data.remember`) covering a call of `query.tool` in
   * `query.conversationId`, if any. Optional: durable stores keep grants; without it every
   * call that needs approval asks.
   */
  findApprovalGrant?(query: GrantQuery): Promise<ApprovalGrant | undefined>
  /**
   * Writes conversations' final saves (each as `save` would) and a snapshot in one store call,
   * all or nothing (a durable store: one transaction or script; see `DurableStore.commitResume`).
   * Optional: `commitSnapshot` (`ask`, a stored `continueRun`) needs it, and a store without
   * it is refused with `ConfigError` rather than written twice.
   */
  commitResume?(commit: {
    saves: { id: string; messages: Message[]; meta?: SaveMeta }[]
    snapshot?: CommittedSnapshot
  }): Promise<void>
}

/** The default in-process store: a map of conversation id to a copy of its messages. */
export class MemoryStore implements ConversationStore {
  // Made on the first save: a client made without `store` gets one of these, and a client per
  // run (an approval host's) would otherwise allocate an empty Map per run that nothing reads.
  #conversations: Map<string, { messages: Message[]; pending?: Request }> | undefined
  /** The store this one was moved to (see `moveTo`): every call goes there. */
  #moved: ConversationStore | undefined

  async get(id: string): Promise<Message[] | undefined> {
    if (this.#moved) return this.#moved.get(id)
    return this.#conversations?.get(id)?.messages.slice()
  }

  async save(id: string, messages: Message[], meta?: SaveMeta): Promise<void> {
    if (this.#moved) return this.#moved.save(id, messages, meta)
    this.#conversations ??= new Map()
    const previous = this.#conversations.get(id)
    const pending = meta?.pending === undefined ? previous?.pending : (meta.pending ?? undefined)
    this.#conversations.set(id, { messages: messages.slice(), pending })
  }

  /** The request the conversation halted on, if any. */
  async getPending(id: string): Promise<Request | undefined> {
    if (this.#moved) return this.#moved.getPending?.(id)
    return this.#conversations?.get(id)?.pending
  }

  /**
   * @internal Moves `store`, while it has saved nothing, onto `next`: from then on it reads
   * and writes `next`, so whoever holds it sees what its client now keeps there. `false` when
   * it holds conversations (they would be hidden) or was moved already.
   */
  static moveTo(store: MemoryStore, next: ConversationStore): boolean {
    if (store.#moved !== undefined || (store.#conversations?.size ?? 0) > 0) return false
    store.#moved = next
    return true
  }
}
