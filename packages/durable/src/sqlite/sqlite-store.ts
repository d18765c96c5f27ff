import { type Answer, ConfigError, type Message, type Request, type SaveMeta } from "@toolnexus/core"
import type BetterSqlite3 from "better-sqlite3"
import type {
  AnswerClaim,
  ClaimOptions,
  DurableStore,
  ExpiredClaim,
  ListExpiredClaimsOptions,
  ListPendingOptions,
  PendingEntry,
} from "../durable-store.js"
import { claimRefusalError, decideClaim, lostClaimError, newClaimToken } from "../internal/claim-rules.js"
import { type ConversationRow, claimStateOf, nextConversationRow } from "../internal/conversation-row.js"
import { LazyInit } from "../internal/lazy-init.js"
import { loadDriver } from "../internal/load-driver.js"
import { MessageCache } from "../internal/message-cache.js"
import {
  byteLength,
  commonPrefixLength,
  contiguousBodies,
  decodeJson,
  decodeTranscript,
  encodeJson,
  encodeMessages,
  type StoredMessageRow,
} from "../internal/message-codec.js"
import {
  checkAnswer,
  checkExactlyOne,
  checkKey,
  checkOptions,
  checkSave,
  resolveKind,
  resolveLeaseMs,
  resolveLimit,
} from "../internal/option-checks.js"
import { closedStoreError, toStoreError } from "../internal/store-errors.js"
import { WriteCounter, type WriteStats } from "../internal/write-stats.js"
import { migrateSqlite } from "./migrate-sqlite.js"
import { SQLITE_MIGRATIONS } from "./migrations.js"
import type { SqliteDatabase } from "./sqlite-database.js"

type Database = BetterSqlite3.Database
type Statement = BetterSqlite3.Statement

/** Options of {@link SqliteStore}: exactly one of `path` and `db`. */
export interface SqliteStoreOptions {
  /** A database file (created when missing, opened in WAL mode) or `":memory:"`. */
  path?: string
  /** An open better-sqlite3 database owned by the caller: `close()` leaves it open. */
  db?: SqliteDatabase
  /** @internal The migration list; tests pass a longer one to exercise an upgrade. */
  migrations?: readonly string[]
}

/** A conversation row as SQLite returns it. */
interface SqliteConversationRow {
  id: string
  revision: number
  message_count: number
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
  updated_at: number
}

interface Statements {
  db: Database
  conversation: Statement
  messages: Statement
  deleteMessagesFrom: Statement
  insertMessage: Statement
  upsertConversation: Statement
  setClaim: Statement
  releaseClaim: Statement
  listPending: Statement
  listExpiredClaims: Statement
  putSnapshot: Statement
  getSnapshot: Statement
  deleteSnapshot: Statement
}

interface SaveOutcome {
  revision: number
  stats: Omit<WriteStats, "saves">
}

const STORE = "SqliteStore"

/**
 * A {@link DurableStore} in a SQLite database through better-sqlite3: one row per message,
 * so a save appends only the new messages. Suits one machine; several processes may share
 * the file.
 */
export class SqliteStore implements DurableStore {
  readonly #init: LazyInit<Statements>
  readonly #cache = new MessageCache()
  readonly #writes = new WriteCounter()
  readonly #ownsDb: boolean
  #db: Database | undefined
  #closed = false

