/** Options of {@link createSecretRedactor}. */
export interface SecretRedactorOptions {
  /** What replaces a secret; default `"[redacted]"`. */
  marker?: string
  /**
   * Values shorter than this are left alone (default 4): a two-letter "secret" would mangle
   * ordinary words of every message, and real credentials are longer.
   */
  minLength?: number
}

const DEFAULT_MARKER = "[redacted]"
const DEFAULT_MIN_LENGTH = 4

/**
 * The redactor of configured secret values, the one rule every package applies to text that
 * came from a remote (an error body, an error message, a tool's output) before it reaches a
 * tool result, a transcript, a log or a store: servers and gateways echo what they received
 * ("invalid key sk-…", a debug dump of the request headers). Each secret is replaced as it is
 * and as JSON escapes it inside a string (a re-serialised body), longest first so a value
 * containing another is replaced whole.
 *
 * @param secrets - the values to keep out; empty and too-short ones are skipped. Give header
 *   values through {@link headerSecretValues} so their tokens without the scheme and cookie
 *   pairs are covered too.
 * @param options - the replacement marker and the shortest value replaced.
 * @returns a function of a text to the same text without the secrets.
 * @example
 * ```ts
 * const redact = createSecretRedactor(headerSecretValues({ authorization: "Bearer sk-123456" }))
 * redact("bad token sk-123456") // "bad token [redacted]"
 * ```
 */
export function createSecretRedactor(
  secrets: Iterable<string>,
  options: SecretRedactorOptions = {},
): (text: string) => string {
  const { marker = DEFAULT_MARKER, minLength = DEFAULT_MIN_LENGTH } = options
  const needles = new Set<string>()
  for (const secret of secrets) {
    if (typeof secret !== "string" || secret.length < minLength) continue
    needles.add(secret)
    needles.add(JSON.stringify(secret).slice(1, -1))
  }
  if (needles.size === 0) return (text) => text
  const ordered = [...needles].sort((a, b) => b.length - a.length)
  return (text) => {
    let out = text
    for (const needle of ordered) if (out.includes(needle)) out = out.split(needle).join(marker)
    return out
  }
}

/**
 * The secret fragments of header values, for {@link createSecretRedactor}: each value whole,
 * its credential without an auth scheme (`Bearer`, `Basic`, …), and each `name=value` pair of a
 * cookie-style list with its value alone.
 *
 * @param headers - header name → value, as sent (environment references already read).
 * @returns the fragments, possibly repeated; the redactor skips short ones.
 * @example
 * ```ts
 * headerSecretValues({ cookie: "sid=abcdef; theme=dark" }) // includes "sid=abcdef" and "abcdef"
 * ```
 */
export function headerSecretValues(headers: Record<string, string> | undefined): string[] {
  const out: string[] = []
  for (const value of Object.values(headers ?? {})) {
    if (typeof value !== "string") continue
    out.push(value.trim())
    const withoutScheme = /^\s*[A-Za-z][\w-]*\s+(\S.*)$/s.exec(value)?.[1]
    if (withoutScheme) out.push(withoutScheme.trim())
    for (const pair of value.split(/[;,]/)) {
      const trimmed = pair.trim()
      out.push(trimmed)
      const eq = trimmed.indexOf("=")
      if (eq > 0) out.push(trimmed.slice(eq + 1).trim())
    }
  }
  return out
}
