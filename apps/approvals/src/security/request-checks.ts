/** The hosts a service on loopback answers to when none are configured. */
export const LOOPBACK_HOSTS = ["localhost", "127.0.0.1", "[::1]"]

/**
 * True when the `Host` header names an allowed host. An entry without a port allows every
 * port of that host; with one, only that port. A DNS-rebinding page reaches the service under
 * its own name (`evil.example:3000`), which is not on the list.
 */
export function isAllowedHost(host: string | undefined, allowed: readonly string[]): boolean {
  if (!host) return false
  const wanted = host.toLowerCase()
  const name = hostName(wanted)
  return allowed.some((entry) => {
    const e = entry.toLowerCase()
    return e === wanted || (hostName(e) === e && e === name)
  })
}

/** The host part of `host[:port]`, brackets kept for IPv6. */
function hostName(host: string): string {
  if (host.startsWith("[")) return host.slice(0, host.indexOf("]") + 1)
  const colon = host.lastIndexOf(":")
  return colon === -1 ? host : host.slice(0, colon)
}

/**
 * True when a cookie-authenticated, state-changing request comes from the service's own
 * pages: its `Origin` is this host (a cross-site form or fetch carries the attacker's
 * origin), or, for browsers that omit `Origin`, `Sec-Fetch-Site` says same-origin.
 */
export function isSameOrigin(headers: { origin?: string; host?: string; fetchSite?: string }): boolean {
  const { origin, host, fetchSite } = headers
  if (fetchSite !== undefined && fetchSite !== "same-origin") return false
  if (origin === undefined) return fetchSite === "same-origin"
  if (!host) return false
  try {
    const url = new URL(origin)
    return (url.protocol === "http:" || url.protocol === "https:") && url.host === host.toLowerCase()
  } catch {
    // "null" (sandboxed frames, file: pages) and garbage.
    return false
  }
}

/** True for `application/json`, with or without parameters; `text/plain` and form types are not JSON. */
export function isJsonContentType(value: string | undefined): boolean {
  if (!value) return false
  return value.split(";", 1)[0]?.trim().toLowerCase() === "application/json"
}

/** The token of an `Authorization: Bearer <token>` header. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "")
  return match?.[1]
}
