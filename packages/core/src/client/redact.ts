import type { ToolnexusError } from "../errors.js"
import { createSecretRedactor, headerSecretValues } from "../tools/secret-redactor.js"

/** Names of headers whose values are credentials even when the client set them. */
const SECRET_HEADER = /authorization|key|token|secret|cookie/i

/** Shorter fragments would redact ordinary words of a message; real values are longer. */
const MIN_SECRET = 4

/**
 * @internal Builds the scrubber applied to every error a client throws: endpoints and gateways
 * echo what they received ("Incorrect API key provided: sk-…", a cookie in a debug body), and
 * none of it may reach messages and logs. Redacted: every header value the user passed, and
 * the credential headers (the API key) — whole, without a `Bearer`/`Basic` prefix, and each
 * `name=value` pair of a cookie-style list.
 */
export function headerRedactor(
  headers: Record<string, string>,
  userHeaderNames: readonly string[],
): (error: ToolnexusError) => ToolnexusError {
  // Built at the first error, not per client: a client per run (an approval host's) pays nothing.
  let scrub: ((text: string) => string) | null | undefined
  return (error) => {
    if (scrub === undefined) scrub = scrubberOf(headers, userHeaderNames)
    if (scrub === null) return error
    error.message = scrub(error.message)
    const withBody = error as { bodyExcerpt?: unknown }
    if (typeof withBody.bodyExcerpt === "string")
      Object.defineProperty(error, "bodyExcerpt", { value: scrub(withBody.bodyExcerpt) })
    if (typeof error.stack === "string") error.stack = scrub(error.stack)
    return error
  }
}

/** Replaces every secret fragment of the selected headers in a text; `null` when there is none. */
function scrubberOf(
  headers: Record<string, string>,
  userHeaderNames: readonly string[],
): ((text: string) => string) | null {
  const user = new Set(userHeaderNames.map((name) => name.toLowerCase()))
  const selected: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers))
    if (user.has(name) || SECRET_HEADER.test(name)) selected[name] = value
  const secrets = headerSecretValues(selected)
  if (!secrets.some((secret) => secret.length >= MIN_SECRET)) return null
  return createSecretRedactor(secrets, { minLength: MIN_SECRET })
}
