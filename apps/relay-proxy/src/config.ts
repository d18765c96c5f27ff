import type { EndpointStyle } from "@toolnexus/core"

const STYLES: readonly EndpointStyle[] = ["openai", "anthropic", "openai-responses"]

/** The proxy's settings, read from the environment by {@link configFromEnv}. */
export interface RelayProxyConfig {
  /** The model endpoint; `offline` when UPSTREAM_BASE_URL is unset (a scripted model, no key). */
  upstream: { baseUrl: string; style: EndpointStyle; model: string; apiKey?: string } | "offline"
  /** A `openStore` URL; default `sqlite:./.data/relay.db`. */
  storeUrl: string
  port: number
  host: string
  /** Tool results later than this are refused; undefined = never. */
  pendingTtlMs?: number
  /** Bearer keys callers must present; undefined = no caller authentication. */
  apiKeys?: string[]
  /** Each caller key's name (`name:key` in RELAY_API_KEYS; `key-1`, `key-2`… otherwise), for logs. */
  keyNames?: Map<string, string>
  /** Set when a non-loopback HOST serves without caller keys because RELAY_ALLOW_UNAUTHENTICATED=1. */
  warning?: string
  /** The largest accepted request body in bytes; undefined = the default (1 MiB). */
  maxBodyBytes?: number
}

/**
 * Reads the configuration: `UPSTREAM_BASE_URL` (unset: the scripted offline model),
 * `UPSTREAM_MODEL` (required with a base URL), `UPSTREAM_STYLE` (`openai` | `anthropic` |
 * `openai-responses`, default `openai`), `UPSTREAM_API_KEY`, `RELAY_STORE_URL`, `PORT` (default
 * 8787), `HOST` (default 127.0.0.1), `RELAY_PENDING_TTL_SECONDS`, `RELAY_API_KEYS`
 * (comma-separated bearer keys callers must present, each optionally `name:key`),
 * `RELAY_ALLOW_UNAUTHENTICATED` and `RELAY_MAX_BODY_BYTES`. A HOST other than a loopback
 * address without RELAY_API_KEYS is refused unless RELAY_ALLOW_UNAUTHENTICATED=1, which serves
 * with a `warning`.
 *
 * @throws ConfigurationError listing every missing or invalid variable; values are never
 *   echoed, so the API key cannot end up in a log.
 */
export function configFromEnv(env: NodeJS.ProcessEnv = process.env): RelayProxyConfig {
  const problems: string[] = []
  const baseUrl = env.UPSTREAM_BASE_URL ?? ""
  const offline = baseUrl === ""
  if (!offline && !/^https?:\/\//.test(baseUrl)) problems.push("UPSTREAM_BASE_URL must be an http(s) URL")
  const model = env.UPSTREAM_MODEL ?? ""
  if (!offline && model === "") problems.push("UPSTREAM_MODEL is required with UPSTREAM_BASE_URL")
  const style = env.UPSTREAM_STYLE ?? "openai"
  if (!STYLES.includes(style as EndpointStyle))
    problems.push('UPSTREAM_STYLE must be "openai", "anthropic" or "openai-responses"')
  const port = Number(env.PORT ?? 8787)
  if (!Number.isInteger(port) || port < 0 || port > 65535) problems.push("PORT must be a port number")
  const ttl = env.RELAY_PENDING_TTL_SECONDS
  const ttlSeconds = ttl === undefined || ttl === "" ? undefined : Number(ttl)
  if (ttlSeconds !== undefined && !(ttlSeconds > 0)) problems.push("RELAY_PENDING_TTL_SECONDS must be > 0")
  const maxBody = env.RELAY_MAX_BODY_BYTES
  const maxBodyBytes = maxBody === undefined || maxBody === "" ? undefined : Number(maxBody)
  if (maxBodyBytes !== undefined && !(Number.isInteger(maxBodyBytes) && maxBodyBytes > 0))
    problems.push("RELAY_MAX_BODY_BYTES must be a positive integer")
  const keyNames = new Map<string, string>()
  const entries = (env.RELAY_API_KEYS ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "")
  for (const [index, entry] of entries.entries()) {
    // `name:key`; a name is a short word, so a key that merely contains ":" stays whole.
    const named = /^([A-Za-z0-9_.-]{1,40}):(.+)$/.exec(entry)
    const key = named ? (named[2] as string) : entry
    if (keyNames.has(key)) problems.push(`RELAY_API_KEYS lists key ${index + 1} twice`)
    keyNames.set(key, named ? (named[1] as string) : `key-${index + 1}`)
  }
  const apiKeys = [...keyNames.keys()]
  const host = env.HOST || "127.0.0.1"
  const allowOpen = env.RELAY_ALLOW_UNAUTHENTICATED === "1" || env.RELAY_ALLOW_UNAUTHENTICATED === "true"
  let warning: string | undefined
  if (!isLoopback(host) && apiKeys.length === 0) {
    if (allowOpen)
      warning = `HOST=${host} serves every caller unauthenticated (RELAY_ALLOW_UNAUTHENTICATED is set); set RELAY_API_KEYS to require keys`
    else
      problems.push(
        `HOST=${host} is not a loopback address and RELAY_API_KEYS is unset: anyone who reaches it could use the upstream key; set RELAY_API_KEYS, or RELAY_ALLOW_UNAUTHENTICATED=1 to serve without keys`,
      )
  }
  if (problems.length > 0) throw new ConfigurationError(problems)
  return {
    upstream: offline
      ? "offline"
      : {
          baseUrl,
          style: style as EndpointStyle,
          model,
          ...(env.UPSTREAM_API_KEY ? { apiKey: env.UPSTREAM_API_KEY } : {}),
        },
    storeUrl: env.RELAY_STORE_URL || "sqlite:./.data/relay.db",
    port,
    host,
    ...(ttlSeconds !== undefined ? { pendingTtlMs: ttlSeconds * 1000 } : {}),
    ...(apiKeys.length > 0 ? { apiKeys, keyNames } : {}),
    ...(warning ? { warning } : {}),
    ...(maxBodyBytes !== undefined ? { maxBodyBytes } : {}),
  }
}

/** A configuration the proxy cannot start with: every problem, one line, no stack trace needed. */
export class ConfigurationError extends Error {
  override readonly name = "ConfigurationError"
  readonly problems: readonly string[]
  constructor(problems: readonly string[]) {
    super(`relay-proxy configuration: ${problems.join("; ")}`)
    this.problems = problems
  }
}

/** 127.0.0.0/8, ::1 and localhost: only this machine can connect. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "").toLowerCase()
  return bare === "localhost" || bare === "::1" || /^127(\.\d{1,3}){3}$/.test(bare)
}
