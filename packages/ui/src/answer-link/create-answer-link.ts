import { ConfigError } from "@toolnexus/core"
import { type AnswerLinkSecret, isRequestId, keyOf, signToken } from "./token.js"

/** Options of {@link createAnswerLink}. */
export interface AnswerLinkOptions {
  /**
   * The key that signs the link (at least 32 bytes): the first of the handler's `secrets`.
   * Keep it on the server; anyone holding it can make links.
   */
  secret: AnswerLinkSecret
  /** How long the link works, in milliseconds from now (a positive integer). */
  expiresInMs: number
  /**
   * The absolute http(s) URL where {@link answerLinkHandler} is served, e.g.
   * `"https://app.example.com/answer"`. The token is added as its `token` query parameter
   * (other parameters are kept).
   */
  baseUrl: string
}

/**
 * A link that answers request `requestId` once: `baseUrl` with a signed token (HMAC-SHA256 over
 * the request id, the expiry and a random nonce). Opening it shows a confirm page; only its
 * Approve or Decline button (a POST) decides. Send it to whoever decides (mail, chat) from a
 * host's `notify`. Nothing is stored: the request's one-decision rule makes the link one-time.
 *
 * @param requestId - the id of the open request (`^[A-Za-z0-9._:-]{1,200}$`).
 * @param options - `secret`, `expiresInMs` and `baseUrl`.
 * @returns the link, a string URL.
 * @throws ConfigError for a bad request id, a secret shorter than 32 bytes, an `expiresInMs`
 *   that is not a positive integer or a `baseUrl` that is not an absolute http(s) URL.
 * @example
 * const url = createAnswerLink(entry.request.id, {
 *   secret: process.env.ANSWER_LINK_SECRET!,
 *   expiresInMs: 24 * 60 * 60 * 1000,
 *   baseUrl: "https://app.example.com/answer",
 * })
 */
export function createAnswerLink(requestId: string, options: AnswerLinkOptions): string {
  if (!isRequestId(requestId))
    throw new ConfigError(
      `createAnswerLink: requestId must match ^[A-Za-z0-9._:-]{1,200}$, got ${JSON.stringify(String(requestId).slice(0, 200))}`,
    )
  const { secret, expiresInMs, baseUrl } = options ?? ({} as AnswerLinkOptions)
  const key = keyOf(secret, "createAnswerLink: `secret`")
  if (!Number.isSafeInteger(expiresInMs) || expiresInMs <= 0)
    throw new ConfigError(
      `createAnswerLink: \`expiresInMs\` must be a positive integer of milliseconds, got ${JSON.stringify(expiresInMs)}`,
    )
  const url = typeof baseUrl === "string" && URL.canParse(baseUrl) ? new URL(baseUrl) : undefined
  if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:"))
    throw new ConfigError(
      `createAnswerLink: \`baseUrl\` must be an absolute http(s) URL such as "https://app.example.com/answer", got ${JSON.stringify(baseUrl)}`,
    )
  url.searchParams.set("token", signToken(requestId, Date.now() + expiresInMs, key))
  return url.href
}
