import type { Message } from "@toolnexus/core"

interface CachedTranscript {
  revision: number
  messages: readonly Message[]
  /** The id of the request pending at that revision. */
  pendingId: string | null
}

/** The default number of conversations a store remembers. */
const DEFAULT_CAPACITY = 1000

/**
 * @internal Remembers, per conversation, the revision and the message objects last saved
 * or loaded, so a save whose array starts with exactly those objects can append the tail
 * without reading the stored transcript. Bounded: the least recently used entry goes first.
 */
export class MessageCache {
  readonly #entries = new Map<string, CachedTranscript>()
  readonly #capacity: number

  constructor(capacity = DEFAULT_CAPACITY) {
    this.#capacity = capacity
  }

  /**
   * The revision and length of the remembered transcript when `messages` starts with the very
   * same objects (identity, not equality); `undefined` otherwise.
   */
  reusablePrefix(
    id: string,
    messages: readonly Message[],
  ): { revision: number; length: number; pendingId: string | null } | undefined {
    const entry = this.#entries.get(id)
    if (entry === undefined || entry.messages.length > messages.length) return undefined
    for (let i = 0; i < entry.messages.length; i++) {
      if (entry.messages[i] !== messages[i]) return undefined
    }
    this.#touch(id, entry)
    return { revision: entry.revision, length: entry.messages.length, pendingId: entry.pendingId }
  }

  /** Records what storage holds at `revision`; an older revision never replaces a newer one. */
  remember(id: string, revision: number, messages: readonly Message[], pendingId: string | null): void {
    const entry = this.#entries.get(id)
    // Concurrent saves may finish out of order; the cache must not go back in time.
    if (entry !== undefined && entry.revision > revision) return
    this.#touch(id, { revision, messages: messages.slice(), pendingId })
  }

  /** Drops what is remembered about a conversation (it was deleted). */
  forget(id: string): void {
    this.#entries.delete(id)
  }

  #touch(id: string, entry: CachedTranscript): void {
    // Re-inserting moves the key to the end of the Map's insertion order: the newest end.
    this.#entries.delete(id)
    this.#entries.set(id, entry)
    if (this.#entries.size > this.#capacity) {
      const oldest = this.#entries.keys().next().value
      if (oldest !== undefined) this.#entries.delete(oldest)
    }
  }
}
