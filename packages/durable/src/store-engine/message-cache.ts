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
 * or loaded, so a save can tell which stored rows it keeps without reading the stored
 * transcript: it appends after them and drops the rest. Bounded: the least recently used
 * entry goes first.
 */
export class MessageCache {
  readonly #entries = new Map<string, CachedTranscript>()
  readonly #capacity: number

  constructor(capacity = DEFAULT_CAPACITY) {
    this.#capacity = capacity
  }

  /**
   * What `messages` keeps of the remembered transcript, by identity: its revision, how many
   * leading messages are the very same objects (`length`) and how many rows that revision
   * stores (`stored`). Either `messages` starts with all of them, or only the last one was
   * replaced (`length === stored - 1`), as when a resumed run repairs its halted call's
   * placeholder result; anything else is `undefined`, and the backend compares the stored
   * rows instead.
   */
  reusablePrefix(
    id: string,
    messages: readonly Message[],
  ): { revision: number; length: number; stored: number; pendingId: string | null } | undefined {
    const entry = this.#entries.get(id)
    if (entry === undefined) return undefined
    const max = Math.min(entry.messages.length, messages.length)
    let length = 0
    while (length < max && entry.messages[length] === messages[length]) length++
    if (length < entry.messages.length - 1) return undefined
    this.#touch(id, entry)
    return { revision: entry.revision, length, stored: entry.messages.length, pendingId: entry.pendingId }
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
