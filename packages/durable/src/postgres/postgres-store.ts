import { type Answer, ConfigError, type Message, type Request, type SaveMeta } from "@toolnexus/core"
import type { Pool, PoolClient } from "pg"
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
  describe,
  resolveKind,
  resolveLeaseMs,
  resolveLimit,
} from "../internal/option-checks.js"
import { checkSchemaVersion } from "../internal/schema-version.js"
import { closedStoreError, toStoreError } from "../internal/store-errors.js"
import { WriteCounter, type WriteStats } from "../internal/write-stats.js"
import { POSTGRES_MIGRATIONS } from "./migrations.js"
import type { PostgresPool } from "./postgres-pool.js"

type Queryable = Pick<PoolClient, "query">

/** Options of {@link PostgresStore}: exactly one of `connectionString` and `pool`. */
export interface PostgresStoreOptions {
  /** A `postgres://` URL; the store opens (and on `close()` ends) its own pool. */
  connectionString?: string
  /** A pg `Pool` owned by the caller: `close()` leaves it open. */
  pool?: PostgresPool
  /** The namespace holding the tables, created when missing; default `"public"`. */
  schema?: string
  /** @internal The migration list; tests pass a longer one to exercise an upgrade. */
  migrations?: readonly ((schema: string) => string)[]
}

/** A conversation row as the save and claim queries select it; times are epoch ms. */
interface PgConversationRow {
  revision: number
  message_count: number
  pending: string | null
  pending_id: string | null
  pending_kind: string | null
  pending_since: string | null
  consumed_id: string | null
  claim_token: string | null
  claim_request_id: string | null
  claim_answer: string | null
  claim_expires_at: string | null
  created_at: string
  updated_at: string
  now_ms: string
}

interface SaveOutcome {
  revision: number
  stats: Omit<WriteStats, "saves">
}

const STORE = "PostgresStore"
const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

/** Epoch milliseconds of a timestamptz column, as a bigint (a string through pg). */
const ms = (column: string) => `floor(extract(epoch FROM ${column}) * 1000)::bigint`

/**
 * A {@link DurableStore} in PostgreSQL through pg: one row per message, so a save appends
 * only the new messages; claims and fenced saves serialise on the conversation's row lock.
 * Times (lease expiry, `since`) come from the server's clock, so hosts may disagree on theirs.
 */
export class PostgresStore implements DurableStore {
  readonly #pool: Pool
  readonly #ownsPool: boolean
  readonly #schema: string
  readonly #sql: ReturnType<typeof statements>
  readonly #init: LazyInit<void>
  readonly #cache = new MessageCache()
  readonly #writes = new WriteCounter()
  #closed = false

