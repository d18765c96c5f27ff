import type { Request } from "../types.js"

/**
 * An open request, as an inbox lists it (a durable store's or an engine connection's
 * `listPending`): one entry per request id, however many conversations of a parked tree hold it.
 */
export interface PendingEntry {
  /** The request, as its deepest holder stored it. */
  request: Request
  /** The deepest conversation holding it: the one whose tool asked. */
  conversationId: string
  /** The key of the saved runtime whose tree holds it (see `saveRuntime`), if any. */
  runtimeKey?: string
  /** The holding handle's id segments, for a request parked in a runtime tree. */
  path?: string[]
  /** RFC 3339 time at which the request was first saved as pending. */
  since: string
  /** How many times an answer to it was claimed. */
  attempts: number
  /** `claimed` while an answer is being applied (or its worker died and a sweep is due). */
  state: "open" | "claimed"
}

/**
 * The id of the run that waits on `entry`'s request: the saved runtime's key for a request
 * parked in a tree, else the holding conversation (a store host's run id is its conversation
 * id, which may itself contain `/`). Every door and host reads an entry's run this way.
 *
 * @example
 * runIdOfEntry({ conversationId: "order-7/root/refunds", runtimeKey: "order-7" }) // "order-7"
 * runIdOfEntry({ conversationId: "ada/chat-1" }) // "ada/chat-1"
 */
export function runIdOfEntry(entry: Pick<PendingEntry, "conversationId" | "runtimeKey">): string {
  return entry.runtimeKey ?? entry.conversationId
}
