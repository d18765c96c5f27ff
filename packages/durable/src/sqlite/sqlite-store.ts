import { dirname } from "node:path"
import { ConfigError, type Request } from "@toolnexus/core"
import type BetterSqlite3 from "better-sqlite3"
import type { RuntimeHold } from "../durable-store.js"
import { RELEASED_TOKEN_PREFIX, claimHolderToRead, judgeClaim } from "../store-engine/claim-rules.js"
import { type ConversationRow, nextConversationRow } from "../store-engine/conversation-row.js"
import { LazyInit } from "../store-engine/lazy-init.js"
import { loadDriver, preloadDriver } from "../store-engine/load-driver.js"
import { byteLength, rewritePlan, type StoredMessageRow } from "../store-engine/message-codec.js"
import { checkExactlyOne, checkKey } from "../store-engine/option-checks.js"
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
import { toStoreError } from "../store-engine/store-errors.js"
import { migrateSqlite } from "./migrate-sqlite.js"
import { SQLITE_MIGRATIONS } from "./migrations.js"
import { nativeBinding } from "./native-binding.js"
import { packPending, stampedRequest, unpackPending } from "./pending-column.js"
import type { SqliteDatabase } from "./sqlite-database.js"

// From process.getBuiltinModule, not an ESM import: the first ESM import of node:fs builds its
// facade, which reads every export and so loads fs streams (~30 M instructions on Node 24).
const { mkdirSync } = process.getBuiltinModule("node:fs")

preloadDriver("better-sqlite3")

type Database = BetterSqlite3.Database
type Statement = BetterSqlite3.Statement

/**
 * Options of {@link SqliteStore}: exactly one of `path` and `db`. With `path`, `opTimeoutMs`
 * is also the connection's busy timeout (how long a write waits for another process's lock).
 */
export interface SqliteStoreOptions extends DurableStoreOptions {
  /**
   * A database file (created when missing, with its folder, opened in WAL mode with `synchronous = NORMAL`:
   * commits survive a process crash, a power loss may take back the last ones) or `":memory:"`.
   */
  path?: string
  /** An open better-sqlite3 database owned by the caller: `close()` leaves it open. */
  db?: SqliteDatabase
  /** @internal The migration list; tests pass a longer one to exercise an upgrade. */
  migrations?: readonly string[]
}

/**
 * A conversation row as SQLite returns it. `revision` plus the number of stored messages is
 * the transcript's version: a save that only appends messages leaves the row alone, and a save
 * that writes it sets `revision` to the previous version plus one, so versions only grow.
 */
interface SqliteConversationRow {
  /** The integer key its messages are stored under. */
  conversation_key: number
  id: string
  revision: number
  pending: string | null
  pending_id: string | null
  pending_kind: string | null
  pending_since: number | null
  consumed_id: string | null
  claim_token: string | null
  claim_request_id: string | null
  claim_answer: string | null
  claim_expires_at: number | null
  created_at: number
}

/** A row of the transcript statement: the conversation's columns with each of its messages. */
interface TranscriptRow {
  revision: number
  pending_id: string | null
  seq: number | null
  body: string | null
}

/**
 * A row of the claim's read, raw (`Statement#raw`): the conversation's columns, its request
 * index row (all NULL when there is none) and one of its messages (`seq`/`body` NULL when it
 * has none), at the positions `C` names.
 */
type ClaimReadRaw = [
  revision: number,
  pending: string | null,
  pending_id: string | null,
  pending_kind: string | null,
  consumed_id: string | null,
  request_id: string | null,
  state: SqliteRequestRow["state"],
  runtime_key: string | null,
  attempts: number,
  claim_token: string | null,
  claim_conversation_id: string | null,
  claim_answer: string | null,
  claim_expires_at: number | null,
  seq: number | null,
  body: string | null,
]

/** A request index row as SQLite returns it. */
interface SqliteRequestRow {
  request_id: string
  state: RequestRow["state"]
  runtime_key: string | null
  conversation_id: string | null
  path: string | null
  attempts: number
  claim_token: string | null
  claim_conversation_id: string | null
  claim_answer: string | null
  claim_expires_at: number | null
  last_error: string | null
}

/** A holder row as the listing statements return it. */
type SqliteHolderRow = {
  id: string
  pending: string
  pending_id: string
  pending_kind: string | null
  pending_since: number | null
  created_at: number
} & Partial<
  Pick<SqliteRequestRow, "state" | "runtime_key" | "conversation_id" | "path" | "attempts" | "last_error">
>

type Statements = ReturnType<typeof prepareStatements>

const STORE = "SqliteStore"

/**
 * A {@link DurableStore} in a SQLite database through better-sqlite3: one row per message,
 * so a save appends only the new messages. Suits one machine; several processes may share
 * the file.
 */
export class SqliteStore extends DurableStoreBase {
  protected readonly storeName = STORE
  protected override readonly blocking = true
  readonly #init: LazyInit<Statements>
  readonly #ownsDb: boolean
  #db: Database | undefined
  #sql: Statements | undefined
  // The two transactions of every resume and turn, wrapped once (better-sqlite3 builds a
  // transaction's wrappers anew on each `db.transaction` call).
  #save: ((input: SaveInput) => SaveOutcome) | undefined
  #claim: ((input: ClaimInput) => ClaimOutcome) | undefined

