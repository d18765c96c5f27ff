// The stores the round-trip benches count (round-trips.mjs, host-round-trips.mjs): SQLite,
// PostgreSQL and Redis, each over a driver wrapped so that `meter` sees every round trip:
// SQLite statements run (better-sqlite3 `Statement#run/get/all/iterate`) and write
// transactions (`db.transaction(...)` bodies run); PostgreSQL `query` calls on the pool's
// clients (BEGIN and COMMIT included); Redis commands sent (EVALSHA counted as one).
import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/**
 * What a bench counts: `roundTrip()` per driver call, `transaction()` per write transaction
 * begun, `command(name)` per Redis command (its name).
 * @typedef {{ roundTrip(): void, transaction(): void, command(name: string): void }} Meter
 */

/** `store` with `onCall(name)` called before each of its methods (`close` aside). */
export function countingStore(store, onCall) {
  return new Proxy(store, {
    get(target, name) {
      const value = Reflect.get(target, name, target)
      if (typeof value !== "function" || typeof name !== "string" || name === "close") return value
      return (...args) => {
        onCall(name)
        return value.apply(target, args)
      }
    },
  })
}

/**
 * The backends to measure, as `[name, open]`; `open` is undefined where the environment names
 * no server (TOOLNEXUS_TEST_PG_URL, TOOLNEXUS_TEST_REDIS_URL). `prefix` names the temporary
 * folder, schema and keys.
 * @param {Meter} meter
 * @param {string} prefix
 */
export function countedBackends(meter, prefix) {
  const pg = process.env.TOOLNEXUS_TEST_PG_URL
  const redis = process.env.TOOLNEXUS_TEST_REDIS_URL
  return [
    ["sqlite", () => sqliteBackend(meter, prefix)],
    ["postgres", pg && (() => postgresBackend(meter, prefix, pg))],
    ["redis", redis && (() => redisBackend(meter, prefix, redis))],
  ]
}

/** better-sqlite3 with every statement and write transaction counted. */
async function sqliteBackend(meter, prefix) {
  const { default: Database } = await import("better-sqlite3")
  const { SqliteStore } = await import("@toolnexus/durable/sqlite")
  const dir = mkdtempSync(join(tmpdir(), `${prefix}-`))
  const db = new Database(join(dir, "runs.db"))
  db.pragma("journal_mode = WAL")
  const prepare = db.prepare.bind(db)
  db.prepare = (sql) => {
    const statement = prepare(sql)
    for (const method of ["run", "get", "all", "iterate"]) {
      const original = statement[method].bind(statement)
      statement[method] = (...args) => {
        meter.roundTrip()
        return original(...args)
      }
    }
    return statement
  }
  const transaction = db.transaction.bind(db)
  db.transaction = (fn) =>
    transaction((...args) => {
      meter.transaction()
      return fn(...args)
    })
  return {
    store: new SqliteStore({ db }),
    close() {
      db.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** A pg pool whose queries (on the pool and on checked-out clients) are counted. */
async function postgresBackend(meter, prefix, url) {
  const { default: pg } = await import("pg")
  const { PostgresStore } = await import("@toolnexus/durable/postgres")
  const pool = new pg.Pool({ connectionString: url, max: 4 })
  const schema = `${prefix.replaceAll("-", "_")}_${randomUUID().slice(0, 8)}`
  // pg's own pool.query runs on a pooled client's query: counting clients counts both.
  pool.on("connect", (client) => {
    const clientQuery = client.query.bind(client)
    client.query = (...args) => {
      meter.roundTrip()
      if (args[0] === "BEGIN" || args[0]?.text === "BEGIN") meter.transaction()
      return clientQuery(...args)
    }
  })
  return {
    store: new PostgresStore({ pool, schema }),
    async close() {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      await pool.end()
    },
  }
}

/** An ioredis client whose commands are counted (a script run by SHA is one). */
async function redisBackend(meter, prefix, url) {
  const { Redis } = await import("ioredis")
  const { RedisStore } = await import("@toolnexus/durable/redis")
  const client = new Redis(url)
  const keyPrefix = `${prefix}-${randomUUID().slice(0, 8)}:`
  const send = client.sendCommand.bind(client)
  client.sendCommand = (command, ...rest) => {
    // A NOSCRIPT reply is followed by an EVAL: the first delivery only, the warm-up's.
    meter.roundTrip()
    meter.command(command.name)
    return send(command, ...rest)
  }
  return {
    store: new RedisStore({ client, keyPrefix }),
    async close() {
      const keys = await client.keys(`${keyPrefix}*`)
      if (keys.length > 0) await client.del(...keys)
      await client.quit()
    },
  }
}
