/**
 * What a store wrote and read for transcripts since it was created, counted after
 * each committed save. Lets tests check that a save costs O(new messages), not O(history).
 */
export interface WriteStats {
  /** Committed saves. */
  saves: number
  /** Message rows (or list entries) written. */
  messageRowsWritten: number
  /** UTF-8 bytes of message JSON written. */
  messageBytesWritten: number
  /** Stored messages deleted because the new transcript differs from them. */
  messageRowsDeleted: number
  /** Stored messages read by saves to find what changed (zero on the fast path). */
  messageRowsRead: number
}

/** @internal Accumulates {@link WriteStats}. */
export class WriteCounter {
  readonly #stats: WriteStats = {
    saves: 0,
    messageRowsWritten: 0,
    messageBytesWritten: 0,
    messageRowsDeleted: 0,
    messageRowsRead: 0,
  }

  /** Adds one committed save. */
  record(save: Omit<WriteStats, "saves">): void {
    this.#stats.saves++
    this.#stats.messageRowsWritten += save.messageRowsWritten
    this.#stats.messageBytesWritten += save.messageBytesWritten
    this.#stats.messageRowsDeleted += save.messageRowsDeleted
    this.#stats.messageRowsRead += save.messageRowsRead
  }

  /** A copy of the totals. */
  snapshot(): WriteStats {
    return { ...this.#stats }
  }
}

/** @internal The write stats of a store built by this package; throws for any other object. */
export function readWriteStats(store: object): WriteStats {
  const stats = (store as { stats?: unknown }).stats
  if (typeof stats !== "object" || stats === null) throw new TypeError("this store does not count its writes")
  return stats as WriteStats
}