  constructor(options: PostgresStoreOptions) {
    checkOptions(options, STORE)
    const source = checkExactlyOne(options, ["connectionString", "pool"], STORE)
    const schema = options.schema ?? "public"
    if (typeof schema !== "string" || !SCHEMA_NAME.test(schema)) {
      throw new ConfigError(
        `${STORE} option \`schema\` must be a PostgreSQL identifier (letters, digits, _; at most 63), ` +
          `got ${describe(schema)}`,
      )
    }
    const migrations = options.migrations ?? POSTGRES_MIGRATIONS
    if (!Array.isArray(migrations) || migrations.some((m) => typeof m !== "function")) {
      throw new ConfigError(`${STORE} option \`migrations\` must be an array of functions`)
    }
    if (source === "connectionString") {
      checkKey(options.connectionString, `${STORE} option \`connectionString\``)
      const pg = loadDriver<typeof import("pg")>("pg", STORE)
      const PgPool = pg.Pool ?? (pg as unknown as { default: typeof import("pg") }).default.Pool
      this.#pool = new PgPool({ connectionString: options.connectionString, connectionTimeoutMillis: 10_000 })
      // An idle connection dropped by the server must not crash the host process; the pool
      // discards it and the next call connects afresh.
      this.#pool.on("error", () => {})
      this.#ownsPool = true
    } else {
      const pool = options.pool as Partial<Pool> | null
      if (typeof pool !== "object" || pool === null || typeof pool.connect !== "function") {
        throw new ConfigError(`${STORE} option \`pool\` must be a pg Pool`)
      }
      this.#pool = options.pool as unknown as Pool
      this.#ownsPool = false
    }
    this.#schema = schema
    const quoted = `"${schema}"`
    this.#sql = statements(quoted)
    this.#init = new LazyInit(async () => {
      try {
        await this.#migrate(quoted, migrations)
      } catch (error) {
        throw toStoreError(error, `${STORE} could not prepare schema "${schema}"`)
      }
    })
  }

  /** @internal What this store wrote so far; tests use it to check saves are incremental. */
  get stats(): WriteStats {
    return this.#writes.snapshot()
  }

  async get(id: string): Promise<Message[] | undefined> {
    checkKey(id, "the conversation id")
    // One statement, so the row and the messages come from the same snapshot.
    const { rows } = await this.#use(`read conversation ${JSON.stringify(id)}`, (pool) =>
      pool.query<{ revision: number; message_count: number } & StoredMessageRow>(this.#sql.transcript, [id]),
    )
    const head = rows[0]
    if (head === undefined) return undefined
    const messageRows = head.seq === null ? [] : rows
    const messages = decodeTranscript(id, head.message_count, messageRows)
    this.#cache.remember(id, head.revision, messages)
    return messages
  }

  async save(id: string, messages: Message[], meta?: SaveMeta): Promise<void> {
    checkSave(id, messages, meta)
    // The caller may keep appending to its array while we wait on the server.
    const transcript = messages.slice()
    const outcome = await this.#use(
      `save conversation ${JSON.stringify(id)}`,
      async () =>
        (await this.#saveFast(id, transcript, meta)) ??
        (await this.#transaction((client) => this.#saveLocked(client, id, transcript, meta))),
    )
    this.#writes.record(outcome.stats)
    this.#cache.remember(id, outcome.revision, transcript)
  }

  /**
   * The common case in one statement (one round trip): the transcript extends what this store
   * last saved or loaded, and the row is still at that revision. `undefined` when it is not,
   * and nothing was written.
   */
  async #saveFast(
    id: string,
    messages: Message[],
    meta: SaveMeta | undefined,
  ): Promise<SaveOutcome | undefined> {
    const reusable = this.#cache.reusablePrefix(id, messages)
    if (reusable === undefined) return undefined
    const bodies = encodeMessages(id, messages, reusable.length)
    const pending = meta?.pending
    const { rows } = await this.#pool.query<{ revision: number }>(this.#sql.appendMessages, [
      id,
      reusable.revision,
      messages.length,
      pending === undefined ? "keep" : pending === null ? "clear" : "set",
      pending ? encodeJson(pending, () => `the pending request of conversation ${JSON.stringify(id)}`) : null,
      pending?.id ?? null,
      pending?.kind ?? null,
      meta?.claim ?? null,
      bodies.map((_, i) => reusable.length + i),
      bodies,
    ])
    const revision = rows[0]?.revision
    if (revision === undefined) return undefined
    return {
      revision,
      stats: {
        messageRowsWritten: bodies.length,
        messageBytesWritten: byteLength(bodies),
        messageRowsDeleted: 0,
        messageRowsRead: 0,
      },
    }
  }

  /** The body of `save`, inside a transaction holding the conversation's row lock. */
  async #saveLocked(
    client: PoolClient,
    id: string,
    messages: Message[],
    meta: SaveMeta | undefined,
  ): Promise<SaveOutcome> {
    let raw = await this.#lockConversation(client, id)
    if (raw === undefined) {
      // A placeholder row gives concurrent first saves of one id a row to queue on; it is
      // only ever committed with the real values below.
      await client.query(this.#sql.insertPlaceholder, [id])
      raw = await this.#lockConversation(client, id)
      if (raw === undefined) throw new Error(`conversation ${JSON.stringify(id)} vanished while being saved`)
    }
    const previous = fromPg(raw)
    if (meta?.claim !== undefined && previous.claimToken !== meta.claim) {
      throw lostClaimError(id, previous.claimRequestId ?? previous.pendingId)
    }
    const reusable = this.#cache.reusablePrefix(id, messages)
    let keep: number
    let bodies: string[]
    let read = 0
    let deleted = 0
    if (reusable !== undefined && reusable.revision === previous.revision) {
      keep = reusable.length
      bodies = encodeMessages(id, messages, keep)
    } else {
      const given = encodeMessages(id, messages)
      const rows =
        previous.revision === 0 ? [] : (await client.query<StoredMessageRow>(this.#sql.messages, [id])).rows
      read = rows.length
      keep = commonPrefixLength(contiguousBodies(rows), given)
      if (rows.length > keep)
        deleted = (await client.query(this.#sql.deleteMessagesFrom, [id, keep])).rowCount ?? 0
      bodies = given.slice(keep)
    }
    if (bodies.length > 0) {
      const seqs = bodies.map((_, i) => keep + i)
      await client.query(this.#sql.insertMessages, [id, seqs, bodies])
    }
    const next = nextConversationRow(id, previous, messages.length, meta, Number(raw.now_ms))
    await client.query(this.#sql.updateConversation, [
      id,
      next.revision,
      next.messageCount,
      next.pending,
      next.pendingId,
      next.pendingKind,
      next.pendingSince,
      next.consumedId,
      next.claimToken,
      next.claimRequestId,
      next.claimAnswer,
      next.claimExpiresAt,
      next.updatedAt,
    ])
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
    const { rows } = await this.#use(`read the pending request of ${JSON.stringify(id)}`, (pool) =>
      pool.query<{ pending: string | null }>(this.#sql.pending, [id]),
    )
    const pending = rows[0]?.pending
    if (pending == null) return undefined
    return decodeJson<Request>(pending, () => `the pending request of conversation ${JSON.stringify(id)}`)
  }

  async listPending(opts?: ListPendingOptions): Promise<PendingEntry[]> {
    const limit = resolveLimit(opts?.limit)
    const kind = resolveKind(opts?.kind)
    const { rows } = await this.#use("list pending requests", (pool) =>
      pool.query<{ id: string; pending: string; since_ms: string }>(this.#sql.listPending, [
        kind ?? null,
        limit ?? null,
      ]),
    )
    return rows.map((row) => ({
      id: row.id,
      request: decodeJson<Request>(row.pending, () => `the pending request of conversation ${row.id}`),
      since: new Date(Number(row.since_ms)).toISOString(),
    }))
  }

  async claimAnswer(id: string, answer: Answer, opts?: ClaimOptions): Promise<AnswerClaim> {
    checkKey(id, "the conversation id")
    checkAnswer(answer)
    const leaseMs = resolveLeaseMs(opts?.leaseMs)
    const answerJson = encodeJson(answer, () => `the answer to request ${JSON.stringify(answer.id)}`)
    const token = newClaimToken()
    return this.#use(`claim an answer for conversation ${JSON.stringify(id)}`, () =>
      this.#transaction(async (client): Promise<AnswerClaim> => {
        const raw = await this.#lockConversation(client, id)
        const row = raw === undefined ? undefined : fromPg(raw)
        const now = Number(raw?.now_ms)
        const decision = decideClaim(row === undefined ? undefined : claimStateOf(row), answer.id, now)
        if (decision !== "claim" && decision !== "takeover") throw claimRefusalError(decision, id, answer.id)
        if (row === undefined) throw claimRefusalError("no-conversation", id, answer.id)
        const request = decodeJson<Request>(row.pending, () => `the pending request of ${JSON.stringify(id)}`)
        const storedJson = decision === "takeover" ? (row.claimAnswer as string) : answerJson
        const claimed = decodeJson<Answer>(storedJson, () => `the claimed answer of ${JSON.stringify(id)}`)
        await client.query(this.#sql.setClaim, [id, token, row.pendingId, storedJson, now + leaseMs])
        return { token, answer: claimed, request, takeover: decision === "takeover" }
      }),
    )
  }

  async releaseClaim(id: string, token: string): Promise<void> {
    checkKey(id, "the conversation id")
    checkKey(token, "the claim token")
    await this.#use(`release a claim on conversation ${JSON.stringify(id)}`, (pool) =>
      pool.query(this.#sql.releaseClaim, [id, token]),
    )
  }

  async listExpiredClaims(opts?: ListExpiredClaimsOptions): Promise<ExpiredClaim[]> {
    const limit = resolveLimit(opts?.limit)
    const { rows } = await this.#use("list expired claims", (pool) =>
      pool.query<{ id: string; pending: string; claim_answer: string }>(this.#sql.listExpiredClaims, [
        limit ?? null,
      ]),
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
    await this.#use(`store snapshot ${JSON.stringify(key)}`, (pool) =>
      pool.query(this.#sql.putSnapshot, [key, body]),
    )
  }

  async getSnapshot(key: string): Promise<unknown | undefined> {
    checkKey(key, "the snapshot key")
    const { rows } = await this.#use(`read snapshot ${JSON.stringify(key)}`, (pool) =>
      pool.query<{ body: string }>(this.#sql.getSnapshot, [key]),
    )
    const row = rows[0]
    if (row === undefined) return undefined
    return decodeJson(row.body, () => `snapshot ${JSON.stringify(key)}`)
  }

  async deleteSnapshot(key: string): Promise<void> {
    checkKey(key, "the snapshot key")
    await this.#use(`delete snapshot ${JSON.stringify(key)}`, (pool) =>
      pool.query(this.#sql.deleteSnapshot, [key]),
    )
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    if (!this.#ownsPool) return
    try {
      await this.#pool.end()
    } catch (error) {
      throw toStoreError(error, `${STORE} could not close its pool`)
    }
  }

  /** Runs `fn` once the schema is ready, turning driver failures into `StoreError`. */
  async #use<T>(what: string, fn: (pool: Pool) => Promise<T>): Promise<T> {
    if (this.#closed) throw closedStoreError(STORE)
    await this.#init.get()
    if (this.#closed) throw closedStoreError(STORE)
    try {
      return await fn(this.#pool)
    } catch (error) {
      throw toStoreError(error, `${STORE} failed to ${what}`)
    }
  }

  /**
   * Runs `fn` in a transaction on one pooled connection; any failure rolls everything back.
   * `sessionLock` names an advisory lock held around the whole transaction: taken before
   * BEGIN, so the transaction starts after the previous holder committed and sees its
   * catalog changes (a lock taken inside it could still read stale cached lookups).
   */
  async #transaction<T>(fn: (client: PoolClient) => Promise<T>, sessionLock?: string): Promise<T> {
    const client = await this.#pool.connect()
    let broken: Error | undefined
    // pg only listens for errors on idle clients; a connection lost while we hold it would
    // otherwise be an uncaught 'error' event.
    const onError = (error: Error) => {
      broken ??= error
    }
    client.on("error", onError)
    try {
      if (sessionLock) await client.query("SELECT pg_advisory_lock(hashtext($1))", [sessionLock])
      await client.query("BEGIN")
      const result = await fn(client)
      await client.query("COMMIT")
      return result
    } catch (error) {
      if (broken === undefined) {
        try {
          await client.query("ROLLBACK")
        } catch (rollbackError) {
          broken = rollbackError as Error
        }
      }
      throw error
    } finally {
      if (sessionLock && broken === undefined) {
        await client.query("SELECT pg_advisory_unlock(hashtext($1))", [sessionLock]).catch((error: Error) => {
          broken = error
        })
      }
      client.removeListener("error", onError)
      // Releasing with an error destroys the connection instead of pooling a broken one.
      client.release(broken)
    }
  }

  #lockConversation(client: Queryable, id: string): Promise<PgConversationRow | undefined> {
    return client.query<PgConversationRow>(this.#sql.lockConversation, [id]).then((r) => r.rows[0])
  }

  /** Creates or upgrades the tables; a schema newer than this code is refused before any write. */
  async #migrate(quoted: string, migrations: readonly ((schema: string) => string)[]): Promise<void> {
    const known = migrations.length
    const what = `the toolnexus tables in PostgreSQL schema "${this.#schema}"`
    if ((await this.#readSchemaVersion(this.#pool, quoted, known, what)) === known) return
    // The lock serialises concurrent first starts: CREATE ... IF NOT EXISTS races otherwise.
    await this.#transaction(async (client) => {
      const from = await this.#readSchemaVersion(client, quoted, known, what)
      const exists = await client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [this.#schema])
      // Only create a missing namespace: CREATE SCHEMA IF NOT EXISTS still needs the privilege.
      if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${quoted}`)
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${quoted}.tnx_meta (key text PRIMARY KEY, value text NOT NULL)`,
      )
      for (let version = from; version < known; version++) {
        await client.query((migrations[version] as (schema: string) => string)(quoted))
      }
      await client.query(
        `INSERT INTO ${quoted}.tnx_meta (key, value) VALUES ('schema_version', $1) ` +
          "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [String(known)],
      )
    }, `toolnexus-durable:${this.#schema}`)
  }

  async #readSchemaVersion(db: Queryable, quoted: string, known: number, what: string): Promise<number> {
    const table = await db.query<{ t: string | null }>("SELECT to_regclass($1)::text AS t", [
      `${quoted}.tnx_meta`,
    ])
    if (table.rows[0]?.t == null) return 0
    const { rows } = await db.query<{ value: string }>(
      `SELECT value FROM ${quoted}.tnx_meta WHERE key = 'schema_version'`,
    )
    return rows[0] === undefined ? 0 : checkSchemaVersion(rows[0].value, known, what)
  }
}

