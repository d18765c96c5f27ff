import { createHash } from "node:crypto"
import { ConfigError } from "@toolnexus/core"
import type { Pool, PoolClient, QueryResult, QueryResultRow } from "pg"
import type { RuntimeHold } from "../durable-store.js"
import { RELEASED_TOKEN_PREFIX, claimHolderToRead, judgeClaim } from "../store-engine/claim-rules.js"
import { type ConversationRow, nextConversationRow } from "../store-engine/conversation-row.js"
import { LazyInit } from "../store-engine/lazy-init.js"
import { loadDriver } from "../store-engine/load-driver.js"
import { byteLength, rewritePlan, type StoredMessageRow } from "../store-engine/message-codec.js"
import { checkExactlyOne, checkKey, describe } from "../store-engine/option-checks.js"
import type { HolderRow, RequestRow } from "../store-engine/request-index.js"
import { checkSchemaVersion } from "../store-engine/schema-version.js"
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
} from "../store-engine/store-base.js"
import { toStoreError } from "../store-engine/store-errors.js"
import { POSTGRES_MIGRATIONS } from "./migrations.js"
import type { PostgresPool } from "./postgres-pool.js"

type Queryable = Pick<PoolClient, "query">

/**
 * Options of {@link PostgresStore}: exactly one of `connectionString` and `pool`. With
 * `connectionString`, `opTimeoutMs` is also the pool's connection, query and statement
 * timeout; a given `pool` keeps its own settings (the store still bounds every operation).
 */
export interface PostgresStoreOptions extends DurableStoreOptions {
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
  created_at: string
  updated_at: string
  now_ms: string
}

/** A request index row as the claim query selects it; times are epoch ms. */
interface PgRequestRow {
  attempts: number
  state: RequestRow["state"]
  claim_conversation_id: string | null
  runtime_key: string | null
  claim_token: string | null
  claim_answer: string | null
  claim_expires_at: string | null
}

/**
 * A row of the one-statement first claim (tnx_claim_first_read, migration 5): one per message
 * of the conversation the resume loads first, each with the claimed request's JSON.
 */
interface ClaimFirstRow {
  claimed_pending: string
  /** The conversation read; `null` when it is not stored. */
  holder: string | null
  holder_revision: number | null
  holder_message_count: number | null
  holder_pending_id: string | null
  /** `null` on the one row of a conversation without messages. */
  message_seq: number | null
  message_body: string | null
}

/** A holder row as the listing queries return it. */
interface PgHolderRow {
  id: string
  pending: string
  pending_id: string
  since_ms: string
  state: RequestRow["state"] | null
  runtime_key: string | null
  conversation_id: string | null
  path: string | null
  attempts: number | null
  last_error?: string | null
}

const STORE = "PostgresStore"
const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

/** Epoch milliseconds of a timestamptz column, as a bigint (a string through pg). */
const ms = (column: string) => `floor(extract(epoch FROM ${column}) * 1000)::bigint`

/**
 * A {@link DurableStore} in PostgreSQL through pg: one row per message, so a save appends
 * only the new messages; claims and fenced saves serialise on the request's row lock, then
 * the conversation's. Times (lease expiry, `since`) come from the server's clock, so hosts
 * may disagree on theirs.
 */
export class PostgresStore extends DurableStoreBase {
  protected readonly storeName = STORE
  readonly #pool: Pool
  readonly #ownsPool: boolean
  readonly #schema: string
  readonly #sql: ReturnType<typeof statements>
  readonly #init: LazyInit<void>

