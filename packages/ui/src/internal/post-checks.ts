import { ConfigError } from "@toolnexus/core"
import { Refusal } from "./http-error.js"
import type { HandlerInput } from "./reply.js"

/**
 * @internal The serialised origins of `allowedOrigins`, checked once.
 *
 * @throws ConfigError naming `allowedOrigins` for an entry that is not an http(s) origin.
 */
export function allowedOriginsOf(origins: readonly string[] | undefined): ReadonlySet<string> {
  if (origins === undefined) return new Set()
  if (!Array.isArray(origins)) throw new ConfigError("`allowedOrigins` must be an array of origins")
  return new Set(
    origins.map((origin) => {
      const url = typeof origin === "string" && URL.canParse(origin) ? new URL(origin) : undefined
      if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:"))
        throw new ConfigError(
          `\`allowedOrigins\` entries must be http(s) origins such as "https://app.example.com", got ${JSON.stringify(origin)}`,
        )
      return url.origin
    }),
  )
}

/**
 * @internal Refuses a post a page of another site could have sent: an `Origin` header that is
 * neither the request's own origin nor allowed (403), or a body that is not `application/json`
 * (415; a cross-site form or `text/plain` post needs no CORS preflight, a JSON one does).
 * Checked before the body is read.
 */
export function crossSiteRefusal(req: HandlerInput, allowed: ReadonlySet<string>): Refusal | undefined {
  const refused = originRefusal(req, allowed)
  if (refused !== undefined) return refused
  const type = req.header("content-type")
  if (!isMediaType(type, "application/json"))
    return new Refusal(
      415,
      "TNX_UNSUPPORTED_MEDIA_TYPE",
      `the body must be sent as application/json, not ${type === undefined ? "without a content type" : JSON.stringify(type.slice(0, 100))}`,
    )
  return undefined
}

/**
 * @internal Refuses (403 `TNX_CROSS_SITE`) a post whose `Origin` header is neither the request's
 * own origin nor in `allowed`. A post without `Origin` comes from no browser page and passes.
 */
export function originRefusal(req: HandlerInput, allowed: ReadonlySet<string>): Refusal | undefined {
  const origin = req.header("origin")
  if (origin !== undefined && !allowed.has(origin) && origin !== req.origin)
    return new Refusal(
      403,
      "TNX_CROSS_SITE",
      `posts from origin ${JSON.stringify(origin.slice(0, 200))} are refused: only this server's own origin and allowedOrigins may post`,
    )
  return undefined
}

/** @internal Whether `type` is `expected` (lower case), in any case, with or without parameters (`; charset=utf-8`). */
export function isMediaType(type: string | undefined, expected: string): boolean {
  if (type === undefined) return false
  const end = type.indexOf(";")
  return (end === -1 ? type : type.slice(0, end)).trim().toLowerCase() === expected
}

/**
 * @internal How deep a post's JSON may nest. Every store writes with `JSON.stringify`, which runs out of
 * stack at a few thousand levels (about 4,000 on Node's default stack, fewer beneath a
 * store's own frames): a deeper answer would fail only when written, after its claim. No chat
 * post comes near this.
 */
export const MAX_BODY_DEPTH = 1_000

/**
 * @internal Whether a JSON text could nest deeper than `max` levels: each level opens and closes
 * a bracket, so a text shorter than `2 × (max + 1)` cannot, and its value need not be walked.
 */
export function mayNestDeeperThan(text: string, max: number): boolean {
  return text.length >= 2 * (max + 1)
}

/** @internal Whether `value` nests objects and arrays deeper than `max` levels (walked without recursion). */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]]
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [item, depth] = next
    if (typeof item !== "object" || item === null) continue
    if (depth > max) return true
    for (const child of Array.isArray(item) ? item : Object.values(item))
      if (typeof child === "object" && child !== null) stack.push([child, depth + 1])
  }
  return false
}