  constructor(options: SqliteStoreOptions) {
    checkOptions(options, STORE)
    const source = checkExactlyOne(options, ["path", "db"], STORE)
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
        const db = new Driver(path)
        // WAL lets readers in other processes proceed while a save commits.
        if (path !== ":memory:") db.pragma("journal_mode = WAL")
        return db
      }
    } else {
      const db: unknown = options.db
      if (!isDatabase(db)) {
        throw new ConfigError(`${STORE} option \`db\` must be a better-sqlite3 Database`)
      }
      if (db.open === false) throw new ConfigError(`${STORE} option \`db\` is a closed database`)
      this.#ownsDb = false
      where = db.name === ":memory:" ? "an in-memory SQLite database" : `SQLite database ${db.name}`
      open = () => db
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

  /** @internal What this store wrote so far; tests use it to check saves are incremental. */
  get stats(): WriteStats {
    return this.#writes.snapshot()
  }

  async get(id: string): Promise<Message[] | undefined> {
    checkKey(id, "the conversation id")
    const stored = await this.#use(`read conversation ${JSON.stringify(id)}`, (s) =>
      s.db
        .transaction(() => {
          const row = s.conversation.get(id) as SqliteConversationRow | undefined
          if (row === undefined) return undefined
          return { row, messages: s.messages.all(id) as StoredMessageRow[] }
        })
        .deferred(),
    )
    if (stored === undefined) return undefined
    const messages = decodeTranscript(id, stored.row.message_count, stored.messages)
    this.#cache.remember(id, stored.row.revision, messages)
    return messages
  }

  async save(id: string, messages: Message[], meta?: SaveMeta): Promise<void> {
    checkSave(id, messages, meta)
    // The caller may keep appending to its array while we work; save what it held now.
    const transcript = messages.slice()
    const outcome = await this.#use(`save conversation ${JSON.stringify(id)}`, (s) =>
      s.db.transaction(() => this.#saveLocked(s, id, transcript, meta)).immediate(),
    )
    this.#writes.record(outcome.stats)
    this.#cache.remember(id, outcome.revision, transcript)
  }

  /** The body of `save`, inside an immediate transaction: nothing else writes meanwhile. */
  #saveLocked(s: Statements, id: string, messages: Message[], meta: SaveMeta | undefined): SaveOutcome {
    const raw = s.conversation.get(id) as SqliteConversationRow | undefined
    const previous = raw === undefined ? undefined : fromSqlite(raw)
    if (meta?.claim !== undefined && previous?.claimToken !== meta.claim) {
      throw lostClaimError(id, previous?.claimRequestId ?? previous?.pendingId ?? null)
    }
    const reusable = this.#cache.reusablePrefix(id, messages)
    let keep: number
    let bodies: string[]
    let read = 0
    let deleted = 0
    if (previous !== undefined && reusable !== undefined && reusable.revision === previous.revision) {
      keep = reusable.length
      bodies = encodeMessages(id, messages, keep)
    } else {
      const given = encodeMessages(id, messages)
      const rows = previous === undefined ? [] : (s.messages.all(id) as StoredMessageRow[])
      read = rows.length
      keep = commonPrefixLength(contiguousBodies(rows), given)
      if (rows.length > keep) deleted = s.deleteMessagesFrom.run(id, keep).changes
      bodies = given.slice(keep)
    }
    for (let i = 0; i < bodies.length; i++) s.insertMessage.run(id, keep + i, bodies[i])
    const next = nextConversationRow(id, previous, messages.length, meta, Date.now())
    s.upsertConversation.run(toSqlite(id, next))
    return {
      revision: next.revision,
      stats: {
        messageRowsWritten: bodies.length,
        messageBytesWritten: byteLength(bodies),
        messageRowsDeleted: deleted,
        messageRowsRead: read,
      },
    }
  }

  async getPending(id: string): Promise<Request | undefined> {
    checkKey(id, "the conversation id")
    const row = await this.#use(
      `read the pending request of ${JSON.stringify(id)}`,
      (s) => s.conversation.get(id) as SqliteConversationRow | undefined,
    )
    if (row?.pending == null) return undefined
    return decodeJson<Request>(row.pending, () => `the pending request of conversation ${JSON.stringify(id)}`)
  }

  async listPending(opts?: ListPendingOptions): Promise<PendingEntry[]> {
    const limit = resolveLimit(opts?.limit)
    const kind = resolveKind(opts?.kind)
    const rows = await this.#use(
      "list pending requests",
      (s) =>
        s.listPending.all({ kind: kind ?? null, limit: limit ?? -1 }) as {
          id: string
          pending: string
          pending_since: number
        }[],
    )
    return rows.map((row) => ({
      id: row.id,
      request: decodeJson<Request>(row.pending, () => `the pending request of conversation ${row.id}`),
      since: new Date(row.pending_since).toISOString(),
    }))
  }

  async claimAnswer(id: string, answer: Answer, opts?: ClaimOptions): Promise<AnswerClaim> {
    checkKey(id, "the conversation id")
    checkAnswer(answer)
    const leaseMs = resolveLeaseMs(opts?.leaseMs)
    const answerJson = encodeJson(answer, () => `the answer to request ${JSON.stringify(answer.id)}`)
    const token = newClaimToken()
    return this.#use(`claim an answer for conversation ${JSON.stringify(id)}`, (s) =>
      s.db
        .transaction((): AnswerClaim => {
          const raw = s.conversation.get(id) as SqliteConversationRow | undefined
          const row = raw === undefined ? undefined : fromSqlite(raw)
          const now = Date.now()
          const decision = decideClaim(row === undefined ? undefined : claimStateOf(row), answer.id, now)
          if (decision !== "claim" && decision !== "takeover")
            throw claimRefusalError(decision, id, answer.id)
          if (row === undefined) throw claimRefusalError("no-conversation", id, answer.id)
          const request = decodeJson<Request>(
            row.pending,
            () => `the pending request of ${JSON.stringify(id)}`,
          )
          const storedJson = decision === "takeover" ? (row.claimAnswer as string) : answerJson
          const claimed = decodeJson<Answer>(storedJson, () => `the claimed answer of ${JSON.stringify(id)}`)
          s.setClaim.run(token, row.pendingId, storedJson, now + leaseMs, id)
          return { token, answer: claimed, request, takeover: decision === "takeover" }
        })
        .immediate(),
    )
  }

  async releaseClaim(id: string, token: string): Promise<void> {
    checkKey(id, "the conversation id")
    checkKey(token, "the claim token")
    await this.#use(`release a claim on conversation ${JSON.stringify(id)}`, (s) =>
      s.releaseClaim.run(Date.now(), id, token),
    )
  }

  async listExpiredClaims(opts?: ListExpiredClaimsOptions): Promise<ExpiredClaim[]> {
    const limit = resolveLimit(opts?.limit)
    const rows = await this.#use(
      "list expired claims",
      (s) =>
        s.listExpiredClaims.all(Date.now(), limit ?? -1) as {
          id: string
          pending: string
          claim_answer: string
        }[],
    )
    return rows.map((row) => ({
      id: row.id,
      request: decodeJson<Request>(row.pending, () => `the pending request of conversation ${row.id}`),
      answer: decodeJson<Answer>(row.claim_answer, () => `the claimed answer of conversation ${row.id}`),
    }))
  }

  async putSnapshot(key: string, snapshot: unknown): Promise<void> {
    checkKey(key, "the snapshot key")
    const body = encodeJson(snapshot, () => `snapshot ${JSON.stringify(key)}`)
    await this.#use(`store snapshot ${JSON.stringify(key)}`, (s) => s.putSnapshot.run(key, body, Date.now()))
  }

  async getSnapshot(key: string): Promise<unknown | undefined> {
    checkKey(key, "the snapshot key")
    const row = await this.#use(
      `read snapshot ${JSON.stringify(key)}`,
      (s) => s.getSnapshot.get(key) as { body: string } | undefined,
    )
    if (row === undefined) return undefined
    return decodeJson(row.body, () => `snapshot ${JSON.stringify(key)}`)
  }

  async deleteSnapshot(key: string): Promise<void> {
    checkKey(key, "the snapshot key")
    await this.#use(`delete snapshot ${JSON.stringify(key)}`, (s) => s.deleteSnapshot.run(key))
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    if (this.#ownsDb && this.#db?.open) this.#db.close()
  }

  /** Runs `fn` once the schema is ready, turning driver failures into `StoreError`. */
  async #use<T>(what: string, fn: (s: Statements) => T): Promise<T> {
    if (this.#closed) throw closedStoreError(STORE)
    const statements = await this.#init.get()
    if (this.#closed) throw closedStoreError(STORE)
    try {
      return fn(statements)
    } catch (error) {
      throw toStoreError(error, `${STORE} failed to ${what}`)
    }
  }
}

function isDatabase(value: unknown): value is Database {
  const db = value as Partial<Database> | null | undefined
  return (
    typeof db === "object" &&
    db !== null &&
    typeof db.prepare === "function" &&
    typeof db.transaction === "function"
  )
}

function prepareStatements(db: Database): Statements {
  return {
    db,
    conversation: db.prepare("SELECT * FROM tnx_conversations WHERE id = ?"),
    messages: db.prepare("SELECT seq, body FROM tnx_messages WHERE conversation_id = ? ORDER BY seq"),
    deleteMessagesFrom: db.prepare("DELETE FROM tnx_messages WHERE conversation_id = ? AND seq >= ?"),
    insertMessage: db.prepare("INSERT INTO tnx_messages (conversation_id, seq, body) VALUES (?, ?, ?)"),
    upsertConversation: db.prepare(`
      INSERT INTO tnx_conversations (
        id, revision, message_count, pending, pending_id, pending_kind, pending_since, consumed_id,
        claim_token, claim_request_id, claim_answer, claim_expires_at, created_at, updated_at
      ) VALUES (
        @id, @revision, @message_count, @pending, @pending_id, @pending_kind, @pending_since, @consumed_id,
        @claim_token, @claim_request_id, @claim_answer, @claim_expires_at, @created_at, @updated_at
      ) ON CONFLICT (id) DO UPDATE SET
        revision = excluded.revision, message_count = excluded.message_count,
        pending = excluded.pending, pending_id = excluded.pending_id, pending_kind = excluded.pending_kind,
        pending_since = excluded.pending_since, consumed_id = excluded.consumed_id,
        claim_token = excluded.claim_token, claim_request_id = excluded.claim_request_id,
        claim_answer = excluded.claim_answer, claim_expires_at = excluded.claim_expires_at,
        updated_at = excluded.updated_at`),
    setClaim: db.prepare(
      "UPDATE tnx_conversations SET claim_token = ?, claim_request_id = ?, claim_answer = ?, " +
        "claim_expires_at = ? WHERE id = ?",
    ),
    // MIN: releasing an already expired claim must not make it look freshly expired.
    releaseClaim: db.prepare(
      "UPDATE tnx_conversations SET claim_expires_at = MIN(claim_expires_at, ?) " +
        "WHERE id = ? AND claim_token = ?",
    ),
    listPending: db.prepare(`
      SELECT id, pending, pending_since FROM tnx_conversations
      WHERE pending_id IS NOT NULL AND (@kind IS NULL OR pending_kind = @kind)
      ORDER BY pending_since, id LIMIT @limit`),
    listExpiredClaims: db.prepare(`
      SELECT id, pending, claim_answer FROM tnx_conversations
      WHERE claim_token IS NOT NULL AND claim_request_id = pending_id AND claim_expires_at <= ?
      ORDER BY claim_expires_at, id LIMIT ?`),
    putSnapshot: db.prepare(
      "INSERT INTO tnx_snapshots (key, body, updated_at) VALUES (?, ?, ?) " +
        "ON CONFLICT (key) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
    ),
    getSnapshot: db.prepare("SELECT body FROM tnx_snapshots WHERE key = ?"),
    deleteSnapshot: db.prepare("DELETE FROM tnx_snapshots WHERE key = ?"),
  }
}

function fromSqlite(row: SqliteConversationRow): ConversationRow {
  return {
    revision: row.revision,
    messageCount: row.message_count,
    pending: row.pending,
    pendingId: row.pending_id,
    pendingKind: row.pending_kind,
    pendingSince: row.pending_since,
    consumedId: row.consumed_id,
    claimToken: row.claim_token,
    claimRequestId: row.claim_request_id,
    claimAnswer: row.claim_answer,
    claimExpiresAt: row.claim_expires_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

function toSqlite(id: string, row: ConversationRow): SqliteConversationRow {
  return {
    id,
    revision: row.revision,
    message_count: row.messageCount,
    pending: row.pending,
    pending_id: row.pendingId,
    pending_kind: row.pendingKind,
    pending_since: row.pendingSince,
    consumed_id: row.consumedId,
    claim_token: row.claimToken,
    claim_request_id: row.claimRequestId,
    claim_answer: row.claimAnswer,
    claim_expires_at: row.claimExpiresAt,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  }
}
