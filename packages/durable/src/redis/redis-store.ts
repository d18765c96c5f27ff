import {
  type Answer,
  ConfigError,
  type Message,
  type Request,
  type SaveMeta,
  StoreError,
} from "@toolnexus/core"
import type { Redis, RedisOptions } from "ioredis"
import type {
  AnswerClaim,
  ClaimOptions,
  DurableStore,
  ExpiredClaim,
  ListExpiredClaimsOptions,
  ListPendingOptions,
  PendingEntry,
} from "../durable-store.js"
import {
  type ClaimRefusal,
  claimRefusalError,
  lostClaimError,
  newClaimToken,
} from "../internal/claim-rules.js"
import { LazyInit } from "../internal/lazy-init.js"
import { loadDriver } from "../internal/load-driver.js"
import { MessageCache } from "../internal/message-cache.js"
import {
  byteLength,
  decodeJson,
  decodeTranscript,
  encodeJson,
  encodeMessages,
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
import { checkSchemaVersion } from "../internal/schema-version.js"
import { closedStoreError, toStoreError } from "../internal/store-errors.js"
import { WriteCounter, type WriteStats } from "../internal/write-stats.js"
import { LuaScript } from "./lua-script.js"
import { REDIS_MIGRATIONS } from "./migrations.js"
import {
  CLAIM_SCRIPT,
  GET_SCRIPT,
  LIST_EXPIRED_SCRIPT,
  LIST_PENDING_SCRIPT,
  migrationScript,
  RELEASE_SCRIPT,
  SAVE_SCRIPT,
} from "./redis-scripts.js"

/** Options of {@link RedisStore}: exactly one of `url` and `client`. */
export interface RedisStoreOptions {
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
  get: new LuaScript(GET_SCRIPT),
  claim: new LuaScript(CLAIM_SCRIPT),
  release: new LuaScript(RELEASE_SCRIPT),
  listPending: new LuaScript(LIST_PENDING_SCRIPT),
  listExpired: new LuaScript(LIST_EXPIRED_SCRIPT),
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

type SaveReply = ["OK", number, number, number, number] | ["STALE"] | ["LOST_CLAIM", string]

/**
 * A {@link DurableStore} in Redis through ioredis: a list per transcript, so a save appends
 * only the new messages; every write is one Lua script, hence atomic. Lease times come from
 * the server's clock. Keys: `<prefix>conv:<id>` (hash), `<prefix>msgs:<id>` (list),
 * `<prefix>pending` and `<prefix>claims` (sorted sets), `<prefix>snap:<key>`, `<prefix>schema`.
 * The scripts touch several conversations' keys, so the store needs a single Redis node
 * (or a proxy), not Redis Cluster.
 */
export class RedisStore implements DurableStore {
  readonly #client: Redis
  readonly #ownsClient: boolean
  readonly #prefix: string
  /** The prefix as the server sees it, for keys scripts compute themselves. */
  readonly #serverPrefix: string
  readonly #init: LazyInit<void>
  readonly #cache = new MessageCache()
  readonly #writes = new WriteCounter()
  #lastConnectionError: Error | undefined
  #closed = false

  constructor(options: RedisStoreOptions) {
    checkOptions(options, STORE)
    const source = checkExactlyOne(options, ["url", "client"], STORE)
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
      this.#client = new RedisClient(options.url, OWN_CLIENT_OPTIONS)
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
        throw this.#storeError(error, `could not prepare the keys under "${prefix}"`)
      }
    })
  }

  /** @internal What this store wrote so far; tests use it to check saves are incremental. */
  get stats(): WriteStats {
    return this.#writes.snapshot()
  }

  async get(id: string): Promise<Message[] | undefined> {
    checkKey(id, "the conversation id")
    const reply = (await this.#use(`read conversation ${JSON.stringify(id)}`, (client) =>
      scripts.get.run(client, [this.#key("conv:", id), this.#key("msgs:", id)], []),
    )) as [string, string | null, string[]] | null
    if (reply === null) return undefined
    const [revision, count, bodies] = reply
    const rows = bodies.map((body, seq) => ({ seq, body }))
    const messages = decodeTranscript(id, Number(count ?? 0), rows)
    this.#cache.remember(id, Number(revision), messages)
    return messages
  }

  async save(id: string, messages: Message[], meta?: SaveMeta): Promise<void> {
    checkSave(id, messages, meta)
    // The caller may keep appending to its array while we wait on the server.
    const transcript = messages.slice()
    const pending = meta?.pending
    const pendingArgs =
      pending === undefined
        ? ["keep", "", "", ""]
        : pending === null
          ? ["clear", "", "", ""]
          : [
              "set",
              encodeJson(pending, () => `the pending request of conversation ${JSON.stringify(id)}`),
              pending.id,
              pending.kind,
            ]
    const keys = [this.#key("conv:", id), this.#key("msgs:", id), this.#key("pending"), this.#key("claims")]
    const run = (expected: string, base: number, bodies: string[]) =>
      this.#use(
        `save conversation ${JSON.stringify(id)}`,
        (client) =>
          scripts.save.run(client, keys, [
            id,
            expected,
            base,
            transcript.length,
            meta?.claim ?? "",
            ...pendingArgs,
            ...bodies,
          ]) as Promise<SaveReply>,
      )
    const reusable = this.#cache.reusablePrefix(id, transcript)
    let base = 0
    let bodies: string[] | undefined
    let reply: SaveReply | undefined
    if (reusable !== undefined) {
      base = reusable.length
      bodies = encodeMessages(id, transcript, base)
      reply = await run(String(reusable.revision), base, bodies)
    }
    if (reply === undefined || reply[0] === "STALE") {
      // Someone else wrote since we last looked (or we never did): let the script compare.
      base = 0
      bodies = encodeMessages(id, transcript)
      reply = await run("", 0, bodies)
    }
    if (reply[0] === "LOST_CLAIM") throw lostClaimError(id, reply[1] || null)
    if (reply[0] !== "OK")
      throw this.#storeError(new Error(`unexpected reply ${JSON.stringify(reply)}`), "save")
    const [, revision, kept, read, deleted] = reply
    const written = (bodies ?? []).slice(kept - base)
    this.#writes.record({
      messageRowsWritten: written.length,
      messageBytesWritten: byteLength(written),
      messageRowsDeleted: deleted,
      messageRowsRead: read,
    })
    this.#cache.remember(id, revision, transcript)
  }

  async getPending(id: string): Promise<Request | undefined> {
    checkKey(id, "the conversation id")
    const pending = await this.#use(`read the pending request of ${JSON.stringify(id)}`, (client) =>
      client.hget(this.#key("conv:", id), "pending"),
    )
    if (pending === null) return undefined
    return decodeJson<Request>(pending, () => `the pending request of conversation ${JSON.stringify(id)}`)
  }

  async listPending(opts?: ListPendingOptions): Promise<PendingEntry[]> {
    const limit = resolveLimit(opts?.limit)
    const kind = resolveKind(opts?.kind)
    const flat = (await this.#use("list pending requests", (client) =>
      scripts.listPending.run(
        client,
        [this.#key("pending")],
        [`${this.#serverPrefix}conv:`, limit ?? -1, kind ?? "", kind === undefined ? "0" : "1"],
      ),
    )) as string[]
    const entries: PendingEntry[] = []
    for (let i = 0; i < flat.length; i += 3) {
      const id = flat[i] as string
      entries.push({
        id,
        request: decodeJson<Request>(flat[i + 1], () => `the pending request of conversation ${id}`),
        since: new Date(Number(flat[i + 2])).toISOString(),
      })
    }
    return entries
  }

  async claimAnswer(id: string, answer: Answer, opts?: ClaimOptions): Promise<AnswerClaim> {
    checkKey(id, "the conversation id")
    checkAnswer(answer)
    const leaseMs = resolveLeaseMs(opts?.leaseMs)
    const answerJson = encodeJson(answer, () => `the answer to request ${JSON.stringify(answer.id)}`)
    const token = newClaimToken()
    const reply = (await this.#use(`claim an answer for conversation ${JSON.stringify(id)}`, (client) =>
      scripts.claim.run(
        client,
        [this.#key("conv:", id), this.#key("claims")],
        [id, answer.id, answerJson, token, leaseMs],
      ),
    )) as [string, string?, string?]
    const [outcome, pending, stored] = reply
    if (outcome !== "claim" && outcome !== "takeover") {
      throw claimRefusalError(outcome as ClaimRefusal, id, answer.id)
    }
    return {
      token,
      answer: decodeJson<Answer>(stored, () => `the claimed answer of conversation ${JSON.stringify(id)}`),
      request: decodeJson<Request>(
        pending,
        () => `the pending request of conversation ${JSON.stringify(id)}`,
      ),
      takeover: outcome === "takeover",
    }
  }

  async releaseClaim(id: string, token: string): Promise<void> {
    checkKey(id, "the conversation id")
    checkKey(token, "the claim token")
    await this.#use(`release a claim on conversation ${JSON.stringify(id)}`, (client) =>
      scripts.release.run(client, [this.#key("conv:", id), this.#key("claims")], [id, token]),
    )
  }

  async listExpiredClaims(opts?: ListExpiredClaimsOptions): Promise<ExpiredClaim[]> {
    const limit = resolveLimit(opts?.limit)
    const flat = (await this.#use("list expired claims", (client) =>
      scripts.listExpired.run(client, [this.#key("claims")], [`${this.#serverPrefix}conv:`, limit ?? -1]),
    )) as string[]
    const claims: ExpiredClaim[] = []
    for (let i = 0; i < flat.length; i += 3) {
      const id = flat[i] as string
      claims.push({
        id,
        request: decodeJson<Request>(flat[i + 1], () => `the pending request of conversation ${id}`),
        answer: decodeJson<Answer>(flat[i + 2], () => `the claimed answer of conversation ${id}`),
      })
    }
    return claims
  }

  async putSnapshot(key: string, snapshot: unknown): Promise<void> {
    checkKey(key, "the snapshot key")
    const body = encodeJson(snapshot, () => `snapshot ${JSON.stringify(key)}`)
    await this.#use(`store snapshot ${JSON.stringify(key)}`, (client) =>
      client.set(this.#key("snap:", key), body),
    )
  }

  async getSnapshot(key: string): Promise<unknown | undefined> {
    checkKey(key, "the snapshot key")
    const body = await this.#use(`read snapshot ${JSON.stringify(key)}`, (client) =>
      client.get(this.#key("snap:", key)),
    )
    if (body === null) return undefined
    return decodeJson(body, () => `snapshot ${JSON.stringify(key)}`)
  }

  async deleteSnapshot(key: string): Promise<void> {
    checkKey(key, "the snapshot key")
    await this.#use(`delete snapshot ${JSON.stringify(key)}`, (client) => client.del(this.#key("snap:", key)))
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
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

  /** Runs `fn` once the key layout is current, turning driver failures into `StoreError`. */
  async #use<T>(what: string, fn: (client: Redis) => Promise<T>): Promise<T> {
    if (this.#closed) throw closedStoreError(STORE)
    await this.#init.get()
    if (this.#closed) throw closedStoreError(STORE)
    try {
      return await fn(this.#client)
    } catch (error) {
      throw this.#storeError(error, `failed to ${what}`)
    }
  }

  #storeError(error: unknown, what: string): Error {
    const connection = this.#lastConnectionError
    // ioredis reports a call given up for want of a connection as "max retries reached";
    // the connection's own error says what actually went wrong.
    if (connection !== undefined && (error as Error | null)?.name === "MaxRetriesPerRequestError") {
      return new StoreError(`${STORE} ${what}: Redis is unreachable: ${connection.message}`, {
        cause: connection,
      })
    }
    return toStoreError(error, `${STORE} ${what}`)
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
