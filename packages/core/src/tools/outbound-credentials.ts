import { NetworkError } from "../errors.js"

/** Options of {@link createCredentialedFetch}. */
export interface CredentialedFetchOptions {
  /** The origin the credentials belong to, or any URL on it (only its origin counts). */
  origin: string | URL
  /**
   * The credential headers (an API key, `Authorization`); a function is called per request, so
   * a value read from the environment at call time is picked up without a rebuild.
   */
  headers?: Record<string, string> | (() => Record<string, string>)
  /** More origins (or URLs on them) that may receive the credentials. */
  allowOrigins?: readonly (string | URL)[]
  /**
   * A redirect to an origin that may not receive the credentials: `"strip"` (default) follows
   * it without them, `"refuse"` rejects with a `NetworkError`.
   */
  crossOriginRedirect?: "strip" | "refuse"
  /** The most redirects one request follows (default 5); one more rejects with a `NetworkError`. */
  maxRedirects?: number
  /** The transport underneath (default: the global `fetch`). */
  fetch?: typeof fetch
}

const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308])
/** Credentials a caller may have set itself (an OAuth token, a cookie): never carried to another origin. */
const STANDARD_CREDENTIAL_HEADERS = ["authorization", "proxy-authorization", "cookie"]
/** Headers that describe a body, dropped when a redirect turns the request into a body-less GET. */
const BODY_HEADERS = [
  "content-type",
  "content-length",
  "content-encoding",
  "content-language",
  "content-location",
]

/**
 * A `fetch` that keeps credentials with their origin, the one rule for every outbound request
 * that carries configured headers or tokens (httpTool, a2aTool, the MCP remote transport):
 * - the credential headers are added only to requests to the configured origin (or one of
 *   `allowOrigins`); a request to any other origin — an endpoint a remote's own answer named,
 *   say — goes without them, even when the caller copied them into its headers;
 * - redirects are followed here, not by the transport (`redirect: "manual"` underneath, at most
 *   `maxRedirects` hops): a hop to another origin drops the credential headers and the standard
 *   ones (`Authorization`, `Cookie`, `Proxy-Authorization`), or is refused, per
 *   `crossOriginRedirect`. 301/302 after a POST and 303 become a GET without the body, as
 *   browsers do; a 307/308 with a one-shot stream body is returned as it is.
 * A caller's own `redirect: "manual"` or `"error"` is honoured.
 *
 * @param opts - the origin, its credentials, and what a cross-origin redirect does.
 * @returns a function with the signature of `fetch`.
 * @throws TypeError when `origin` or an `allowOrigins` entry is not an absolute URL.
 * @example
 * ```ts
 * const send = createCredentialedFetch({
 *   origin: "https://api.example.com",
 *   headers: () => ({ "x-api-key": process.env.API_KEY ?? "" }),
 * })
 * const reply = await send("https://api.example.com/v1/items")
 * ```
 */
export function createCredentialedFetch(opts: CredentialedFetchOptions): typeof fetch {
  const { headers: credentials, crossOriginRedirect = "strip", maxRedirects = 5 } = opts
  const allowed = new Set([originOf(opts.origin), ...(opts.allowOrigins ?? []).map(originOf)])
  const transport = opts.fetch ?? globalThis.fetch
  const current = (): Record<string, string> =>
    typeof credentials === "function" ? credentials() : (credentials ?? {})

  return async (input, init) => {
    const request = input instanceof Request ? input : undefined
    let url = new URL(request ? request.url : String(input))
    let method = (init?.method ?? request?.method ?? "GET").toUpperCase()
    const sent = new Headers(request?.headers)
    for (const [name, value] of new Headers(init?.headers)) sent.set(name, value)
    let body = init?.body !== undefined ? init.body : request?.body
    const mode = init?.redirect ?? request?.redirect ?? "follow"
    for (let hop = 0; ; hop++) {
      const headers = new Headers(sent)
      const given = current()
      if (allowed.has(url.origin)) {
        for (const [name, value] of Object.entries(given)) if (!headers.has(name)) headers.set(name, value)
      } else {
        // The caller may have merged the credentials in itself: they still stay home.
        for (const [name, value] of Object.entries(given))
          if (headers.get(name) === value) headers.delete(name)
      }
      const reply = await transport(url, {
        ...init,
        method,
        headers,
        body: body ?? null,
        signal: init?.signal ?? request?.signal ?? null,
        redirect: "manual",
        ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
      } as RequestInit)
      const location = reply.headers.get("location")
      if (mode === "manual" || !REDIRECT_STATUSES.has(reply.status) || location === null) return reply
      const toGet = reply.status === 303 ? method !== "HEAD" : reply.status <= 302 && method === "POST"
      // A stream was read by the first request; it cannot be sent again.
      if (!toGet && body instanceof ReadableStream) return reply
      await reply.body?.cancel().catch(() => {})
      if (mode === "error") throw new NetworkError(`${url.origin} answered a redirect (HTTP ${reply.status})`)
      if (hop >= maxRedirects) throw new NetworkError(`${url.origin}: more than ${maxRedirects} redirects`)
      const next = new URL(location, url)
      if (next.origin !== url.origin) {
        if (crossOriginRedirect === "refuse" && allowed.has(url.origin) && !allowed.has(next.origin)) {
          throw new NetworkError(
            `${url.origin} redirected to ${next.origin}: refused, credentials stay with their origin`,
          )
        }
        for (const name of [...Object.keys(given), ...STANDARD_CREDENTIAL_HEADERS]) sent.delete(name)
      }
      if (toGet) {
        method = "GET"
        body = undefined
        for (const name of BODY_HEADERS) sent.delete(name)
      }
      url = next
    }
  }
}

function originOf(value: string | URL): string {
  return new URL(String(value)).origin
}