  constructor(options: PostgresStoreOptions) {
    super(options, STORE)
    const source = checkExactlyOne(options as Record<string, unknown>, ["connectionString", "pool"], STORE)
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
      const deadline = this.opTimeoutMs
      this.#pool = new PgPool({
        connectionString: options.connectionString,
        connectionTimeoutMillis: deadline,
        // Client side: a blackholed connection errors instead of hanging. Server side: a
        // statement stuck on a lock is cancelled.
        query_timeout: deadline,
        statement_timeout: deadline,
      })
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

  protected ready(): Promise<void> {
    return this.#init.get()
  }

  /**
   * Reads conversation `id`'s row and its message rows in one statement (one snapshot);
   * `undefined` when no such conversation is stored.
   */
  protected async readTranscript(id: string) {
    // One statement, so the row and the messages come from the same snapshot.
    const { rows } = await run<
      {
        /** The conversation row's `revision`, repeated on each joined message row. */
        revision: number
        /** The conversation row's `message_count`, repeated on each joined message row. */
        message_count: number
        /** The conversation row's `pending_id` (the request it waits on, or `null`), repeated on each row. */
        pending_id: string | null
      } & StoredMessageRow
    >(this.#pool, this.#sql.transcript, [id])
    const head = rows[0]
    if (head === undefined) return undefined
    const messages = head.seq === null ? [] : rows
    return {
      /** The conversation's revision as read; prefix-reuse saves are checked against it. */
      revision: head.revision,
      /** How many messages the conversation row says it has (the decode checks `rows` against it). */
      count: head.message_count,
      /** The id of the request the conversation waits on; `null` when it waits on none. */
      pendingId: head.pending_id,
      /** The message rows in `seq` order; empty when the conversation has no messages. */
      rows: messages,
    }
  }

  /**
   * Saves a transcript as `input` describes: in one statement when it keeps a prefix of the
   * stored one, else in a transaction holding the conversation's row; a fenced save whose
   * claim is gone reports `lostClaim` and writes nothing.
   */
  protected async writeTranscript(input: SaveInput): Promise<SaveOutcome> {
    return (
      (await this.#saveFast(input)) ?? (await this.#transaction((client) => this.#saveLocked(client, input)))
    )
  }

  /**
   * The common case in one statement (one round trip): a save whose transcript keeps a
   * prefix of what this store last saved or loaded (appending, or replacing the last message
   * as a resumed run does), with the row still at that revision. `undefined` when it is not,
   * and nothing was written. A fenced save locks the claimed request's row first (the order
   * claims take) and consumes the claim in the same statement, unless it is a checkpoint.
   */
  async #saveFast(
    input: SaveInput,
    db: Queryable = this.#pool,
    snapshot?: SnapshotInput,
  ): Promise<WrittenSave | undefined> {
    const { id, reusable, pending, transcript } = input
    if (reusable === undefined) return undefined
    const bodies = input.encode(reusable.length)
    const values: unknown[] = [
      id,
      reusable.revision,
      transcript.length,
      pending.mode,
      pending.json,
      pending.id,
      pending.kind,
      bodies.map((_, i) => reusable.length + i),
      bodies,
      input.claim ?? null,
      pending.since ?? null,
      // A checkpoint is fenced by the claim but leaves it held.
      !input.checkpoint,
      reusable.stored > transcript.length,
    ]
    // A snapshot without holds rides on the same statement, written only when the save is.
    if (snapshot !== undefined) values.push(snapshot.key, snapshot.body)
    const { rows } = await run<{ revision: number; pending_id: string | null }>(
      db,
      snapshot === undefined ? this.#sql.appendMessages : this.#sql.appendMessagesSnapshot,
      values,
    )
    const revision = rows[0]?.revision
    if (revision === undefined) return undefined
    return {
      revision,
      pendingId: rows[0]?.pending_id ?? null,
      stats: {
        messageRowsWritten: bodies.length,
        messageBytesWritten: byteLength(bodies),
        // Counted as the locked path counts them: every stored row from the kept prefix on.
        messageRowsDeleted: reusable.stored - reusable.length,
        messageRowsRead: 0,
      },
    }
  }

  /** The body of a save, in a transaction holding the claim's request lock and the conversation's. */
  async #saveLocked(client: PoolClient, input: SaveInput): Promise<SaveOutcome> {
    const { id, claim, reusable } = input
    const claimed =
      claim === undefined
        ? undefined
        : (await run<{ request_id: string }>(client, this.#sql.lockClaim, [claim])).rows[0]?.request_id
    let raw = await this.#lockConversation(client, id)
    if (raw === undefined) {
      // A placeholder row gives concurrent first saves of one id a row to queue on; it is
      // only ever committed with the real values below.
      await run(client, this.#sql.insertPlaceholder, [id])
      raw = await this.#lockConversation(client, id)
      if (raw === undefined) throw new Error(`conversation ${JSON.stringify(id)} vanished while being saved`)
    }
    const previous = fromPg(raw)
    if (claim !== undefined && (previous.claimToken !== claim || claimed !== previous.claimRequestId)) {
      return { lostClaim: previous.claimRequestId ?? previous.pendingId }
    }
    let keep: number
    let bodies: string[]
    let read = 0
    let deleted = 0
    if (reusable !== undefined && reusable.revision === previous.revision) {
      keep = reusable.length
      bodies = input.encode(keep)
      if (reusable.stored > keep)
        deleted = (await run(client, this.#sql.deleteMessagesFrom, [id, keep])).rowCount ?? 0
    } else {
      const rows =
        previous.revision === 0 ? [] : (await run<StoredMessageRow>(client, this.#sql.messages, [id])).rows
      read = rows.length
      const plan = rewritePlan(rows, input.encode())
      keep = plan.keep
      bodies = plan.bodies
      if (plan.deletes) deleted = (await run(client, this.#sql.deleteMessagesFrom, [id, keep])).rowCount ?? 0
    }
    if (bodies.length > 0) {
      const seqs = bodies.map((_, i) => keep + i)
      await run(client, this.#sql.insertMessages, [id, seqs, bodies])
    }
    // A checkpoint is fenced by the claim but leaves it held: only the final save consumes it.
    const consumed = input.checkpoint ? undefined : claim
    const next = nextConversationRow(
      previous,
      input.transcript.length,
      input.pending,
      consumed,
      Number(raw.now_ms),
    )
    await run(client, this.#sql.updateConversation, [
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
      next.updatedAt,
    ])
    if (claimed !== undefined && consumed !== undefined) await run(client, this.#sql.applyRequest, [claimed])
    return {
      revision: next.revision,
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
   * The JSON of the request conversation `id` waits on: `null` when it waits on none,
   * `undefined` when no such conversation is stored.
   */
  protected async readPendingJson(id: string): Promise<string | null | undefined> {
    const { rows } = await run<{ pending: string | null }>(this.#pool, this.#sql.pending, [id])
    return rows[0]?.pending
  }

  protected async readHolders(filter: { kind?: string; requestId?: string }): Promise<HolderRow[]> {
    const { rows } =
      filter.requestId !== undefined
        ? await run<PgHolderRow>(this.#pool, this.#sql.holdersOf, [filter.requestId])
        : await run<PgHolderRow>(this.#pool, this.#sql.holders, [filter.kind ?? null])
    return rows.map(holderOf)
  }

  protected async readDecisionJson(requestId: string): Promise<string | null | undefined> {
    const { rows } = await run<{ claim_answer: string | null }>(this.#pool, this.#sql.decision, [requestId])
    return rows[0]?.claim_answer
  }

  /** The index rows of every `failed` request, each with its recorded `lastError` JSON (or `null`). */
  protected async readFailed(): Promise<FailedRow[]> {
    const { rows } = await run<PgHolderRow>(this.#pool, this.#sql.failed)
    return rows.map((row) => ({ ...holderOf(row), lastError: row.last_error ?? null }))
  }

  /**
   * Claims `input.answerId` on conversation `input.id` (or takes over an expired claim) under
   * the claim rules, atomically: a first claim in one statement, every other case in a
   * transaction locking the request's row, then the conversation's. A grant with the stored
   * JSON, or a refusal.
   */
  protected async writeClaim(input: ClaimInput): Promise<ClaimOutcome> {
    const { id, answerId, runtimeKey } = input
    // The common first claim in one round trip, with the transcript the resume loads first
    // (migration 5); the function grants only what judgeClaim would, and leaves every other
    // case (refusals, takeovers, deadlines) to it below.
    const first = await run<ClaimFirstRow>(this.#pool, this.#sql.claimFirst, [
      answerId,
      id,
      input.token,
      input.answerJson,
      input.leaseMs,
      runtimeKey ?? null,
      input.approves,
    ])
    const granted = grantedFirst(first.rows, input.answerJson)
    if (granted !== undefined) return granted
    return this.#transaction(async (client): Promise<ClaimOutcome> => {
      // The request's row first, then the conversation's: the order every fenced save takes.
      // One statement creates the row when missing and locks it either way.
      const req = (
        await run<PgRequestRow & { now_ms: string; created: boolean }>(client, this.#sql.lockRequest, [
          answerId,
        ])
      ).rows[0]
      const created = req?.created === true
      const raw = await this.#lockConversation(client, id)
      const holderId = claimHolderToRead(req && { claimConversationId: req.claim_conversation_id }, id)
      const holderPendingId =
        holderId === undefined
          ? (raw?.pending_id ?? null)
          : ((await run<{ pending_id: string | null }>(client, this.#sql.pendingIdOf, [holderId])).rows[0]
              ?.pending_id ?? null)
      const judged = judgeClaim(
        {
          conversation: raw && {
            pendingJson: raw.pending,
            pendingId: raw.pending_id,
            consumedId: raw.consumed_id,
          },
          request: req && {
            state: req.state,
            runtimeKey: req.runtime_key,
            claimToken: req.claim_token,
            claimExpiresAt: req.claim_expires_at === null ? null : Number(req.claim_expires_at),
            attempts: req.attempts,
            claimAnswer: req.claim_answer,
            claimHolderPendingId: holderPendingId,
          },
          now: Number(req?.now_ms),
        },
        input,
      )
      if (judged.write === "fail")
        await run(client, this.#sql.failRequest, [answerId, input.exhaustedErrorJson()])
      if (judged.write !== "grant") {
        // A request row made only to lock on must not outlive a refused claim.
        if (created) await run(client, this.#sql.dropRequest, [answerId])
        return judged.outcome
      }
      await run(client, this.#sql.claimRequest, [
        answerId,
        input.token,
        id,
        judged.answerJson,
        judged.claimExpiresAt,
      ])
      return judged.outcome
    })
  }

  protected async expireClaim(id: string, token: string, failure?: ClaimFailure): Promise<void> {
    if (failure === undefined) await run(this.#pool, this.#sql.releaseClaim, [id, token])
    else await run(this.#pool, this.#sql.failClaim, [id, token, failure.errorJson, failure.maxAttempts])
  }

  protected async renewLease(id: string, token: string, leaseMs: number): Promise<boolean> {
    return ((await run(this.#pool, this.#sql.renewClaim, [id, token, leaseMs])).rowCount ?? 0) === 1
  }

  protected async reopenRequest(requestId: string): Promise<string | null> {
    const { rows } = await run<{ claim_answer: string | null }>(this.#pool, this.#sql.reopenRequest, [
      requestId,
    ])
    return rows[0]?.claim_answer ?? null
  }

  /**
   * The claims whose lease ran out while their conversation still waits on the request,
   * earliest expiry first; at most `limit` of them (all when `undefined`).
   */
  protected async readExpiredClaims(limit: number | undefined) {
    const { rows } = await run<{
      /** The id of the conversation the claim was taken on. */
      id: string
      /** The JSON of the request it waits on. */
      pending: string
      /** The JSON of the answer stored with the claim. */
      answer: string
    }>(this.#pool, this.#sql.expiredClaims, [limit ?? null])
    return rows
  }

  /**
   * Deletes conversation `id` and its messages in one transaction, with the index rows of its
   * requests that were not applied (an applied request's decision is kept).
   */
  protected async removeConversation(id: string): Promise<void> {
    await this.#transaction(async (client) => {
      await run(client, this.#sql.forgetRequestsOf, [id])
      await run(client, this.#sql.deleteMessagesFrom, [id, 0])
      await run(client, this.#sql.deleteConversation, [id])
    })
  }

  /**
   * Stores the runtime snapshot JSON `body` under `key`. With `holds`, also replaces (in the
   * same statement) the requests recorded as held by that runtime; without, they stay.
   */
  protected async writeSnapshot(key: string, body: string, holds: RuntimeHold[] | undefined): Promise<void> {
    await this.#snapshot(this.#pool, key, body, holds)
  }

  /** A snapshot write with its holds: one statement, so one round trip and atomic on its own. */
  async #snapshot(db: Queryable, key: string, body: string, holds: RuntimeHold[] | undefined) {
    if (holds === undefined) {
      await run(db, this.#sql.putSnapshot, [key, body])
      return
    }
    await run(db, this.#sql.putSnapshotHolds, [
      key,
      body,
      holds.map((h) => h.requestId),
      holds.map((h) => h.conversationId),
      holds.map((h) => (h.path ? JSON.stringify(h.path) : null)),
    ])
  }

  /**
   * Every save and the snapshot in one transaction, each save in one statement when it can
   * be. Fenced saves go first: they lock the claimed request's row before any conversation's,
   * the order claims take, so a racing claim never deadlocks with the commit. A save whose
   * claim is gone rolls everything back and reports `lostClaim`.
   */
  protected async writeCommit(
    saves: SaveInput[],
    snapshot: SnapshotInput | undefined,
  ): Promise<CommitOutcome> {
    const [only] = saves
    if (saves.length === 1 && only !== undefined && snapshot !== undefined && snapshot.holds === undefined) {
      // One save keeping its stored prefix and a snapshot without holds (a store host's turn
      // and its run record): one statement, atomic on its own, no transaction around it. A
      // save it cannot write (stale, or its claim gone) wrote nothing: the transaction decides.
      const written = await this.#saveFast(only, this.#pool, snapshot)
      if (written !== undefined) return [written]
    }
    const order = saves.map((_, i) => i).sort((a, b) => fenced(saves[b]) - fenced(saves[a]))
    try {
      return await this.#transaction(async (client) => {
        const outcomes: WrittenSave[] = new Array(saves.length)
        for (const i of order) {
          const input = saves[i] as SaveInput
          const outcome = (await this.#saveFast(input, client)) ?? (await this.#saveLocked(client, input))
          if ("lostClaim" in outcome) throw new LostClaim(input.id, outcome.lostClaim)
          outcomes[i] = outcome
        }
        if (snapshot) await this.#snapshot(client, snapshot.key, snapshot.body, snapshot.holds)
        return outcomes
      })
    } catch (error) {
      if (error instanceof LostClaim) return { lostClaim: { id: error.id, requestId: error.requestId } }
      throw error
    }
  }

  /** Inserts the snapshot unless `key` has one; true when it did. */
  protected async insertSnapshot(key: string, body: string): Promise<boolean> {
    return (await run(this.#pool, this.#sql.insertSnapshot, [key, body])).rowCount === 1
  }

  /** The snapshot JSON saved under `key`; `undefined` when there is none. */
  protected async readSnapshot(key: string): Promise<string | undefined> {
    const { rows } = await run<{ body: string }>(this.#pool, this.#sql.getSnapshot, [key])
    return rows[0]?.body
  }

  /** Deletes the snapshot row saved under `key` (nothing when there is none). */
  protected async removeSnapshot(key: string): Promise<void> {
    await run(this.#pool, this.#sql.deleteSnapshot, [key])
  }

  protected async release(): Promise<void> {
    if (!this.#ownsPool) return
    try {
      await this.#pool.end()
    } catch (error) {
      throw toStoreError(error, `${STORE} could not close its pool`)
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
    return run<PgConversationRow>(client, this.#sql.lockConversation, [id]).then((r) => r.rows[0])
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

/** One of the store's statements: named, so each connection parses and plans it once. */
interface Statement {
  name: string
  text: string
}

/** Runs a store statement as a prepared (named) statement on `db`. */
function run<R extends QueryResultRow = QueryResultRow>(
  db: Queryable,
  statement: Statement,
  values?: unknown[],
): Promise<QueryResult<R>> {
  return db.query<R>({ name: statement.name, text: statement.text, values })
}

/**
 * The store's statements for the quoted schema `s`, named after it (by a digest: the server
 * cuts names at 63 bytes), so one name always carries one text, also across stores of
 * different schemas sharing a host's pool.
 */
function statements(s: string): Record<keyof ReturnType<typeof statementTexts>, Statement> {
  const texts = statementTexts(s)
  const tag = createHash("sha256").update(s).digest("hex").slice(0, 16)
  return Object.fromEntries(
    Object.entries(texts).map(([key, text]) => [key, { name: `tnx_${tag}_${key}`, text }]),
  ) as Record<keyof typeof texts, Statement>
}

function statementTexts(s: string) {
  const conversations = `${s}.tnx_conversations`
  const messages = `${s}.tnx_messages`
  const snapshots = `${s}.tnx_snapshots`
  const requests = `${s}.tnx_requests`
  const holderColumns = `c.id, c.pending, c.pending_id, ${ms("c.pending_since")} AS since_ms, r.state,
    r.runtime_key, r.conversation_id, r.path, r.attempts`
  // A save keeping its stored prefix, in one statement (see #saveFast); `also` adds CTEs run
  // with it. $11 is the sinceOnSet decision, made from the row at the guarded revision; $12
  // whether a fenced save consumes its claim (a checkpoint does not); $13 whether stored rows
  // lie past the new end. SET expressions read the old row, and the writes to messages only
  // happen when the guarded UPDATE matched. A replaced tail is overwritten in place (the
  // upsert) and the rows past the end deleted: disjoint rows, so no row is touched twice.
  const append = (also: string) => `
      WITH claimed AS (
        SELECT request_id FROM ${requests} WHERE $10::text IS NOT NULL AND claim_token = $10::text FOR UPDATE
      ), updated AS (
        UPDATE ${conversations} SET
          revision = revision + 1, message_count = $3, updated_at = date_trunc('milliseconds', now()),
          pending = CASE $4::text WHEN 'keep' THEN pending WHEN 'clear' THEN NULL ELSE $5::text END,
          pending_id = CASE $4::text WHEN 'keep' THEN pending_id WHEN 'clear' THEN NULL ELSE $6::text END,
          pending_kind = CASE $4::text WHEN 'keep' THEN pending_kind WHEN 'clear' THEN NULL ELSE $7::text END,
          pending_since = CASE
            WHEN $4::text = 'keep' THEN pending_since
            WHEN $4::text = 'clear' THEN NULL
            WHEN $11::text = 'keep' THEN COALESCE(pending_since, date_trunc('milliseconds', now()))
            ELSE date_trunc('milliseconds', now()) END,
          consumed_id = CASE WHEN $10::text IS NULL OR NOT $12::boolean THEN consumed_id ELSE claim_request_id END,
          claim_token = CASE WHEN $10::text IS NULL OR NOT $12::boolean THEN claim_token END,
          claim_request_id = CASE WHEN $10::text IS NULL OR NOT $12::boolean THEN claim_request_id END
        WHERE id = $1 AND revision = $2 AND ($10::text IS NULL OR
          (claim_token = $10::text AND claim_request_id = (SELECT request_id FROM claimed)))
        RETURNING revision, pending_id
      ), applied AS (
        UPDATE ${requests} SET state = 'applied', claim_token = NULL, claim_expires_at = NULL,
          updated_at = now()
        WHERE request_id = (SELECT request_id FROM claimed) AND $12::boolean AND EXISTS (SELECT 1 FROM updated)
      ), inserted AS (
        INSERT INTO ${messages} (conversation_id, seq, body)
        SELECT $1, t.seq, t.body FROM unnest($8::integer[], $9::text[]) AS t(seq, body)
        WHERE EXISTS (SELECT 1 FROM updated)
        ON CONFLICT (conversation_id, seq) DO UPDATE SET body = excluded.body
      ), truncated AS (
        DELETE FROM ${messages} WHERE $13::boolean AND conversation_id = $1 AND seq >= $3
          AND EXISTS (SELECT 1 FROM updated)
      )${also}
      SELECT revision, pending_id FROM updated`
  return {
    transcript: `
      SELECT c.revision, c.message_count, c.pending_id, m.seq, m.body
      FROM ${conversations} c LEFT JOIN ${messages} m ON m.conversation_id = c.id
      WHERE c.id = $1 ORDER BY m.seq`,
    lockConversation: `
      SELECT revision, message_count, pending, pending_id, pending_kind,
        ${ms("pending_since")} AS pending_since, consumed_id, claim_token, claim_request_id,
        ${ms("created_at")} AS created_at, ${ms("updated_at")} AS updated_at, ${ms("now()")} AS now_ms
      FROM ${conversations} WHERE id = $1 FOR UPDATE`,
    appendMessages: append(""),
    // The same with a snapshot (no holds) upserted, only when the save is written: a store
    // host's turn, its transcript and its run record, in one round trip.
    appendMessagesSnapshot: append(`, put_snapshot AS (
        INSERT INTO ${snapshots} (key, body, updated_at)
        SELECT $14::text, $15::text, now() WHERE EXISTS (SELECT 1 FROM updated)
        ON CONFLICT (key) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at
      )`),
    insertPlaceholder: `
      INSERT INTO ${conversations} (id, revision, message_count, created_at, updated_at)
      VALUES ($1, 0, 0, now(), now()) ON CONFLICT (id) DO NOTHING`,
    messages: `SELECT seq, body FROM ${messages} WHERE conversation_id = $1 ORDER BY seq`,
    deleteMessagesFrom: `DELETE FROM ${messages} WHERE conversation_id = $1 AND seq >= $2`,
    deleteConversation: `DELETE FROM ${conversations} WHERE id = $1`,
    insertMessages: `
      INSERT INTO ${messages} (conversation_id, seq, body)
      SELECT $1, t.seq, t.body FROM unnest($2::integer[], $3::text[]) AS t(seq, body)`,
    updateConversation: `
      UPDATE ${conversations} SET revision = $2, message_count = $3, pending = $4, pending_id = $5,
        pending_kind = $6, pending_since = to_timestamp($7::float8 / 1000), consumed_id = $8,
        claim_token = $9, claim_request_id = $10, claim_answer = NULL, claim_expires_at = NULL,
        updated_at = to_timestamp($11::float8 / 1000)
      WHERE id = $1`,
    pending: `SELECT pending FROM ${conversations} WHERE id = $1`,
    pendingIdOf: `SELECT pending_id FROM ${conversations} WHERE id = $1`,
    holders: `
      SELECT ${holderColumns} FROM ${conversations} c
      LEFT JOIN ${requests} r ON r.request_id = c.pending_id
      WHERE c.pending_id IS NOT NULL AND ($1::text IS NULL OR c.pending_kind = $1)`,
    holdersOf: `
      SELECT ${holderColumns} FROM ${conversations} c
      LEFT JOIN ${requests} r ON r.request_id = c.pending_id
      WHERE c.pending_id = $1`,
    failed: `
      SELECT ${holderColumns}, r.last_error FROM ${requests} r
      JOIN ${conversations} c ON c.pending_id = r.request_id WHERE r.state = 'failed'`,
    decision: `SELECT claim_answer FROM ${requests} WHERE request_id = $1 AND state = 'applied'`,
    dropRequest: `
      DELETE FROM ${requests} WHERE request_id = $1 AND state = 'open' AND claim_token IS NULL
        AND runtime_key IS NULL AND attempts = 0`,
    // An upsert locks the row it returns, like FOR UPDATE; xmax = 0 tells a fresh insert.
    lockRequest: `
      INSERT INTO ${requests} (request_id, state, updated_at) VALUES ($1, 'open', now())
      ON CONFLICT (request_id) DO UPDATE SET request_id = excluded.request_id
      RETURNING state, attempts, runtime_key, claim_token, claim_conversation_id, claim_answer,
        ${ms("claim_expires_at")} AS claim_expires_at, ${ms("now()")} AS now_ms, (xmax = 0) AS created`,
    lockClaim: `SELECT request_id FROM ${requests} WHERE claim_token = $1 FOR UPDATE`,
    claimFirst: `SELECT * FROM ${s}.tnx_claim_first_read($1, $2, $3, $4, $5, $6, $7)`,
    // The claim on the request, and the conversation's pointer to it, in one round trip.
    claimRequest: `
      WITH claimed AS (
        UPDATE ${requests} SET state = 'claimed', attempts = attempts + 1, claim_token = $2,
          claim_conversation_id = $3, claim_answer = $4, claim_expires_at = to_timestamp($5::float8 / 1000),
          updated_at = now()
        WHERE request_id = $1
      )
      UPDATE ${conversations} SET claim_token = $2, claim_request_id = $1 WHERE id = $3`,
    // A consumed claim leaves its answer as the request's decision.
    applyRequest: `
      UPDATE ${requests} SET state = 'applied', claim_token = NULL, claim_expires_at = NULL, updated_at = now()
      WHERE request_id = $1`,
    // LEAST: releasing an already expired claim must not make it look freshly expired.
    // The token is revoked: the holder's renew and fenced save fail, the answer stays for the takeover.
    releaseClaim: `
      UPDATE ${requests} SET claim_expires_at = LEAST(claim_expires_at, now()),
        claim_token = '${RELEASED_TOKEN_PREFIX}' || claim_token
      WHERE claim_conversation_id = $1 AND claim_token = $2`,
    // A failed attempt: recorded, and at the limit the request waits for retryFailed.
    failClaim: `
      UPDATE ${requests} SET claim_expires_at = LEAST(claim_expires_at, now()), last_error = $3,
        claim_token = '${RELEASED_TOKEN_PREFIX}' || claim_token,
        state = CASE WHEN attempts >= $4 THEN 'failed' ELSE state END, updated_at = now()
      WHERE claim_conversation_id = $1 AND claim_token = $2 AND state = 'claimed'`,
    failRequest: `UPDATE ${requests} SET state = 'failed', last_error = $2, updated_at = now() WHERE request_id = $1`,
    renewClaim: `
      UPDATE ${requests} SET claim_expires_at = now() + $3::float8 * interval '1 millisecond', updated_at = now()
      WHERE claim_conversation_id = $1 AND claim_token = $2 AND state = 'claimed'`,
    // Expired at once: the next delivery takes it over with the stored decision.
    reopenRequest: `
      UPDATE ${requests} SET state = 'claimed', attempts = 0, claim_expires_at = to_timestamp(0), updated_at = now()
      WHERE request_id = $1 AND state = 'failed' RETURNING claim_answer`,
    expiredClaims: `
      SELECT r.claim_conversation_id AS id, c.pending, r.claim_answer AS answer FROM ${requests} r
      JOIN ${conversations} c ON c.id = r.claim_conversation_id AND c.pending_id = r.request_id
      WHERE r.state = 'claimed' AND r.claim_token IS NOT NULL AND r.claim_expires_at <= now()
      ORDER BY r.claim_expires_at, r.request_id LIMIT $1`,
    // The conversation's open request goes with it unless another conversation still holds it;
    // an applied request keeps its decision.
    forgetRequestsOf: `
      DELETE FROM ${requests} r WHERE r.state != 'applied' AND r.request_id IN (
        SELECT pending_id FROM ${conversations} WHERE id = $1 AND pending_id IS NOT NULL
        UNION SELECT request_id FROM ${requests} WHERE claim_conversation_id = $1
      ) AND NOT EXISTS (
        SELECT 1 FROM ${conversations} o WHERE o.pending_id = r.request_id AND o.id != $1
      )`,
    // The snapshot, and the runtime's holds replaced: the open or claimed requests it no longer
    // holds are let go, the ones it holds upserted. The two touch disjoint rows (no row twice in
    // one statement), and end as dropping every hold, then upserting, would leave them.
    putSnapshotHolds: `
      WITH put AS (
        INSERT INTO ${snapshots} (key, body, updated_at) VALUES ($1, $2, now())
        ON CONFLICT (key) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at
      ), dropped AS (
        UPDATE ${requests} SET runtime_key = NULL, conversation_id = NULL, path = NULL, updated_at = now()
        WHERE runtime_key = $1 AND state IN ('open', 'claimed') AND NOT (request_id = ANY($3::text[]))
      )
      INSERT INTO ${requests} (request_id, state, runtime_key, conversation_id, path, updated_at)
      SELECT t.request_id, 'open', $1, t.conversation_id, t.path, now()
      FROM unnest($3::text[], $4::text[], $5::text[]) AS t(request_id, conversation_id, path)
      ON CONFLICT (request_id) DO UPDATE SET runtime_key = excluded.runtime_key,
        conversation_id = excluded.conversation_id, path = excluded.path, updated_at = excluded.updated_at
      WHERE ${requests}.state IN ('open', 'claimed')`,
    putSnapshot: `
      INSERT INTO ${snapshots} (key, body, updated_at) VALUES ($1, $2, now())
      ON CONFLICT (key) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at`,
    insertSnapshot: `
      INSERT INTO ${snapshots} (key, body, updated_at) VALUES ($1, $2, now()) ON CONFLICT (key) DO NOTHING`,
    getSnapshot: `SELECT body FROM ${snapshots} WHERE key = $1`,
    deleteSnapshot: `DELETE FROM ${snapshots} WHERE key = $1`,
  }
}

/**
 * The grant of a one-statement first claim, with the transcript it read; `undefined` when it
 * returned no rows (it granted nothing, and wrote nothing).
 */
function grantedFirst(rows: ClaimFirstRow[], answerJson: string): ClaimOutcome | undefined {
  const head = rows[0]
  if (head === undefined) return undefined
  const grant = { grant: "claim", pendingJson: head.claimed_pending, answerJson } as const
  if (head.holder === null) return grant
  return {
    ...grant,
    transcriptOf: head.holder,
    transcript: {
      revision: head.holder_revision as number,
      count: head.holder_message_count as number,
      pendingId: head.holder_pending_id,
      rows:
        head.message_seq === null
          ? []
          : rows.map((row) => ({ seq: row.message_seq as number, body: row.message_body as string })),
    },
  }
}

function holderOf(row: PgHolderRow): HolderRow {
  return {
    conversationId: row.id,
    requestId: row.pending_id,
    pending: row.pending,
    sinceMs: Number(row.since_ms),
    request:
      row.state === null
        ? null
        : {
            state: row.state,
            runtimeKey: row.runtime_key,
            conversationId: row.conversation_id,
            path: row.path,
            attempts: row.attempts ?? 0,
          },
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
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  }
}

/** 1 for a save fenced by a claim, else 0. */
function fenced(input: SaveInput | undefined): number {
  return input?.claim === undefined ? 0 : 1
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
