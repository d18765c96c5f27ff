import { ConfigError, StoreError } from "@toolnexus/core"
import type { Redis, RedisOptions } from "ioredis"
import type { RuntimeHold } from "../durable-store.js"
import { sinceOnSet } from "../store-engine/conversation-row.js"
import { LazyInit } from "../store-engine/lazy-init.js"
import { loadDriver } from "../store-engine/load-driver.js"
import { byteLength } from "../store-engine/message-codec.js"
import { judgeClaim } from "../store-engine/claim-rules.js"
import { checkExactlyOne, checkKey } from "../store-engine/option-checks.js"
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
import { LuaScript } from "./lua-script.js"
import { REDIS_MIGRATIONS } from "./migrations.js"
import {
  CLAIM_SCRIPT,
  CLAIM_WRITE_SCRIPT,
  COMMIT_SCRIPT,
  DELETE_SCRIPT,
  FAILED_SCRIPT,
  GET_SCRIPT,
  HOLDERS_SCRIPT,
  LIST_EXPIRED_SCRIPT,
  migrationScript,
  RELEASE_SCRIPT,
  RENEW_SCRIPT,
  REOPEN_SCRIPT,
  SAVE_SCRIPT,
  SNAPSHOT_SCRIPT,
} from "./redis-scripts.js"

/**
 * Options of {@link RedisStore}: exactly one of `url` and `client`. With `url`, `opTimeoutMs`
 * is also the client's `commandTimeout` and `connectTimeout`; a given `client` keeps its own
 * settings (the store still bounds every operation).
 */
export interface RedisStoreOptions extends DurableStoreOptions {
  /** A `redis://` or `rediss://` URL; the store opens (and on `close()` quits) its own client. */
  url?: string
  /** An ioredis client owned by the caller: `close()` leaves it connected. */
  client?: Redis
  /** Prepended to every key the store uses; default `"tnx:"`. */
  keyPrefix?: string
  /** @internal The migration list; tests pass a longer one to exercise an upgrade. */
  migrations?: readonly string[]
}

const STORE = "RedisStore"

const scripts = {
  save: new LuaScript(SAVE_SCRIPT),
  commit: new LuaScript(COMMIT_SCRIPT),
  get: new LuaScript(GET_SCRIPT),
  claim: new LuaScript(CLAIM_SCRIPT),
  claimWrite: new LuaScript(CLAIM_WRITE_SCRIPT),
  release: new LuaScript(RELEASE_SCRIPT),
  holders: new LuaScript(HOLDERS_SCRIPT),
  listExpired: new LuaScript(LIST_EXPIRED_SCRIPT),
  remove: new LuaScript(DELETE_SCRIPT),
  snapshot: new LuaScript(SNAPSHOT_SCRIPT),
  renew: new LuaScript(RENEW_SCRIPT),
  reopen: new LuaScript(REOPEN_SCRIPT),
  failed: new LuaScript(FAILED_SCRIPT),
}

/**
 * Our own client keeps reconnecting in the background, but a call waits for one connection
 * attempt at most: a store whose server is away fails with `StoreError` within about a
 * second instead of queueing work indefinitely.
 */
const OWN_CLIENT_OPTIONS: RedisOptions = {
  lazyConnect: true,
  connectTimeout: 5_000,
  maxRetriesPerRequest: 0,
  retryStrategy: (attempt) => Math.min(attempt * 100, 1_000),
}

type SaveReply = ["OK", number, number, number, number, string] | ["STALE"] | ["LOST_CLAIM", string]

/** How often a save re-reads a conversation that other writers keep changing. */
const MAX_SAVE_ATTEMPTS = 20

/** One try of a save: the script's arguments, and the bodies sent from `base` on. */
interface SaveAttempt {
  args: (string | number)[]
  base: number
  bodies: string[]
}

/** A written save's outcome from the script's {"OK", revision, kept, read, deleted, pending id} reply. */
function savedOutcome(reply: SaveReply, attempt: SaveAttempt): WrittenSave {
  if (reply[0] !== "OK") throw new Error(`unexpected reply ${JSON.stringify(reply)}`)
  const [, revision, kept, read, deleted, pendingId] = reply
  const written = attempt.bodies.slice(kept - attempt.base)
  return {
    revision,
    pendingId: pendingId || null,
    stats: {
      messageRowsWritten: written.length,
      messageBytesWritten: byteLength(written),
      messageRowsDeleted: deleted,
      messageRowsRead: read,
    },
  }
}