  constructor(options: SqliteStoreOptions) {
    super(options, STORE)
    const source = checkExactlyOne(options as Record<string, unknown>, ["path", "db"], STORE)
    const migrations = options.migrations ?? SQLITE_MIGRATIONS
    if (!Array.isArray(migrations) || migrations.some((m) => typeof m !== "string")) {
      throw new ConfigError(`${STORE} option \`migrations\` must be an array of SQL strings`)
    }
    let open: () => Database
    let where: string
    if (source === "path") {
      checkKey(options.path, `${STORE} option \`path\``)
      const path = options.path
      const Driver = loadDriver<typeof BetterSqlite3>("better-sqlite3", STORE)
      this.#ownsDb = true
      where = path === ":memory:" ? "an in-memory SQLite database" : `SQLite database ${path}`
      open = () => {
        if ("error" in nativeBinding) throw nativeBinding.error
        const timeout = this.opTimeoutMs
        // better-sqlite3 takes the addon object itself; @types/better-sqlite3 declares only a path.
        const options = (
          "addon" in nativeBinding ? { timeout, nativeBinding: nativeBinding.addon } : { timeout }
        ) as BetterSqlite3.Options
        // The file's folder is made as the file is: a fresh `./data/runs.db` works at first use.
        if (path !== ":memory:" && !path.startsWith("file:")) mkdirSync(dirname(path), { recursive: true })
        const db = new Driver(path, options)
        if (path !== ":memory:") {
          // WAL lets readers in other processes proceed while a save commits. In WAL mode
          // `synchronous = NORMAL` syncs at checkpoints, not at every commit: a commit survives
          // a crash of the process (claims and checkpoints included) and the database stays
          // consistent; only a power loss can take back the last commits. A host that wants a
          // sync per commit passes its own `db` opened with `synchronous = FULL`.
          db.pragma("journal_mode = WAL")
          db.pragma("synchronous = NORMAL")
        }
        return db
      }
    } else {
      this.#ownsDb = false
      ;({ open, where } = givenDatabase(options.db))
    }
    this.#init = new LazyInit(async () => {
      try {
        this.#db ??= open()
        migrateSqlite(this.#db, migrations, `the toolnexus schema of ${where}`)
        return prepareStatements(this.#db)
      } catch (error) {
        throw toStoreError(error, `${STORE} could not open ${where}`)
      }
    })
  }

  protected async ready(): Promise<void> {
    this.#sql = await this.#init.get()
  }

