import { mkdtempSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ConfigError } from "@toolnexus/core"
import { afterAll, describe, expect, it } from "vitest"
import { loadDriver } from "../src/store-engine/load-driver.js"
import { openStore, parseStoreUrl } from "../src/open-store.js"
import { PostgresStore } from "../src/postgres/index.js"
import { RedisStore } from "../src/redis/index.js"
import { SqliteStore } from "../src/sqlite/index.js"

const dir = mkdtempSync(join(tmpdir(), "tnx-durable-open-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("parseStoreUrl", () => {
  it.each([
    ["sqlite:./file.db", { backend: "sqlite", path: "./file.db" }],
    ["sqlite:file.db", { backend: "sqlite", path: "file.db" }],
    ["sqlite:/abs/file.db", { backend: "sqlite", path: "/abs/file.db" }],
    ["sqlite:///abs/file.db", { backend: "sqlite", path: "/abs/file.db" }],
    ["sqlite::memory:", { backend: "sqlite", path: ":memory:" }],
    ["postgres://u:p@db:5432/app", { backend: "postgres", connectionString: "postgres://u:p@db:5432/app" }],
    [
      "postgresql://db/app?sslmode=require",
      { backend: "postgres", connectionString: "postgresql://db/app?sslmode=require" },
    ],
    ["redis://127.0.0.1:6379/2", { backend: "redis", url: "redis://127.0.0.1:6379/2" }],
    ["rediss://cache.example:6380", { backend: "redis", url: "rediss://cache.example:6380" }],
  ])("reads %s", (url, target) => {
    expect(parseStoreUrl(url)).toEqual(target)
  })

  it.each([
    "",
    "   ",
    "file.db",
    "./file.db",
    "sqlite:",
    "sqlite://host/file.db",
    "postgres:app",
    "mysql://localhost/app",
    "http://localhost:6379",
    "file:./file.db",
    "mongodb://localhost",
  ])("refuses %j with ConfigError", (url) => {
    expect(() => parseStoreUrl(url)).toThrow(ConfigError)
  })

  it("refuses non-strings and keeps passwords out of the message", () => {
    expect(() => parseStoreUrl(undefined as unknown as string)).toThrow(ConfigError)
    expect(() => parseStoreUrl("mysql://admin:hunter2@db/app")).toThrow(/admin:\*\*\*@db/)
    expect(() => parseStoreUrl("mysql://admin:hunter2@db/app")).not.toThrow(/hunter2/)
  })
})

describe("openStore", () => {
  it("opens a SQLite file, creating it", async () => {
    const file = join(dir, "open.db")
    const store = await openStore(`sqlite:${file}`)
    expect(store).toBeInstanceOf(SqliteStore)
    await store.save("c", [{ role: "user", content: "hi" }])
    await store.close()
    expect(statSync(file).size).toBeGreaterThan(0)
    const again = await openStore(`sqlite://${file}`)
    expect(await again.get("c")).toEqual([{ role: "user", content: "hi" }])
    await again.close()
  })

  it("opens an in-memory SQLite database", async () => {
    const store = await openStore("sqlite::memory:")
    expect(store).toBeInstanceOf(SqliteStore)
    expect(await store.get("nothing")).toBeUndefined()
    await store.close()
  })

  it("opens PostgreSQL and Redis stores without connecting yet", async () => {
    const pg = await openStore("postgresql://postgres@127.0.0.1:1/none")
    expect(pg).toBeInstanceOf(PostgresStore)
    await pg.close()
    const redis = await openStore("redis://127.0.0.1:1")
    expect(redis).toBeInstanceOf(RedisStore)
    await redis.close()
  })

  it("rejects anything else with ConfigError", async () => {
    await expect(openStore("mysql://localhost/db")).rejects.toBeInstanceOf(ConfigError)
    await expect(openStore("")).rejects.toBeInstanceOf(ConfigError)
  })
})

describe("a missing driver", () => {
  it("is a ConfigError saying what to install", () => {
    expect(() => loadDriver("tnx-no-such-driver", "TestStore")).toThrow(ConfigError)
    expect(() => loadDriver("tnx-no-such-driver", "TestStore")).toThrow(/npm install tnx-no-such-driver/)
  })
})