function keptChanging(id: string): StoreError {
  return new StoreError(`${STORE} could not save conversation ${JSON.stringify(id)}: it kept changing`)
}

/** The fields of one holder row in the holders script's flat reply. */
const HOLDER_FIELDS = 9

/**
 * A {@link DurableStore} in Redis through ioredis: a list per transcript, so a save appends
 * only the new messages; every write is one Lua script, hence atomic. Lease times come from
 * the server's clock. Keys: `<prefix>conv:<id>` (hash), `<prefix>msgs:<id>` (list),
 * `<prefix>req:<request id>` (hash), `<prefix>holders:<request id>` and `<prefix>runtime:<key>`
 * (sets), `<prefix>pending` and `<prefix>claims` (sorted sets), `<prefix>snap:<key>`,
 * `<prefix>schema`. The scripts touch several keys they compute, so the store needs a single
 * Redis node (or a proxy), not Redis Cluster.
 */
export class RedisStore extends DurableStoreBase {
  protected readonly storeName = STORE
  readonly #client: Redis
  readonly #ownsClient: boolean
  readonly #prefix: string
  /** The prefix as the server sees it, for keys scripts compute themselves. */
  readonly #serverPrefix: string
  readonly #init: LazyInit<void>
  #lastConnectionError: Error | undefined

