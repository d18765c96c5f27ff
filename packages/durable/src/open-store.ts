import { ConfigError } from "@toolnexus/core"
import type { DurableStore } from "./durable-store.js"

/** @internal Where a store URL points, with the store options its query parameters set. */
export type StoreTarget =
  | { backend: "sqlite"; path: string; opTimeoutMs?: number }
  | { backend: "postgres"; connectionString: string; opTimeoutMs?: number; schema?: string }
  | { backend: "redis"; url: string; opTimeoutMs?: number; keyPrefix?: string }

/** The query parameters `openStore` reads as store options (and removes from the URL). */
const STORE_PARAMS = {
  sqlite: ["opTimeoutMs"],
  postgres: ["opTimeoutMs", "schema"],
  redis: ["opTimeoutMs", "keyPrefix"],
}

const ACCEPTED =
  '"sqlite:./file.db", "sqlite:/abs/file.db", "sqlite::memory:", "postgres://…", "postgresql://…" ' +
  'or "redis://…"'

/**
 * Opens the durable store a URL names: `sqlite:./file.db`, `sqlite:/abs/file.db`,
 * `sqlite::memory:`, `postgres://…` / `postgresql://…`, or `redis://…` / `rediss://…`.
 * Only the chosen backend's module and driver are loaded. Throws `ConfigError` for any other
 * URL and when the backend's driver package is not installed. The store connects and creates
 * its schema on first use.
 *
 * Query parameters set store options (and are not passed to the driver): `opTimeoutMs` on
 * every backend, `schema` on PostgreSQL, `keyPrefix` on Redis — e.g.
 * `postgres://db/app?schema=tenant_a&opTimeoutMs=5000`, `redis://cache:6379?keyPrefix=app:`.
 */
export async function openStore(url: string): Promise<DurableStore> {
  const target = parseStoreUrl(url)
  const { backend: _backend, ...options } = target
  switch (target.backend) {
    case "sqlite": {
      const { SqliteStore } = await import("./sqlite/index.js")
      return new SqliteStore(options as { path: string })
    }
    case "postgres": {
      const { PostgresStore } = await import("./postgres/index.js")
      return new PostgresStore(options as { connectionString: string })
    }
    case "redis": {
      const { RedisStore } = await import("./redis/index.js")
      return new RedisStore(options as { url: string })
    }
  }
}

/** @internal Parses a store URL without loading anything; `ConfigError` when it names no backend. */
export function parseStoreUrl(url: string): StoreTarget {
  if (typeof url !== "string" || url.trim() === "") {
    throw new ConfigError(`openStore needs a store URL such as ${ACCEPTED}`)
  }
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase()
  if (scheme === "sqlite") {
    const { rest, options } = storeParams(url, "sqlite")
    return { backend: "sqlite", path: sqlitePath(rest), ...options }
  }
  if ((scheme === "postgres" || scheme === "postgresql") && url.slice(scheme.length).startsWith("://")) {
    const { rest, options } = storeParams(url, "postgres")
    return { backend: "postgres", connectionString: rest, ...options }
  }
  if ((scheme === "redis" || scheme === "rediss") && url.slice(scheme.length).startsWith("://")) {
    const { rest, options } = storeParams(url, "redis")
    return { backend: "redis", url: rest, ...options }
  }
  throw new ConfigError(`openStore cannot open ${redact(url)}: use ${ACCEPTED}`)
}

/** Takes the store-option query parameters out of `url`; the others stay for the driver. */
function storeParams(
  url: string,
  backend: keyof typeof STORE_PARAMS,
): { rest: string; options: { opTimeoutMs?: number; schema?: string; keyPrefix?: string } } {
  const q = url.indexOf("?")
  if (q === -1) return { rest: url, options: {} }
  const params = new URLSearchParams(url.slice(q + 1))
  const options: { opTimeoutMs?: number; schema?: string; keyPrefix?: string } = {}
  for (const name of STORE_PARAMS[backend]) {
    const value = params.get(name)
    if (value === null) continue
    params.delete(name)
    if (name === "opTimeoutMs") {
      const ms = Number(value)
      if (value.trim() === "" || !Number.isFinite(ms) || ms <= 0) {
        throw new ConfigError(
          `openStore: opTimeoutMs must be a positive number of milliseconds, got ${JSON.stringify(value)}`,
        )
      }
      options.opTimeoutMs = ms
    } else options[name as "schema" | "keyPrefix"] = value
  }
  const left = params.toString()
  return { rest: url.slice(0, q) + (left ? `?${left}` : ""), options }
}

function sqlitePath(url: string): string {
  const rest = url.slice("sqlite:".length)
  // "sqlite:///abs/file.db" is the URL spelling of an absolute path; "sqlite://x" would read
  // as a host, which SQLite has no notion of.
  if (rest.startsWith("//")) {
    if (rest.startsWith("///")) return rest.slice(2)
    throw new ConfigError(
      `openStore cannot open ${redact(url)}: a SQLite URL names a file, not a host; use ${ACCEPTED}`,
    )
  }
  if (rest === "") throw new ConfigError(`openStore needs a file after "sqlite:"; use ${ACCEPTED}`)
  return rest
}

/** Keeps passwords out of error messages. */
function redact(url: string): string {
  return JSON.stringify(url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*):[^@/]*@/i, "$1:***@"))
}