  get #s(): Statements {
    return this.#sql as Statements
  }

  /**
   * Reads conversation `id`'s row and its message rows in one statement (one snapshot);
   * `undefined` when no such conversation is stored.
   */
  protected async readTranscript(id: string) {
    // One statement reads the row and its messages from one snapshot: no transaction needed.
    const rows = this.#s.transcript.all(id) as TranscriptRow[]
    const row = rows[0]
    if (row === undefined) return undefined
    const messages = row.seq === null ? [] : (rows as StoredMessageRow[])
    return {
      /**
       * The conversation's revision as read (the row's `revision` plus its message count); prefix-reuse
       * saves are checked against it.
       */
      revision: row.revision + messages.length,
      /** How many message rows were read. */
      count: messages.length,
      /** The id of the request the conversation waits on; `null` when it waits on none. */
      pendingId: row.pending_id,
      /** The message rows in `seq` order; empty when the conversation has no messages. */
      rows: messages,
    }
  }

  /**
   * Saves a transcript as `input` describes, in one immediate transaction (nothing else
   * writes meanwhile); a fenced save whose claim is gone reports `lostClaim`.
   */
  protected async writeTranscript(input: SaveInput): Promise<SaveOutcome> {
    this.#save ??= immediateTransaction(this.#s.db, (input: SaveInput) => this.#saveLocked(this.#s, input))
    return this.#save(input)
  }

  /** The body of a save, inside an immediate transaction: nothing else writes meanwhile. */
  #saveLocked(s: Statements, input: SaveInput): SaveOutcome {
    const { claim, reusable } = input
    if (
      claim !== undefined &&
      input.checkpoint &&
      reusable !== undefined &&
      reusable.length < reusable.stored
    ) {
      const done = this.#checkpointReplacing(s, input, claim, reusable)
      if (done !== undefined) return done
    }
    return this.#saveRow(s, input)
  }

  /**
   * A save's reads and writes (any save but a checkpoint `#checkpointReplacing` wrote): a
   * method of its own, so a resume's first checkpoint, which repairs its halted call, compiles
   * none of it before the first LLM request.
   */
  #saveRow(s: Statements, input: SaveInput): SaveOutcome {
    const { id, claim, reusable } = input
    // A fenced save reads, with the row, the request its claim holds (see CLAIM_HELD).
    const raw = (claim === undefined ? s.conversationHead.get(id) : s.conversationClaim.get({ id, claim })) as
      | (SqliteConversationRow & { stored: number; held_request?: string | null })
      | undefined
    const previous = raw === undefined ? undefined : fromSqlite(raw, raw.stored)
    const held = raw?.held_request ?? null
    if (claim !== undefined && held === null) {
      return { lostClaim: previous?.claimRequestId ?? previous?.pendingId ?? null }
    }
    const now = Date.now()
    // A checkpoint is fenced by the claim but leaves it held: only the final save consumes it.
    const consumed = input.checkpoint ? undefined : claim
    // The claim consumed is the request it holds (the row points at it only when a store of
    // schema 6 before this change took the claim; nextConversationRow clears the pointer).
    const next = nextConversationRow(
      consumed === undefined || previous === undefined ? previous : { ...previous, claimRequestId: held },
      input.transcript.length,
      input.pending,
      consumed,
      now,
    )
    const version = previous === undefined ? 0 : previous.revision + previous.messageCount
    let key = raw?.conversation_key
    let keep: number
    let bodies: string[]
    let read = 0
    let deleted = 0
    if (previous !== undefined && reusable !== undefined && reusable.revision === version) {
      keep = reusable.length
      bodies = input.encode(keep)
      // Stored rows from `keep` on are overwritten in place (the insert below is an upsert) up
      // to the new end and deleted past it: either way the stored messages there are dropped.
      const end = keep + bodies.length
      if (reusable.stored > end) s.deleteMessagesFrom.run({ key, from: end })
      deleted = Math.max(0, reusable.stored - keep)
    } else {
      const rows = previous === undefined ? [] : (s.messages.all({ key }) as StoredMessageRow[])
      read = rows.length
      const plan = rewritePlan(rows, input.encode())
      keep = plan.keep
      bodies = plan.bodies
      if (plan.deletes) deleted = s.deleteMessagesFrom.run({ key, from: keep }).changes
    }
    // Only appended messages and an unchanged row: the messages' leaf is all the save writes.
    const appendOnly = previous !== undefined && keep === previous.messageCount && sameRow(previous, next)
    next.revision = appendOnly ? (previous as ConversationRow).revision : version + 1
    // A new conversation gets here the key its messages are stored under.
    if (!appendOnly)
      key = (s.upsertConversation.get(toSqlite(id, next)) as { conversation_key: number }).conversation_key
    for (let i = 0; i < bodies.length; i++) s.insertMessage.run({ key, seq: keep + i, body: bodies[i] })
    if (consumed !== undefined) s.applyRequest.run(now, held)
    return {
      revision: next.revision + input.transcript.length,
      pendingId: next.pendingId,
      stats: {
        messageRowsWritten: bodies.length,
        messageBytesWritten: byteLength(bodies),
        messageRowsDeleted: deleted,
        messageRowsRead: read,
      },
    }
  }

  /**
   * A checkpoint that replaces stored messages (a resume repairing its halted call's
   * placeholder) writes the row anyway, for the new revision: one statement checks the claim
   * and the cached version and writes it, instead of a read and an upsert. `undefined` when
   * the check fails; the full path then tells a lost claim from a stale cache.
   */
  #checkpointReplacing(
    s: Statements,
    input: SaveInput,
    claim: string,
    reusable: NonNullable<SaveInput["reusable"]>,
  ): SaveOutcome | undefined {
    const row = s.checkpointRow.get({ id: input.id, claim, version: reusable.revision }) as
      | { conversation_key: number; pending_id: string | null }
      | undefined
    if (row === undefined) return undefined
    const key = row.conversation_key
    const keep = reusable.length
    const bodies = input.encode(keep)
    const end = keep + bodies.length
    if (reusable.stored > end) s.deleteMessagesFrom.run({ key, from: end })
    for (let i = 0; i < bodies.length; i++) s.insertMessage.run({ key, seq: keep + i, body: bodies[i] })
    return {
      revision: reusable.revision + 1 + input.transcript.length,
      pendingId: row.pending_id,
      stats: {
        messageRowsWritten: bodies.length,
        messageBytesWritten: byteLength(bodies),
        messageRowsDeleted: reusable.stored - keep,
        messageRowsRead: 0,
      },
    }
  }

  /**
   * The request conversation `id` waits on, as the request itself (the stamped form) or its
   * JSON: `null` when it waits on none, `undefined` when no such conversation is stored.
   */
  protected async readPendingJson(id: string): Promise<string | Request | null | undefined> {
    const row = this.#s.pending.get(id) as
      | Pick<SqliteConversationRow, "pending" | "pending_id" | "pending_kind">
      | undefined
    if (row === undefined) return undefined
    // A stamped request is built as is, not unpacked to JSON text that getPending parses again.
    return (
      stampedRequest(row.pending, row.pending_id, row.pending_kind) ??
      unpackPending(row.pending, row.pending_id, row.pending_kind)
    )
  }

  protected async readHolders(filter: { kind?: string; requestId?: string }): Promise<HolderRow[]> {
    const s = this.#s
    const rows = (
      filter.requestId !== undefined
        ? s.holdersOf.all(filter.requestId)
        : s.holders.all({ kind: filter.kind ?? null })
    ) as SqliteHolderRow[]
    return rows.map(holderOf)
  }

  protected async readDecisionJson(requestId: string): Promise<string | null | undefined> {
    return (this.#s.decision.get(requestId) as { claim_answer: string | null } | undefined)?.claim_answer
  }

  /** The index rows of every `failed` request, each with its recorded `lastError` JSON (or `null`). */
  protected async readFailed(): Promise<FailedRow[]> {
    return (this.#s.failed.all() as SqliteHolderRow[]).map((row) => ({
      ...holderOf(row),
      lastError: row.last_error ?? null,
    }))
  }

  /**
   * Claims `input.answerId` on conversation `input.id` (or takes over an expired claim) under
   * the claim rules, in one immediate transaction. A grant with the stored JSON, or a refusal.
   */
  protected async writeClaim(input: ClaimInput): Promise<ClaimOutcome> {
    const first = this.#claimFirst(this.#s, input)
    if (first !== undefined) return first
    this.#claim ??= immediateTransaction(this.#s.db, (input: ClaimInput) => this.#claimLocked(this.#s, input))
    return this.#claim(input)
  }

  /**
   * The common first claim in two statements and no transaction (the locked path's four: BEGIN,
   * the read, the grant, COMMIT). `claimFirst` grants, in one atomic statement, only in states
   * where `judgeClaim` says "claim" (as PostgreSQL's `tnx_claim_first`); the claim's read then
   * loads what the resume needs. `undefined` when not granted here: the locked path decides.
   */
  #claimFirst(s: Statements, input: ClaimInput): ClaimOutcome | undefined {
    const { id, answerId } = input
    const now = Date.now()
    const granted = s.claimFirst.run({
      request_id: answerId,
      conversation_id: id,
      token: input.token,
      answer: input.answerJson,
      expires: now + input.leaseMs,
      now,
      runtime_key: input.runtimeKey ?? null,
      approves: input.approves ? 1 : 0,
    }).changes
    if (granted === 0) return undefined
    // A snapshot after the grant: when a write came between (an unfenced save moved the
    // conversation on, or it was deleted), the claim is void, and the locked path judges what
    // is there now (a refusal), as it would have for a delivery a moment later.
    const rows = s.claimRead.all({ id, answer: answerId }) as ClaimReadRaw[]
    const head = rows[0]
    if (head === undefined || head[C.pending_id] !== answerId || head[C.claim_token] !== input.token) {
      return undefined
    }
    // A stamped request is built as is: its JSON text would only be parsed again (claimAnswer).
    const pending = stampedRequest(head[C.pending], head[C.pending_id], head[C.pending_kind])
    return {
      grant: "claim",
      pendingJson:
        pending === undefined
          ? (unpackPending(head[C.pending], head[C.pending_id], head[C.pending_kind]) as string)
          : undefined,
      pending,
      answerJson: input.answerJson,
      transcript: claimTranscript(rows),
    }
  }

  /**
   * The body of a claim, inside an immediate transaction: reads the facts, lets the one claim
   * flow judge them (`judgeClaim`) and writes what it says.
   */
  #claimLocked(s: Statements, input: ClaimInput): ClaimOutcome {
    const { id, answerId } = input
    // One statement reads the conversation, the request's index row and the transcript
    // (one row per message): the resume that follows loads nothing more.
    const rows = s.claimRead.all({ id, answer: answerId }) as unknown[][]
    // The first row read by column position: naming its 15 columns on an object cost a resume
    // more than the statement did (each key added to a fresh object is a map transition).
    const head = rows[0] as ClaimReadRaw | undefined
    const conv = head && {
      pendingJson: unpackPending(head[C.pending], head[C.pending_id], head[C.pending_kind]),
      pendingId: head[C.pending_id],
      consumedId: head[C.consumed_id],
    }
    // Without the conversation the join has no row: the request is read on its own.
    const req = (
      head === undefined
        ? s.request.get(answerId)
        : head[C.request_id] === null
          ? undefined
          : requestOfJoin(answerId, head)
    ) as SqliteRequestRow | undefined
    const now = Date.now()
    const holderId = claimHolderToRead(req && { claimConversationId: req.claim_conversation_id }, id)
    const holderPendingId =
      holderId === undefined
        ? (conv?.pendingId ?? null)
        : ((s.pending.get(holderId) as { pending_id: string | null } | undefined)?.pending_id ?? null)
    const judged = judgeClaim(
      {
        conversation: conv,
        request: req && { ...requestOf(req), claimHolderPendingId: holderPendingId },
        now,
      },
      input,
    )
    if (judged.write === "fail") s.failRequest.run(input.exhaustedErrorJson(), now, answerId)
    if (judged.write !== "grant") return judged.outcome
    s.claimRequest.run({
      request_id: answerId,
      token: input.token,
      conversation_id: id,
      answer: judged.answerJson,
      expires: judged.claimExpiresAt,
      now,
    })
    // The conversation row is not written: the request row names the conversation that holds
    // the claim, and the fenced saves read the claim from it (CLAIM_HELD).
    // The claim changes neither the revision nor the messages.
    return { ...judged.outcome, transcript: claimTranscript(rows as ClaimReadRaw[]) }
  }

  protected async expireClaim(id: string, token: string, failure?: ClaimFailure): Promise<void> {
    const now = Date.now()
    if (failure === undefined) this.#s.releaseClaim.run(now, id, token)
    else this.#s.failClaim.run({ now, id, token, error: failure.errorJson, max: failure.maxAttempts })
  }

  protected async renewLease(id: string, token: string, leaseMs: number): Promise<boolean> {
    return this.#s.renewClaim.run(Date.now() + leaseMs, Date.now(), id, token).changes === 1
  }

  protected async reopenRequest(requestId: string): Promise<string | null> {
    const row = this.#s.reopenRequest.get(Date.now(), requestId) as
      | { claim_answer: string | null }
      | undefined
    return row?.claim_answer ?? null
  }

  /**
   * The claims whose lease ran out while their conversation still waits on the request,
   * earliest expiry first; at most `limit` of them (all when `undefined`).
   */
  protected async readExpiredClaims(limit: number | undefined) {
    const rows = this.#s.expiredClaims.all(Date.now(), limit ?? -1) as {
      id: string
      pending: string
      pending_id: string
      pending_kind: string | null
      answer: string
    }[]
    return rows.map((row) => ({
      /** The id of the conversation the claim was taken on. */
      id: row.id,
      /** The JSON of the request it waits on. */
      pending: unpackPending(row.pending, row.pending_id, row.pending_kind) as string,
      /** The JSON of the answer stored with the claim. */
      answer: row.answer,
    }))
  }

  /**
   * Deletes conversation `id` and its messages in one immediate transaction, with the index
   * rows of its requests that were not applied (an applied request's decision is kept).
   */
  protected async removeConversation(id: string): Promise<void> {
    const s = this.#s
    s.db
      .transaction(() => {
        s.forgetRequestsOf.run({ id })
        s.deleteMessagesOf.run({ id })
        s.deleteConversation.run(id)
      })
      .immediate()
  }

  /**
   * Stores the runtime snapshot JSON `body` under `key`. With `holds`, also replaces (in the
   * same transaction) the requests recorded as held by that runtime; without, they stay.
   */
  protected async writeSnapshot(key: string, body: string, holds: RuntimeHold[] | undefined): Promise<void> {
    const s = this.#s
    s.db.transaction(() => this.#snapshotLocked(s, key, body, holds)).immediate()
  }

  /** The body of a snapshot write, inside an immediate transaction. */
  #snapshotLocked(s: Statements, key: string, body: string, holds: RuntimeHold[] | undefined): void {
    const now = Date.now()
    s.putSnapshot.run(key, body, now)
    if (holds === undefined) return
    s.dropHolds.run(now, key)
    for (const hold of holds) {
      s.hold.run({
        request_id: hold.requestId,
        runtime_key: key,
        conversation_id: hold.conversationId,
        path: hold.path ? JSON.stringify(hold.path) : null,
        now,
      })
    }
  }

  /**
   * Every save and the snapshot in one immediate transaction; a save whose claim is gone
   * rolls the whole transaction back and reports `lostClaim`.
   */
  protected async writeCommit(
    saves: SaveInput[],
    snapshot: SnapshotInput | undefined,
  ): Promise<CommitOutcome> {
    const s = this.#s
    try {
      return s.db
        .transaction(() => {
          const outcomes: WrittenSave[] = []
          for (const input of saves) {
            const outcome = this.#saveLocked(s, input)
            if ("lostClaim" in outcome) throw new LostClaim(input.id, outcome.lostClaim)
            outcomes.push(outcome)
          }
          if (snapshot) this.#snapshotLocked(s, snapshot.key, snapshot.body, snapshot.holds)
          return outcomes
        })
        .immediate()
    } catch (error) {
      if (error instanceof LostClaim) return { lostClaim: { id: error.id, requestId: error.requestId } }
      throw error
    }
  }

  /** Inserts the snapshot unless `key` has one; true when it did. */
  protected async insertSnapshot(key: string, body: string): Promise<boolean> {
    return this.#s.insertSnapshot.run(key, body, Date.now()).changes === 1
  }

  /** The snapshot JSON saved under `key`; `undefined` when there is none. */
  protected async readSnapshot(key: string): Promise<string | undefined> {
    return (this.#s.getSnapshot.get(key) as { body: string } | undefined)?.body
  }

  /** Deletes the snapshot row saved under `key` (nothing when there is none). */
  protected async removeSnapshot(key: string): Promise<void> {
    this.#s.deleteSnapshot.run(key)
  }

  protected async release(): Promise<void> {
    if (this.#ownsDb && this.#db?.open) this.#db.close()
  }
}

/** Thrown inside a commit's transaction to roll it back when a save's claim is gone. */
class LostClaim extends Error {
  constructor(
    readonly id: string,
    readonly requestId: string | null,
  ) {
    super(`the claim of conversation ${id} is no longer held`)
  }
}

/**
 * `fn` as one immediate transaction of `db` (it takes the write lock at once). Not better-sqlite3's
 * `db.transaction`: its first use prepares nine statements (every BEGIN kind, savepoints) and
 * compiles four functions, in a fresh process's first claim. Inside a transaction already open
 * on `db` (a host's own), it is better-sqlite3's, which nests as a savepoint.
 */
function immediateTransaction<A, R>(db: Database, fn: (arg: A) => R): (arg: A) => R {
  let nested: ((arg: A) => R) | undefined
  return (arg) => {
    if (db.inTransaction) {
      nested ??= db.transaction(fn).immediate as (arg: A) => R
      return nested(arg)
    }
    let control = transactionControl.get(db)
    if (control === undefined) {
      control = [db.prepare("BEGIN IMMEDIATE"), db.prepare("COMMIT"), db.prepare("ROLLBACK")]
      transactionControl.set(db, control)
    }
    control[0].run()
    try {
      const result = fn(arg)
      control[1].run()
      return result
    } catch (error) {
      // A failed COMMIT (SQLITE_BUSY) can leave the transaction open: it is rolled back too.
      if (db.inTransaction) control[2].run()
      throw error
    }
  }
}

/** The BEGIN IMMEDIATE, COMMIT and ROLLBACK statements of each database, prepared once. */
const transactionControl = new WeakMap<Database, [Statement, Statement, Statement]>()

function isDatabase(value: unknown): value is Database {
  const db = value as Partial<Database> | null | undefined
  return (
    typeof db === "object" &&
    db !== null &&
    typeof db.prepare === "function" &&
    typeof db.transaction === "function"
  )
}

const HOLDER_COLUMNS = `c.id, c.pending, c.pending_id, c.pending_kind, c.pending_since, c.created_at, r.state, r.runtime_key,
  r.conversation_id, r.path, r.attempts`

/**
 * Messages are keyed by `conversation_key * 2^32 + seq` (see migration 5). The key is only
 * ever computed in SQL, in 64 bits: as a JS number it would lose precision past 2^53.
 */
const SPAN = 4294967296
const FIRST = (key: string) => `${key} * ${SPAN}`
const LAST = (key: string) => `${key} * ${SPAN} + ${SPAN - 1}`
/** The messages of conversation key `key` from position `from` on. */
const RANGE = (key: string, from = "0") => `message_key BETWEEN ${FIRST(key)} + ${from} AND ${LAST(key)}`
/** How many messages are stored under `key`, read off the end of its range. */
const storedUnder = (key: string) =>
  `COALESCE((SELECT max(message_key) FROM tnx_messages WHERE ${RANGE(key)}) - ${FIRST(key)} + 1, 0)`
const STORED = storedUnder("c.conversation_key")
/**
 * Whether request row `r` is claimed by token `@claim` through conversation row `c`: the
 * claim's one fence. The request row names the conversation the claim was taken through, and
 * a claim is only ever granted on the request the conversation waits on (`judgeClaim`); a
 * conversation moved on by an unfenced save voids it, as the claim rule does. The
 * conversation's own `claim_token`/`claim_request_id` are not written by a claim (it cost the
 * claim a second page), only cleared by the save consuming one.
 */
const CLAIM_HELD = (c: string) =>
  `r.request_id = ${c}.pending_id AND r.claim_token = @claim AND r.claim_conversation_id = ${c}.id`

const SQL = {
  // The columns getPending reads: better-sqlite3 builds a row object property by property, so
  // `SELECT *` cost ~2.5 times as much (13 columns).
  pending: "SELECT pending, pending_id, pending_kind FROM tnx_conversations WHERE id = ?",
  // With the number of stored messages, read off the end of the (key, seq) B-tree.
  conversationHead: `
      SELECT c.*, ${STORED} AS stored FROM tnx_conversations c WHERE c.id = ?`,
  request: "SELECT * FROM tnx_requests WHERE request_id = ?",
  messages: `SELECT message_key - ${FIRST("@key")} AS seq, body FROM tnx_messages WHERE ${RANGE("@key")} ORDER BY message_key`,
  deleteMessagesFrom: `DELETE FROM tnx_messages WHERE ${RANGE("@key", "@from")}`,
  deleteMessagesOf: `
      DELETE FROM tnx_messages WHERE ${RANGE("(SELECT conversation_key FROM tnx_conversations WHERE id = @id)")}`,
  insertMessage:
    `INSERT INTO tnx_messages (message_key, body) VALUES (${FIRST("@key")} + @seq, @body) ` +
    "ON CONFLICT (message_key) DO UPDATE SET body = excluded.body",
  transcript: `
      SELECT c.revision, c.pending_id, m.message_key - ${FIRST("c.conversation_key")} AS seq, m.body
      FROM tnx_conversations c LEFT JOIN tnx_messages m ON m.${RANGE("c.conversation_key")}
      WHERE c.id = ? ORDER BY m.message_key`,
  // The claim's read: conversation, request index row and messages in one snapshot. Read raw
  // (arrays, at the positions of `C`): the columns repeat on every message row, and better-sqlite3
  // builds row objects property by property (the objects cost ~1.8 times the arrays).
  claimRead: `
      SELECT c.revision, c.pending, c.pending_id, c.pending_kind, c.consumed_id,
        r.request_id, r.state, r.runtime_key, r.attempts, r.claim_token AS r_claim_token,
        r.claim_conversation_id, r.claim_answer AS r_claim_answer, r.claim_expires_at AS r_claim_expires_at,
        m.message_key - ${FIRST("c.conversation_key")} AS seq, m.body
      FROM tnx_conversations c LEFT JOIN tnx_requests r ON r.request_id = @answer
      LEFT JOIN tnx_messages m ON m.${RANGE("c.conversation_key")}
      WHERE c.id = @id ORDER BY m.message_key`,
  // A checkpoint's row write, done only while `@claim` holds the conversation's request
  // (CLAIM_HELD) and the stored version (revision + stored messages) is still `@version`.
  checkpointRow: `
      UPDATE tnx_conversations SET revision = @version + 1
      WHERE id = @id AND revision + ${storedUnder("tnx_conversations.conversation_key")} = @version
        AND EXISTS (SELECT 1 FROM tnx_requests r WHERE ${CLAIM_HELD("tnx_conversations")})
      RETURNING conversation_key, pending_id`,
  // The row, with the request `@claim` holds through it (NULL when it holds none).
  conversationClaim: `
      SELECT c.*, ${STORED} AS stored, r.request_id AS held_request FROM tnx_conversations c
      LEFT JOIN tnx_requests r ON ${CLAIM_HELD("c")} WHERE c.id = @id`,
  deleteConversation: "DELETE FROM tnx_conversations WHERE id = ?",
  upsertConversation: `
      INSERT INTO tnx_conversations (
        id, revision, pending, pending_id, pending_kind, pending_since, consumed_id,
        claim_token, claim_request_id, claim_answer, claim_expires_at, created_at
      ) VALUES (
        @id, @revision, @pending, @pending_id, @pending_kind, @pending_since, @consumed_id,
        @claim_token, @claim_request_id, NULL, NULL, @created_at
      ) ON CONFLICT (id) DO UPDATE SET
        revision = excluded.revision, pending = excluded.pending, pending_id = excluded.pending_id, pending_kind = excluded.pending_kind,
        pending_since = excluded.pending_since, consumed_id = excluded.consumed_id,
        claim_token = excluded.claim_token, claim_request_id = excluded.claim_request_id
      RETURNING conversation_key`,
  // A consumed claim leaves its answer as the request's decision.
  applyRequest:
    "UPDATE tnx_requests SET state = 'applied', claim_token = NULL, claim_expires_at = NULL, " +
    "updated_at = ? WHERE request_id = ?",
  // A plain first claim, granted in one statement only where judgeClaim is sure to say "claim"
  // (the states of PostgreSQL's tnx_claim_first): the conversation waits on the request; the
  // request has no index row, or an open one with no claim token and the same runtime key (IS:
  // both NULL); an approval's pending JSON has no expiresAt to judge (textual and
  // conservative: any mention of it, or any escape that could spell it; JavaScript's date
  // parsing stays in TypeScript). Anything else writes nothing (changes 0), and the locked
  // path decides. The write is the locked grant's (claimRequest's), column for column.
  claimFirst: `
      INSERT INTO tnx_requests (request_id, state, attempts, claim_token, claim_conversation_id,
        claim_answer, claim_expires_at, updated_at)
      SELECT @request_id, 'claimed', 1, @token, @conversation_id, @answer, @expires, @now
      FROM tnx_conversations c WHERE c.id = @conversation_id AND c.pending_id = @request_id
        AND (@approves = 0 OR (instr(c.pending, 'expiresAt') = 0 AND instr(c.pending, '\\u') = 0))
      ON CONFLICT (request_id) DO UPDATE SET state = 'claimed', attempts = attempts + 1,
        claim_token = excluded.claim_token, claim_conversation_id = excluded.claim_conversation_id,
        claim_answer = excluded.claim_answer, claim_expires_at = excluded.claim_expires_at,
        updated_at = excluded.updated_at
      WHERE tnx_requests.state = 'open' AND tnx_requests.claim_token IS NULL
        AND tnx_requests.runtime_key IS @runtime_key`,
  claimRequest: `
      INSERT INTO tnx_requests (request_id, state, attempts, claim_token, claim_conversation_id,
        claim_answer, claim_expires_at, updated_at)
      VALUES (@request_id, 'claimed', 1, @token, @conversation_id, @answer, @expires, @now)
      ON CONFLICT (request_id) DO UPDATE SET state = 'claimed', attempts = attempts + 1,
        claim_token = excluded.claim_token, claim_conversation_id = excluded.claim_conversation_id,
        claim_answer = excluded.claim_answer, claim_expires_at = excluded.claim_expires_at,
        updated_at = excluded.updated_at`,
  // MIN: releasing an already expired claim must not make it look freshly expired. The token
  // is revoked (RELEASED_TOKEN_PREFIX): the holder's renew and fenced save fail from now on,
  // while the claim keeps its answer for the takeover.
  releaseClaim:
    `UPDATE tnx_requests SET claim_expires_at = MIN(claim_expires_at, ?), claim_token = '${RELEASED_TOKEN_PREFIX}' || claim_token ` +
    "WHERE claim_conversation_id = ? AND claim_token = ?",
  // A failed attempt: recorded, and at the limit the request waits for retryFailed.
  failClaim: `
    UPDATE tnx_requests SET claim_expires_at = MIN(claim_expires_at, @now), last_error = @error,
      claim_token = '${RELEASED_TOKEN_PREFIX}' || claim_token,
      state = CASE WHEN attempts >= @max THEN 'failed' ELSE state END, updated_at = @now
    WHERE claim_conversation_id = @id AND claim_token = @token AND state = 'claimed'`,
  failRequest:
    "UPDATE tnx_requests SET state = 'failed', last_error = ?, updated_at = ? WHERE request_id = ?",
  renewClaim:
    "UPDATE tnx_requests SET claim_expires_at = ?, updated_at = ? " +
    "WHERE claim_conversation_id = ? AND claim_token = ? AND state = 'claimed'",
  // Expired at once: the next delivery takes it over with the stored decision.
  reopenRequest: `
    UPDATE tnx_requests SET state = 'claimed', attempts = 0, claim_expires_at = 0, updated_at = ?
    WHERE request_id = ? AND state = 'failed' RETURNING claim_answer`,
  holders: `
      SELECT ${HOLDER_COLUMNS} FROM tnx_conversations c
      LEFT JOIN tnx_requests r ON r.request_id = c.pending_id
      WHERE c.pending_id IS NOT NULL AND (@kind IS NULL OR c.pending_kind = @kind)`,
  holdersOf: `
      SELECT ${HOLDER_COLUMNS} FROM tnx_conversations c
      LEFT JOIN tnx_requests r ON r.request_id = c.pending_id
      WHERE c.pending_id = ?`,
  failed: `
      SELECT ${HOLDER_COLUMNS}, r.last_error FROM tnx_requests r
      JOIN tnx_conversations c ON c.pending_id = r.request_id WHERE r.state = 'failed'`,
  decision: "SELECT claim_answer FROM tnx_requests WHERE request_id = ? AND state = 'applied'",
  expiredClaims: `
      SELECT r.claim_conversation_id AS id, c.pending, c.pending_id, c.pending_kind, r.claim_answer AS answer FROM tnx_requests r
      JOIN tnx_conversations c ON c.id = r.claim_conversation_id AND c.pending_id = r.request_id
      WHERE r.state = 'claimed' AND r.claim_token IS NOT NULL AND r.claim_expires_at <= ?
      ORDER BY r.claim_expires_at, r.request_id LIMIT ?`,
  // The conversation's open request goes with it unless another conversation still holds it;
  // an applied request keeps its decision.
  forgetRequestsOf: `
      DELETE FROM tnx_requests WHERE state != 'applied' AND request_id IN (
        SELECT pending_id FROM tnx_conversations WHERE id = @id AND pending_id IS NOT NULL
        UNION SELECT request_id FROM tnx_requests WHERE claim_conversation_id = @id
      ) AND NOT EXISTS (
        SELECT 1 FROM tnx_conversations o WHERE o.pending_id = tnx_requests.request_id AND o.id != @id
      )`,
  dropHolds:
    "UPDATE tnx_requests SET runtime_key = NULL, conversation_id = NULL, path = NULL, updated_at = ? " +
    "WHERE runtime_key = ? AND state IN ('open', 'claimed')",
  hold: `
      INSERT INTO tnx_requests (request_id, state, runtime_key, conversation_id, path, updated_at)
      VALUES (@request_id, 'open', @runtime_key, @conversation_id, @path, @now)
      ON CONFLICT (request_id) DO UPDATE SET runtime_key = excluded.runtime_key,
        conversation_id = excluded.conversation_id, path = excluded.path, updated_at = excluded.updated_at
      WHERE state IN ('open', 'claimed')`,
  putSnapshot:
    "INSERT INTO tnx_snapshots (key, body, updated_at) VALUES (?, ?, ?) " +
    "ON CONFLICT (key) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
  insertSnapshot:
    "INSERT INTO tnx_snapshots (key, body, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING",
  getSnapshot: "SELECT body FROM tnx_snapshots WHERE key = ?",
  deleteSnapshot: "DELETE FROM tnx_snapshots WHERE key = ?",
}

/** The statements that return rows as arrays (`Statement#raw`). */
const RAW: ReadonlySet<keyof typeof SQL> = new Set(["claimRead"])

/** The position of each column in a claimRead row, in the statement's order (it is read raw). */
const C = {
  revision: 0,
  pending: 1,
  pending_id: 2,
  pending_kind: 3,
  consumed_id: 4,
  request_id: 5,
  state: 6,
  runtime_key: 7,
  attempts: 8,
  claim_token: 9,
  claim_conversation_id: 10,
  claim_answer: 11,
  claim_expires_at: 12,
  seq: 13,
  body: 14,
} as const

/**
 * The statements, each prepared on first use: a fresh process that resumes one run prepares
 * the handful it needs, not all of them.
 */
function prepareStatements(db: Database): { db: Database } & Record<keyof typeof SQL, Statement> {
  const prepared: Partial<Record<keyof typeof SQL, Statement>> = {}
  const statements = { db } as { db: Database } & Record<keyof typeof SQL, Statement>
  for (const name of Object.keys(SQL) as (keyof typeof SQL)[]) {
    Object.defineProperty(statements, name, {
      get: () => {
        prepared[name] ??= RAW.has(name) ? db.prepare(SQL[name]).raw(true) : db.prepare(SQL[name])
        return prepared[name]
      },
    })
  }
  return statements
}

function holderOf(row: SqliteHolderRow): HolderRow {
  return {
    conversationId: row.id,
    requestId: row.pending_id,
    pending: unpackPending(row.pending, row.pending_id, row.pending_kind) as string,
    sinceMs: row.pending_since ?? row.created_at,
    request:
      row.state == null
        ? null
        : {
            state: row.state,
            runtimeKey: row.runtime_key ?? null,
            conversationId: row.conversation_id ?? null,
            path: row.path ?? null,
            attempts: row.attempts ?? 0,
          },
  }
}

/** The transcript of the claim's read (`rows`, at least one: the conversation is stored). */
function claimTranscript(rows: ClaimReadRaw[]): StoredTranscript {
  const first = rows[0] as ClaimReadRaw
  const messages: StoredMessageRow[] =
    first[C.seq] === null
      ? []
      : rows.map((row) => ({ seq: row[C.seq] as number, body: row[C.body] as string }))
  return {
    revision: first[C.revision] + messages.length,
    count: messages.length,
    pendingId: first[C.pending_id],
    rows: messages,
  }
}

/** The request index columns of a claim read row, as the request statement returns them. */
function requestOfJoin(
  requestId: string,
  row: ClaimReadRaw,
): Omit<SqliteRequestRow, "path" | "conversation_id" | "last_error"> {
  return {
    request_id: requestId,
    state: row[C.state],
    runtime_key: row[C.runtime_key],
    attempts: row[C.attempts],
    claim_token: row[C.claim_token],
    claim_conversation_id: row[C.claim_conversation_id],
    claim_answer: row[C.claim_answer],
    claim_expires_at: row[C.claim_expires_at],
  }
}

function requestOf(
  row: Omit<SqliteRequestRow, "path" | "conversation_id" | "last_error">,
): Pick<RequestRow, "state" | "runtimeKey" | "claimToken" | "claimExpiresAt" | "attempts" | "claimAnswer"> {
  return {
    attempts: row.attempts,
    state: row.state,
    runtimeKey: row.runtime_key,
    claimToken: row.claim_token,
    claimExpiresAt: row.claim_expires_at,
    claimAnswer: row.claim_answer,
  }
}

/** The row read with `stored`, the number of messages stored under it. */
function fromSqlite(row: SqliteConversationRow, stored: number): ConversationRow {
  return {
    revision: row.revision,
    messageCount: stored,
    pending: unpackPending(row.pending, row.pending_id, row.pending_kind),
    pendingId: row.pending_id,
    pendingKind: row.pending_kind,
    pendingSince: row.pending_id !== null ? (row.pending_since ?? row.created_at) : row.pending_since,
    consumedId: row.consumed_id,
    claimToken: row.claim_token,
    claimRequestId: row.claim_request_id,
    createdAt: row.created_at,
    // Not stored: nothing reads it.
    updatedAt: row.created_at,
  }
}

/** Whether a save leaves the stored columns of the row as they are. */
function sameRow(a: ConversationRow, b: ConversationRow): boolean {
  return (
    a.pending === b.pending &&
    a.pendingId === b.pendingId &&
    a.pendingKind === b.pendingKind &&
    a.pendingSince === b.pendingSince &&
    a.consumedId === b.consumedId &&
    a.claimToken === b.claimToken &&
    a.claimRequestId === b.claimRequestId
  )
}

function toSqlite(
  id: string,
  row: ConversationRow,
): Omit<SqliteConversationRow, "conversation_key" | "claim_answer" | "claim_expires_at"> {
  return {
    id,
    revision: row.revision,
    pending: packPending(row.pending, row.pendingId, row.pendingKind),
    pending_id: row.pendingId,
    pending_kind: row.pendingKind,
    // NULL when the request has waited since the conversation began (a run parked by its first
    // save): 13 B less per parked run; readers take `created_at` then.
    pending_since: row.pendingSince === row.createdAt ? null : row.pendingSince,
    consumed_id: row.consumedId,
    claim_token: row.claimToken,
    claim_request_id: row.claimRequestId,
    created_at: row.createdAt,
  }
}

/**
 * The `db` a SqliteStore was given, checked, and how its errors name it. Its own function: a
 * store opened by `path` (a fresh process's resume) never compiles it.
 */
function givenDatabase(db: unknown): { open: () => Database; where: string } {
  if (!isDatabase(db)) throw new ConfigError(`${STORE} option \`db\` must be a better-sqlite3 Database`)
  if (db.open === false) throw new ConfigError(`${STORE} option \`db\` is a closed database`)
  const where = db.name === ":memory:" ? "an in-memory SQLite database" : `SQLite database ${db.name}`
  return { open: () => db, where }
}
