import type { EndpointStyle } from "@toolnexus/core"

const STYLES: readonly EndpointStyle[] = ["openai", "anthropic", "openai-responses"]

/** The proxy's settings, read from the environment by {@link configFromEnv}. */
export interface RelayProxyConfig {
  upstream: { baseUrl: string; style: EndpointStyle; model: string; apiKey?: string }
  /** A `openStore` URL; default `sqlite:./.data/relay.db`. */
  storeUrl: string
  port: number
  host: string
  /** Tool results later than this are refused; undefined = never. */
  pendingTtlMs?: number
  /** Bearer keys callers must present; undefined = no caller authentication. */
  apiKeys?: string[]
  /** The largest accepted request body in bytes; undefined = the default (1 MiB). */
  maxBodyBytes?: number
}

/**
 * Reads the configuration: `UPSTREAM_BASE_URL`, `UPSTREAM_MODEL` (required), `UPSTREAM_STYLE`
 * (`openai` | `anthropic` | `openai-responses`, default `openai`), `UPSTREAM_API_KEY`, `RELAY_STORE_URL`, `PORT`
 * (default 8787), `HOST` (default 127.0.0.1), `RELAY_PENDING_TTL_SECONDS`, `RELAY_API_KEYS`
 * (comma-separated bearer keys callers must present) and `RELAY_MAX_BODY_BYTES`.
 *
 * @throws Error listing every missing or invalid variable; values are never echoed, so the API
 *   key cannot end up in a log.
 */
export function configFromEnv(env: NodeJS.ProcessEnv = process.env): RelayProxyConfig {
  const problems: string[] = []
  const baseUrl = env.UPSTREAM_BASE_URL ?? ""
  if (!/^https?:\/\//.test(baseUrl)) problems.push("UPSTREAM_BASE_URL must be an http(s) URL")
  const model = env.UPSTREAM_MODEL ?? ""
  if (model === "") problems.push("UPSTREAM_MODEL is required")
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
  const apiKeys = (env.RELAY_API_KEYS ?? "")
    .split(",")
    .map((key) => key.trim())
    .filter((key) => key !== "")
  if (problems.length > 0) throw new Error(`relay-proxy configuration: ${problems.join("; ")}`)
  return {
    upstream: {
      baseUrl,
      style: style as EndpointStyle,
      model,
      ...(env.UPSTREAM_API_KEY ? { apiKey: env.UPSTREAM_API_KEY } : {}),
    },
    storeUrl: env.RELAY_STORE_URL || "sqlite:./.data/relay.db",
    port,
    host: env.HOST || "127.0.0.1",
    ...(ttlSeconds !== undefined ? { pendingTtlMs: ttlSeconds * 1000 } : {}),
    ...(apiKeys.length > 0 ? { apiKeys } : {}),
    ...(maxBodyBytes !== undefined ? { maxBodyBytes } : {}),
  }
}
