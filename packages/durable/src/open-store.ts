import { ConfigError } from "@toolnexus/core"
import type { DurableStore } from "./durable-store.js"

/** @internal Where a store URL points. */
export type StoreTarget =
  | { backend: "sqlite"; path: string }
  | { backend: "postgres"; connectionString: string }
  | { backend: "redis"; url: string }

const ACCEPTED =
  '"sqlite:./file.db", "sqlite:/abs/file.db", "sqlite::memory:", "postgres://…", "postgresql://…" ' +
  'or "redis://…"'

/**
 * Opens the durable store a URL names: `sqlite:./file.db`, `sqlite:/abs/file.db`,
 * `sqlite::memory:`, `postgres://…` / `postgresql://…`, or `redis://…` / `rediss://…`.
 * Only the chosen backend's module and driver are loaded. Throws `ConfigError` for any other
 * URL and when the backend's driver package is not installed. The store connects and creates
 * its schema on first use.
 */
export async function openStore(url: string): Promise<DurableStore> {
  const target = parseStoreUrl(url)
  switch (target.backend) {
    case "sqlite": {
      const { SqliteStore } = await import("./sqlite/index.js")
      return new SqliteStore({ path: target.path })
    }
    case "postgres": {
      const { PostgresStore } = await import("./postgres/index.js")
      return new PostgresStore({ connectionString: target.connectionString })
    }
    case "redis": {
      const { RedisStore } = await import("./redis/index.js")
      return new RedisStore({ url: target.url })
    }
  }
}

/** @internal Parses a store URL without loading anything; `ConfigError` when it names no backend. */
export function parseStoreUrl(url: string): StoreTarget {
  if (typeof url !== "string" || url.trim() === "") {
    throw new ConfigError(`openStore needs a store URL such as ${ACCEPTED}`)
  }
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase()
  if (scheme === "sqlite") return { backend: "sqlite", path: sqlitePath(url) }
  if ((scheme === "postgres" || scheme === "postgresql") && url.slice(scheme.length).startsWith("://")) {
    return { backend: "postgres", connectionString: url }
  }
  if ((scheme === "redis" || scheme === "rediss") && url.slice(scheme.length).startsWith("://")) {
    return { backend: "redis", url }
  }
  throw new ConfigError(`openStore cannot open ${redact(url)}: use ${ACCEPTED}`)
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
