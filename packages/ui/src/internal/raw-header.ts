/**
 * Headers Node keeps the first of when a request repeats them (`IncomingMessage.headers`
 * discards the others); any other repeated header is joined with ", " (`cookie` with "; ").
 */
const FIRST_WINS = new Set([
  "age",
  "authorization",
  "content-length",
  "content-type",
  "etag",
  "expires",
  "from",
  "host",
  "if-modified-since",
  "if-unmodified-since",
  "last-modified",
  "location",
  "max-forwards",
  "proxy-authorization",
  "referer",
  "retry-after",
  "server",
  "user-agent",
])

/**
 * @internal A request header by lower-case `name`, read from `IncomingMessage.rawHeaders` as
 * `req.headers[name]` would give it (a `set-cookie` list joined with ", "), without making
 * Node build the whole `headers` object, which a post reads two or three headers of.
 */
export function rawHeader(raw: readonly string[], name: string): string | undefined {
  let found: string | undefined
  for (let i = 0; i < raw.length; i += 2) {
    const key = raw[i] as string
    if (key.length !== name.length || key.toLowerCase() !== name) continue
    const value = raw[i + 1] as string
    if (found === undefined) {
      if (FIRST_WINS.has(name)) return value
      found = value
    } else found += name === "cookie" ? `; ${value}` : `, ${value}`
  }
  return found
}