  constructor(options: RedisStoreOptions) {
    super(options, STORE)
    const source = checkExactlyOne(options as Record<string, unknown>, ["url", "client"], STORE)
    const prefix = options.keyPrefix ?? "tnx:"
    checkKey(prefix, `${STORE} option \`keyPrefix\``)
    const migrations = options.migrations ?? REDIS_MIGRATIONS
    if (!Array.isArray(migrations) || migrations.some((m) => typeof m !== "string")) {
      throw new ConfigError(`${STORE} option \`migrations\` must be an array of Lua strings`)
    }
    if (source === "url") {
      checkKey(options.url, `${STORE} option \`url\``)
      const ioredis = loadDriver<typeof import("ioredis")>("ioredis", STORE)
      const RedisClient = ioredis.Redis ?? ioredis.default
      this.#client = new RedisClient(options.url, {
        ...OWN_CLIENT_OPTIONS,
        connectTimeout: this.opTimeoutMs,
        commandTimeout: this.opTimeoutMs,
      })
      // Failed calls reject with their own error; keep the connection's for their message,
      // and keep ioredis from printing "Unhandled error event".
      this.#client.on("error", (error: Error) => {
        this.#lastConnectionError = error
      })
      this.#ownsClient = true
    } else {
      const client = options.client as Partial<Redis> | null
      if (typeof client !== "object" || client === null || typeof client.evalsha !== "function") {
        throw new ConfigError(`${STORE} option \`client\` must be an ioredis client`)
      }
      this.#client = options.client as Redis
      this.#ownsClient = false
    }
    this.#prefix = prefix
    this.#serverPrefix = (this.#client.options?.keyPrefix ?? "") + prefix
    const migrationScripts = migrations.map((chunk) => new LuaScript(migrationScript(chunk)))
    this.#init = new LazyInit(async () => {
      try {
        await this.#migrate(migrationScripts)
      } catch (error) {
        throw this.storeError(error, `prepare the keys under "${prefix}"`)
      }
    })
  }

  protected ready(): Promise<void> {
    return this.#init.get()
  }

  /**
   * Reads conversation `id`'s hash and its message list atomically (one script);
   * `undefined` when no such conversation is stored.
   */
  protected async readTranscript(id: string) {
    const reply = (await scripts.get.run(
      this.#client,
      [this.#key("conv:", id), this.#key("msgs:", id)],
      [],
    )) as [string, string | null, string[], string] | null
    if (reply === null) return undefined
    const [revision, count, bodies, pendingId] = reply
    return {
      /** The conversation hash's `rev`; prefix-reuse saves are checked against it. */
      revision: Number(revision),
      /** The hash's message `count` (0 when unset); the decode checks `rows` against it. */
      count: Number(count ?? 0),
      /** The id of the request the conversation waits on; `null` when it waits on none. */
      pendingId: pendingId || null,
      /** The message list's entries, in order. */
      rows: bodies.map((body, seq) => ({
        /** The entry's 0-based position in the message list. */
        seq,
        /** The message's JSON text, as stored. */
        body,
      })),
    }
  }

  /**
   * Saves a transcript as `input` describes, each try one script: first keeping the remembered
   * prefix, else at the revision read just before, retried while the row keeps changing (then
   * `StoreError`). A fenced save whose claim is gone reports `lostClaim`.
   */
  protected async writeTranscript(input: SaveInput): Promise<SaveOutcome> {
    const keys = this.#saveKeys(input.id)
    const attempt = this.#firstAttempt(input)
    let reply = attempt && ((await scripts.save.run(this.#client, keys, attempt.args)) as SaveReply)
    // Someone else wrote since we last looked (or we never did): read the row's revision and
    // pending request, decide `pending_since` from them, and let the script compare bodies at
    // that revision. A write in between makes it STALE, and we look again.
    let current = attempt
    for (let tries = 0; reply === undefined || reply[0] === "STALE"; tries++) {
      if (tries === MAX_SAVE_ATTEMPTS) throw keptChanging(input.id)
      current = await this.#rereadAttempt(input)
      reply = (await scripts.save.run(this.#client, keys, current.args)) as SaveReply
    }
    if (reply[0] === "LOST_CLAIM") return { lostClaim: reply[1] || null }
    return savedOutcome(reply, current as SaveAttempt)
  }

  /**
   * Every save and the snapshot in one script, which checks every claim and revision before
   * writing anything; a save found stale is re-read and the whole commit sent again.
   */
  protected async writeCommit(
    saves: SaveInput[],
    snapshot: SnapshotInput | undefined,
  ): Promise<CommitOutcome> {
    const attempts = await Promise.all(
      saves.map(async (input) => this.#firstAttempt(input) ?? (await this.#rereadAttempt(input))),
    )
    const keys = saves.flatMap((input) => this.#saveKeys(input.id))
    if (snapshot) keys.push(this.#key("snap:", snapshot.key), this.#key("runtime:", snapshot.key))
    const tail = snapshot ? this.#snapshotArgs(snapshot.key, snapshot.body, snapshot.holds) : []
    for (let tries = 0; ; tries++) {
      const args = [
        saves.length,
        snapshot ? "1" : "0",
        ...attempts.flatMap((a) => [a.args.length, ...a.args]),
        ...tail,
      ]
      const reply = (await scripts.commit.run(this.#client, keys, args)) as (string | number)[]
      if (reply[0] === "OK") {
        return attempts.map((attempt, i) =>
          savedOutcome(reply.slice(1 + 6 * i, 7 + 6 * i) as SaveReply, attempt),
        )
      }
      const input = saves[Number(reply[1]) - 1] as SaveInput
      if (reply[0] === "LOST_CLAIM")
        return { lostClaim: { id: input.id, requestId: String(reply[2]) || null } }
      if (reply[0] !== "STALE") throw new Error(`unexpected reply ${JSON.stringify(reply)}`)
      if (tries === MAX_SAVE_ATTEMPTS) throw keptChanging(input.id)
      attempts[Number(reply[1]) - 1] = await this.#rereadAttempt(input)
    }
  }

  #saveKeys(id: string): string[] {
    return [this.#key("conv:", id), this.#key("msgs:", id), this.#key("pending"), this.#key("claims")]
  }

  /**
   * The save keeping the remembered prefix: the script's fast path keeps the first `length`
   * rows stored at the remembered revision and replaces the rest (a resumed run's repaired
   * placeholder) without reading them. `undefined` when nothing is remembered.
   */
  #firstAttempt(input: SaveInput): SaveAttempt | undefined {
    const { reusable, pending } = input
    if (reusable === undefined) return undefined
    const bodies = input.encode(reusable.length)
    return this.#attempt(
      input,
      String(reusable.revision),
      reusable.length,
      reusable.stored,
      pending.since ?? "",
      bodies,
    )
  }

  /** The save at the revision read now, sending every message for the script to compare. */
  async #rereadAttempt(input: SaveInput): Promise<SaveAttempt> {
    const { pending } = input
    const [revision, pendingId] = await this.#client.hmget(this.#key("conv:", input.id), "rev", "pendingId")
    const since = pending.mode === "set" ? sinceOnSet(pendingId ?? null, pending.id) : ""
    return this.#attempt(input, revision ?? "0", -1, 0, since, input.encode())
  }

  #attempt(
    input: SaveInput,
    expected: string,
    base: number,
    stored: number,
    since: string,
    bodies: string[],
  ): SaveAttempt {
    const { id, transcript, pending } = input
    const args = [
      id,
      expected,
      base,
      transcript.length,
      input.claim ?? "",
      pending.mode,
      pending.json ?? "",
      pending.id ?? "",
      pending.kind ?? "",
      this.#serverPrefix,
      since,
      input.checkpoint ? "1" : "0",
      stored,
      ...bodies,
    ]
    return { args, base: Math.max(base, 0), bodies }
  }

  /** The JSON of the request conversation `id` waits on; `null` when it waits on none or is not stored. */
  protected readPendingJson(id: string): Promise<string | null> {
    return this.#client.hget(this.#key("conv:", id), "pending")
  }

  protected async readHolders(filter: { kind?: string; requestId?: string }): Promise<HolderRow[]> {
    const flat = (await scripts.holders.run(
      this.#client,
      [this.#key("pending")],
      [this.#serverPrefix, filter.requestId ?? "", filter.kind ?? "", filter.kind === undefined ? "0" : "1"],
    )) as string[]
    return holderRows(flat)
  }

  protected async readDecisionJson(requestId: string): Promise<string | null> {
    const [state, answer] = await this.#client.hmget(this.#key("req:", requestId), "state", "claimAnswer")
    return state === "applied" ? (answer ?? null) : null
  }

  /** The index rows of every `failed` request's holders, each with its `lastError` JSON (or `null`). */
  protected async readFailed(): Promise<FailedRow[]> {
    const flat = (await scripts.failed.run(
      this.#client,
      [this.#key("failed")],
      [this.#serverPrefix],
    )) as string[]
    const rows: FailedRow[] = []
    for (let i = 0; i < flat.length; i += HOLDER_FIELDS + 1) {
      const [row] = holderRows(flat.slice(i, i + HOLDER_FIELDS))
      if (row) rows.push({ ...row, lastError: flat[i + HOLDER_FIELDS] || null })
    }
    return rows
  }

  /**
   * Claims `input.answerId` on conversation `input.id` (or takes over an expired claim) under
   * the claim rules, in one script; a first approval is judged against the request's
   * `expiresAt` here, between two runs of it. A grant with the stored JSON, or a refusal.
   */
  /**
   * Claims `input.answerId` on conversation `input.id`: one script claims a plain first claim
   * or reads the facts; `judgeClaim` decides on them, and what it grants (a takeover, a first
   * approval whose `expiresAt` needs judging) or marks failed is written by a compare-and-set
   * script that writes nothing when a fact changed meanwhile, and the facts are read again.
   */
  protected async writeClaim(input: ClaimInput): Promise<ClaimOutcome> {
    const { id, answerId } = input
    const keys = [this.#key("conv:", id), this.#key("claims"), this.#key("msgs:", id)]
    // Each STALE means another write to the request or conversation landed: the next read
    // sees it, and usually refuses. The bound only guards against a store gone wild.
    for (let round = 0; ; round++) {
      if (round === 16)
        throw new StoreError(`${STORE} could not claim: request ${JSON.stringify(answerId)} kept changing`)
      const reply = (await scripts.claim.run(this.#client, keys, [
        id,
        answerId,
        input.answerJson,
        input.token,
        input.leaseMs,
        input.runtimeKey ?? "",
        this.#serverPrefix,
        input.approves ? "1" : "",
      ])) as string[]
      if (reply[0] === "claim") {
        // The fast path read a transcript too (as readTranscript does), of the conversation
        // the resume loads first: that load takes it instead of a round trip of its own.
        const [, pendingJson, revision, count, bodies, of, pendingId] = reply as [
          string,
          string,
          string | undefined,
          string,
          string[],
          string,
          string,
        ]
        const grant = { grant: "claim", pendingJson, answerJson: input.answerJson } as const
        if (revision === undefined) return grant
        return {
          ...grant,
          transcriptOf: of || id,
          transcript: {
            revision: Number(revision),
            count: Number(count || 0),
            pendingId: pendingId || null,
            rows: bodies.map((body, seq) => ({ seq, body })),
          },
        }
      }
      const [
        ,
        exists,
        pendingId,
        pending,
        consumed,
        state,
        runtimeKey,
        token,
        expires,
        answer,
        holder,
        attempts,
      ] = reply as string[]
      const holderPending = reply[12] as string
      const now = Number(reply[13])
      const judged = judgeClaim(
        {
          conversation: exists
            ? { pendingJson: pending || null, pendingId: pendingId || null, consumedId: consumed || null }
            : undefined,
          request: state
            ? {
                state: state as RequestRow["state"],
                runtimeKey: runtimeKey || null,
                claimToken: token || null,
                claimExpiresAt: expires ? Number(expires) : null,
                attempts: Number(attempts),
                claimAnswer: answer || null,
                claimHolderPendingId: holderPending || null,
              }
            : undefined,
          now,
        },
        input,
      )
      if (judged.write === "none") return judged.outcome
      const written = await scripts.claimWrite.run(this.#client, keys, [
        id,
        answerId,
        this.#serverPrefix,
        judged.write,
        pendingId as string,
        consumed as string,
        state as string,
        token as string,
        expires as string,
        holder as string,
        attempts as string,
        holderPending,
        ...(judged.write === "grant"
          ? [input.token, judged.answerJson, String(judged.claimExpiresAt)]
          : [input.exhaustedErrorJson()]),
      ])
      if (written === "OK") return judged.outcome
    }
  }

  protected async expireClaim(id: string, token: string, failure?: ClaimFailure): Promise<void> {
    await scripts.release.run(
      this.#client,
      [this.#key("conv:", id), this.#key("claims")],
      [id, token, this.#serverPrefix, failure?.errorJson ?? "", failure?.maxAttempts ?? 0],
    )
  }

  protected async renewLease(id: string, token: string, leaseMs: number): Promise<boolean> {
    const renewed = await scripts.renew.run(
      this.#client,
      [this.#key("conv:", id), this.#key("claims")],
      [id, token, this.#serverPrefix, leaseMs],
    )
    return renewed === 1
  }

  protected async reopenRequest(requestId: string): Promise<string | null> {
    const answer = await scripts.reopen.run(
      this.#client,
      [this.#key("req:", requestId), this.#key("claims"), this.#key("failed")],
      [requestId],
    )
    return typeof answer === "string" ? answer : null
  }

  /**
   * The claims whose lease ran out while their conversation still waits on the request,
   * soonest expired first; at most `limit` of them (all when `undefined`).
   */
  protected async readExpiredClaims(limit: number | undefined) {
    const flat = (await scripts.listExpired.run(
      this.#client,
      [this.#key("claims")],
      [this.#serverPrefix, limit ?? -1],
    )) as string[]
    const claims: {
      /** The id of the conversation the claim was taken on. */
      id: string
      /** The JSON of the request it waits on. */
      pending: string
      /** The JSON of the answer stored with the claim. */
      answer: string
    }[] = []
    for (let i = 0; i < flat.length; i += 3) {
      claims.push({ id: flat[i] as string, pending: flat[i + 1] as string, answer: flat[i + 2] as string })
    }
    return claims
  }

  /**
   * Deletes conversation `id` and its messages in one script, with its open request's entry
   * unless another conversation still holds it (an applied request keeps its decision).
   */
  protected async removeConversation(id: string): Promise<void> {
    await scripts.remove.run(
      this.#client,
      [this.#key("conv:", id), this.#key("msgs:", id), this.#key("pending"), this.#key("claims")],
      [id, this.#serverPrefix],
    )
  }

  /**
   * Stores the runtime snapshot JSON `body` under `key`. With `holds`, also replaces (in the
   * same script) the requests recorded as held by that runtime; without, they stay.
   */
  protected async writeSnapshot(key: string, body: string, holds: RuntimeHold[] | undefined): Promise<void> {
    await scripts.snapshot.run(
      this.#client,
      [this.#key("snap:", key), this.#key("runtime:", key)],
      this.#snapshotArgs(key, body, holds),
    )
  }

  #snapshotArgs(key: string, body: string, holds: RuntimeHold[] | undefined): string[] {
    const triples = (holds ?? []).flatMap((h) => [
      h.requestId,
      h.conversationId,
      h.path ? JSON.stringify(h.path) : "",
    ])
    return [this.#serverPrefix, key, body, holds === undefined ? "0" : "1", ...triples]
  }

  /** Sets the snapshot unless `key` has one (`SET NX`); true when it did. */
  protected async insertSnapshot(key: string, body: string): Promise<boolean> {
    return (await this.#client.set(this.#key("snap:", key), body, "NX")) === "OK"
  }

  /** The snapshot JSON saved under `key`; `null` when there is none. */
  protected readSnapshot(key: string): Promise<string | null> {
    return this.#client.get(this.#key("snap:", key))
  }

  /** Deletes the snapshot saved under `key` (nothing when there is none). */
  protected async removeSnapshot(key: string): Promise<void> {
    await this.#client.del(this.#key("snap:", key))
  }

  protected async release(): Promise<void> {
    if (!this.#ownsClient) return
    if (this.#client.status === "ready") {
      try {
        await this.#client.quit()
        return
      } catch {
        // Quitting needs the server; without it, dropping the socket is all that is left.
      }
    }
    this.#client.disconnect()
  }

  #key(kind: string, name = ""): string {
    return `${this.#prefix}${kind}${name}`
  }

  protected override storeError(error: unknown, what: string): Error {
    const connection = this.#lastConnectionError
    // ioredis reports a call given up for want of a connection as "max retries reached";
    // the connection's own error says what actually went wrong.
    if (connection !== undefined && (error as Error | null)?.name === "MaxRetriesPerRequestError") {
      return new StoreError(`${STORE} failed to ${what}: Redis is unreachable: ${connection.message}`, {
        cause: connection,
      })
    }
    return toStoreError(error, `${STORE} failed to ${what}`)
  }

  /** Upgrades the key layout one version at a time; a newer layout is refused before any write. */
  async #migrate(migrations: readonly LuaScript[]): Promise<void> {
    const known = migrations.length
    const what = `the toolnexus keys under Redis prefix "${this.#prefix}"`
    const schemaKey = this.#key("schema")
    let version = checkSchemaVersion((await this.#client.get(schemaKey)) ?? "0", known, what)
    while (version < known) {
      // Each step is a script that checks the version it upgrades from, so concurrent
      // starters cannot apply a step twice; a lost race just re-reads the version.
      await (migrations[version] as LuaScript).run(this.#client, [schemaKey], [version, this.#serverPrefix])
      version = checkSchemaVersion((await this.#client.get(schemaKey)) ?? "0", known, what)
    }
  }
}

/** Parses the holders script's flat reply, 9 fields per holder. */
function holderRows(flat: readonly string[]): HolderRow[] {
  const rows: HolderRow[] = []
  for (let i = 0; i + HOLDER_FIELDS <= flat.length; i += HOLDER_FIELDS) {
    const [conversationId, pending, requestId, since, state, runtimeKey, holder, path, attempts] = flat.slice(
      i,
      i + HOLDER_FIELDS,
    ) as string[]
    rows.push({
      conversationId: conversationId as string,
      pending: pending as string,
      requestId: requestId as string,
      sinceMs: Number(since),
      request:
        state === ""
          ? null
          : {
              state: state as RequestRow["state"],
              runtimeKey: runtimeKey || null,
              conversationId: holder || null,
              path: path || null,
              attempts: Number(attempts || 0),
            },
    })
  }
  return rows
}
