import { ConfigError } from "@toolnexus/core"
import Database from "better-sqlite3"
import { describe, expect, it } from "vitest"
import { PostgresStore } from "../src/postgres/index.js"
import { RedisStore } from "../src/redis/index.js"
import { SqliteStore } from "../src/sqlite/index.js"

/** Asserts `create` throws ConfigError at once, with a message matching `names`. */
function refuses(create: () => unknown, names: RegExp): void {
  expect(create).toThrow(ConfigError)
  expect(create).toThrow(names)
}

describe("store constructors validate eagerly and name the bad option", () => {
  it("SqliteStore", () => {
    refuses(() => new SqliteStore(undefined as never), /options must be an object/)
    refuses(() => new SqliteStore({}), /exactly one of `path` or `db`; got neither/)
    const db = new Database(":memory:")
    refuses(() => new SqliteStore({ path: ":memory:", db }), /`path` and `db`/)
    refuses(() => new SqliteStore({ path: "" }), /`path`/)
    refuses(() => new SqliteStore({ path: 3 as unknown as string }), /`path`/)
    refuses(() => new SqliteStore({ db: {} as Database.Database }), /`db` must be a better-sqlite3 Database/)
    db.close()
    refuses(() => new SqliteStore({ db }), /`db` is a closed database/)
  })

  it("PostgresStore", () => {
    refuses(() => new PostgresStore({}), /exactly one of `connectionString` or `pool`/)
    refuses(() => new PostgresStore({ connectionString: "" }), /`connectionString`/)
    refuses(() => new PostgresStore({ pool: 1 as never }), /`pool` must be a pg Pool/)
    for (const schema of ["", "bad-name", 'x"; DROP TABLE y; --', "1abc", "a".repeat(64)]) {
      refuses(() => new PostgresStore({ connectionString: "postgres://h/db", schema }), /`schema`/)
    }
  })

  it("RedisStore", () => {
    refuses(() => new RedisStore({}), /exactly one of `url` or `client`/)
    refuses(() => new RedisStore({ url: "" }), /`url`/)
    refuses(() => new RedisStore({ client: {} as never }), /`client` must be an ioredis client/)
    refuses(() => new RedisStore({ url: "redis://h", keyPrefix: "" }), /`keyPrefix`/)
  })
})

describe("a store given the host's connection", () => {
  it("leaves a better-sqlite3 database open on close", async () => {
    const db = new Database(":memory:")
    const store = new SqliteStore({ db })
    await store.save("c", [{ role: "user", content: "hi" }])
    await store.close()
    expect(db.open).toBe(true)
    expect(db.prepare("SELECT count(*) AS n FROM tnx_messages").get()).toEqual({ n: 1 })
    db.close()
  })

  it("closes a database it opened itself", async () => {
    const store = new SqliteStore({ path: ":memory:" })
    await store.save("c", [])
    await store.close()
    await expect(store.get("c")).rejects.toThrow(/closed/)
  })
})