function statements(s: string) {
  const conversations = `${s}.tnx_conversations`
  const messages = `${s}.tnx_messages`
  const snapshots = `${s}.tnx_snapshots`
  return {
    transcript: `
      SELECT c.revision, c.message_count, m.seq, m.body
      FROM ${conversations} c LEFT JOIN ${messages} m ON m.conversation_id = c.id
      WHERE c.id = $1 ORDER BY m.seq`,
    lockConversation: `
      SELECT revision, message_count, pending, pending_id, pending_kind,
        ${ms("pending_since")} AS pending_since,
        consumed_id, claim_token, claim_request_id, claim_answer,
        ${ms("claim_expires_at")} AS claim_expires_at, ${ms("created_at")} AS created_at,
        ${ms("updated_at")} AS updated_at, ${ms("now()")} AS now_ms
      FROM ${conversations} WHERE id = $1 FOR UPDATE`,
    // Mirrors nextConversationRow for the fast path. SET expressions read the old row, and
    // the INSERT only happens when the guarded UPDATE matched.
    appendMessages: `
      WITH updated AS (
        UPDATE ${conversations} SET
          revision = revision + 1, message_count = $3, updated_at = date_trunc('milliseconds', now()),
          pending = CASE $4::text WHEN 'keep' THEN pending WHEN 'clear' THEN NULL ELSE $5::text END,
          pending_id = CASE $4::text WHEN 'keep' THEN pending_id WHEN 'clear' THEN NULL ELSE $6::text END,
          pending_kind = CASE $4::text WHEN 'keep' THEN pending_kind WHEN 'clear' THEN NULL ELSE $7::text END,
          pending_since = CASE
            WHEN $4::text = 'keep' THEN pending_since
            WHEN $4::text = 'clear' THEN NULL
            WHEN pending_id IS NOT DISTINCT FROM $6::text AND pending_since IS NOT NULL THEN pending_since
            ELSE date_trunc('milliseconds', now()) END,
          consumed_id = CASE WHEN $8::text IS NULL THEN consumed_id ELSE claim_request_id END,
          claim_token = CASE WHEN $8::text IS NULL THEN claim_token END,
          claim_request_id = CASE WHEN $8::text IS NULL THEN claim_request_id END,
          claim_answer = CASE WHEN $8::text IS NULL THEN claim_answer END,
          claim_expires_at = CASE WHEN $8::text IS NULL THEN claim_expires_at END
        WHERE id = $1 AND revision = $2 AND ($8::text IS NULL OR claim_token = $8::text)
        RETURNING revision
      ), inserted AS (
        INSERT INTO ${messages} (conversation_id, seq, body)
        SELECT $1, t.seq, t.body FROM unnest($9::integer[], $10::text[]) AS t(seq, body)
        WHERE EXISTS (SELECT 1 FROM updated)
      )
      SELECT revision FROM updated`,
    insertPlaceholder: `
      INSERT INTO ${conversations} (id, revision, message_count, created_at, updated_at)
      VALUES ($1, 0, 0, now(), now()) ON CONFLICT (id) DO NOTHING`,
    messages: `SELECT seq, body FROM ${messages} WHERE conversation_id = $1 ORDER BY seq`,
    deleteMessagesFrom: `DELETE FROM ${messages} WHERE conversation_id = $1 AND seq >= $2`,
    insertMessages: `
      INSERT INTO ${messages} (conversation_id, seq, body)
      SELECT $1, t.seq, t.body FROM unnest($2::integer[], $3::text[]) AS t(seq, body)`,
    updateConversation: `
      UPDATE ${conversations} SET revision = $2, message_count = $3, pending = $4, pending_id = $5,
        pending_kind = $6, pending_since = to_timestamp($7::float8 / 1000), consumed_id = $8,
        claim_token = $9, claim_request_id = $10, claim_answer = $11,
        claim_expires_at = to_timestamp($12::float8 / 1000), updated_at = to_timestamp($13::float8 / 1000)
      WHERE id = $1`,
    pending: `SELECT pending FROM ${conversations} WHERE id = $1`,
    listPending: `
      SELECT id, pending, ${ms("pending_since")} AS since_ms FROM ${conversations}
      WHERE pending_id IS NOT NULL AND ($1::text IS NULL OR pending_kind = $1)
      ORDER BY pending_since, id LIMIT $2`,
    setClaim: `
      UPDATE ${conversations} SET claim_token = $2, claim_request_id = $3, claim_answer = $4,
        claim_expires_at = to_timestamp($5::float8 / 1000)
      WHERE id = $1`,
    // LEAST: releasing an already expired claim must not make it look freshly expired.
    releaseClaim: `
      UPDATE ${conversations} SET claim_expires_at = LEAST(claim_expires_at, now())
      WHERE id = $1 AND claim_token = $2`,
    listExpiredClaims: `
      SELECT id, pending, claim_answer FROM ${conversations}
      WHERE claim_token IS NOT NULL AND claim_request_id = pending_id AND claim_expires_at <= now()
      ORDER BY claim_expires_at, id LIMIT $1`,
    putSnapshot: `
      INSERT INTO ${snapshots} (key, body, updated_at) VALUES ($1, $2, now())
      ON CONFLICT (key) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at`,
    getSnapshot: `SELECT body FROM ${snapshots} WHERE key = $1`,
    deleteSnapshot: `DELETE FROM ${snapshots} WHERE key = $1`,
  }
}

function fromPg(row: PgConversationRow): ConversationRow {
  const time = (value: string | null) => (value === null ? null : Number(value))
  return {
    revision: row.revision,
    messageCount: row.message_count,
    pending: row.pending,
    pendingId: row.pending_id,
    pendingKind: row.pending_kind,
    pendingSince: time(row.pending_since),
    consumedId: row.consumed_id,
    claimToken: row.claim_token,
    claimRequestId: row.claim_request_id,
    claimAnswer: row.claim_answer,
    claimExpiresAt: time(row.claim_expires_at),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  }
}
