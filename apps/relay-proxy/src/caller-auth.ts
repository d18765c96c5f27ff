import { createHash, timingSafeEqual } from "node:crypto"
import { ProxyError } from "./proxy-error.js"

const digest = (key: string) => createHash("sha256").update(key).digest()

/**
 * Authenticates a caller by its `Authorization: Bearer <key>` header and returns the caller's
 * identity: a fingerprint of its key (the key itself is never stored), or `undefined` when no
 * keys are configured. Conversations and items are scoped to it, so one key's callers cannot
 * resume or reference another key's.
 *
 * @throws ProxyError 401 in OpenAI's shape (`code: "invalid_api_key"`) for a missing or unknown key
 */
export function callerOf(
  authorization: string | undefined,
  keys: readonly string[] | undefined,
): string | undefined {
  if (keys === undefined || keys.length === 0) return undefined
  const presented = /^Bearer\s+(.+)$/i.exec(authorization?.trim() ?? "")?.[1]
  if (presented !== undefined) {
    const given = digest(presented)
    // Compare digests in constant time, and every key, so timing tells nothing about a near miss.
    const match = keys.map((key) => timingSafeEqual(digest(key), given)).includes(true)
    if (match) return given.toString("hex").slice(0, 32)
  }
  throw new ProxyError(
    401,
    "invalid_request_error",
    presented === undefined
      ? "no API key was provided: send it as Authorization: Bearer <key>"
      : "the API key provided is not accepted by this proxy",
    { code: "invalid_api_key", retryable: false },
  )
}
