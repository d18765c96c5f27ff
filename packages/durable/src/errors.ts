import { StoreError, ToolnexusError } from "@toolnexus/core"

/**
 * A request is held by a saved runtime's tree, so it cannot be answered as a plain
 * conversation: replaying a handle's transcript with a bare client would run it without its
 * tools or its parents. Deliver the answer with `deliverAnswer(store, answer, { runtime })`
 * or `resumeRuntime(store, runtimeKey, answer, opts)`. Nothing was claimed or changed.
 */
export class RuntimeHeldError extends ToolnexusError {
  /**
   * Always `"RuntimeHeldError"`, so `err.name === "RuntimeHeldError"` identifies it; its `code` is
   * `"TNX_RUNTIME_HELD"`, which `RuntimeHeldError.isInstance(err)` checks across package copies.
   */
  override readonly name = "RuntimeHeldError"
  static override readonly family = "TNX_RUNTIME_HELD"
  /** The id of the request the answer was for (`answer.id`). */
  readonly requestId: string
  /**
   * The key the runtime holding the request was saved under (`saveRuntime(store, key, rt)`);
   * pass it to `resumeRuntime`.
   */
  readonly runtimeKey: string
  /** The id of the conversation (one of that runtime's handles) waiting on the request. */
  readonly conversationId: string
  constructor(requestId: string, runtimeKey: string, conversationId: string) {
    super(
      "TNX_RUNTIME_HELD",
      `request ${requestId} (conversation ${JSON.stringify(conversationId)}) is held by the saved runtime ` +
        `${JSON.stringify(runtimeKey)}: answer it with deliverAnswer(store, answer, { runtime }) or ` +
        `resumeRuntime(store, ${JSON.stringify(runtimeKey)}, answer, opts)`,
    )
    this.requestId = requestId
    this.runtimeKey = runtimeKey
    this.conversationId = conversationId
  }
}

/** Which stored row a {@link CorruptDataError} or an `onCorrupt` report is about. */
export interface CorruptRow {
  /** The table (SQL) or key family (Redis) holding it: `tnx_conversations`, `tnx_messages`, `tnx_requests`, `tnx_snapshots`. */
  table: string
  /** The row's key: a conversation id, request id or snapshot key. */
  key: string
}

/**
 * A stored row cannot be read back (not JSON, or not the shape it must have). A direct read
 * of it throws this; listings and sweeps skip it, leave it untouched and report it through
 * the store option `onCorrupt`. It is a `StoreError` (code `TNX_STORE`).
 */
export class CorruptDataError extends StoreError {
  /** The table (SQL) or key family (Redis) of the unreadable row, as in {@link CorruptRow.table}. */
  readonly table: string
  /** The unreadable row's key: a conversation id, request id or snapshot key. */
  readonly key: string
  constructor(row: CorruptRow, problem: string, options?: { cause?: unknown }) {
    super(`corrupt row in ${row.table} (key ${JSON.stringify(row.key)}): ${problem}`, options)
    // StoreError fixes \`name\` as a literal; a subclass still names itself.
    Object.defineProperty(this, "name", { value: "CorruptDataError", enumerable: true })
    this.table = row.table
    this.key = row.key
  }
}

/**
 * A resume lost its claim mid-run: a renewal found it taken over, or could not reach the
 * store before the lease ran out. The run was aborted through its `AbortSignal` before any
 * further tool or LLM call, and nothing it still had to save was written; the decision stays
 * with the claim, so a redelivery or a sweep completes the run.
 */
export class ClaimLostError extends ToolnexusError {
  /**
   * Always `"ClaimLostError"`, so `err.name === "ClaimLostError"` identifies it; its `code` is
   * `"TNX_CLAIM_LOST"`, which `ClaimLostError.isInstance(err)` checks across package copies.
   */
  override readonly name = "ClaimLostError"
  static override readonly family = "TNX_CLAIM_LOST"
  /** The id of the request whose claim was lost (the answer being applied). */
  readonly requestId: string
  /** The id of the conversation the claim was taken on, whose resume was aborted. */
  readonly conversationId: string
  constructor(requestId: string, conversationId: string, detail: string, options?: { cause?: unknown }) {
    super(
      "TNX_CLAIM_LOST",
      `the claim on request ${requestId} (conversation ${JSON.stringify(conversationId)}) was lost: ${detail}; ` +
        "the resume stopped before any further tool or LLM call",
      options,
    )
    this.requestId = requestId
    this.conversationId = conversationId
  }
}

/**
 * `saveRuntime` found that the tree would overwrite conversations of another runtime (or of a
 * plain conversation) sharing the store: a handle's conversation waits on a request this tree
 * does not hold, or a request it holds is already saved with another runtime. Runtimes given
 * the same `namespace` do that; without one each runtime gets a unique namespace. Nothing
 * was written.
 */
export class RuntimeCollisionError extends ToolnexusError {
  /**
   * Always `"RuntimeCollisionError"`, so `err.name === "RuntimeCollisionError"` identifies it; its `code` is
   * `"TNX_RUNTIME_COLLISION"`, which `RuntimeCollisionError.isInstance(err)` checks across package copies.
   */
  override readonly name = "RuntimeCollisionError"
  static override readonly family = "TNX_RUNTIME_COLLISION"
  /** The key `saveRuntime` was called with, whose save was refused. */
  readonly runtimeKey: string
  /** The id of the conversation the save would have overwritten. */
  readonly conversationId: string
  /**
   * The id of the colliding request: the one that conversation waits on but the tree does not
   * hold, or the one the tree holds that is saved with another runtime key.
   */
  readonly requestId: string
  constructor(runtimeKey: string, conversationId: string, requestId: string, detail: string) {
    super(
      "TNX_RUNTIME_COLLISION",
      `saveRuntime(store, ${JSON.stringify(runtimeKey)}) refused, nothing was written: conversation ` +
        `${JSON.stringify(conversationId)} ${detail}; the tree shares its namespace with another runtime. ` +
        "Create each runtime without `namespace` (it gets a unique one) or give each its own, and answer " +
        `request ${requestId} with deliverAnswer(store, answer, opts)`,
    )
    this.runtimeKey = runtimeKey
    this.conversationId = conversationId
    this.requestId = requestId
  }
}
