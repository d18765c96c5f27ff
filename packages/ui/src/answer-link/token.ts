import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { ConfigError } from "@toolnexus/core"

/** A key that signs or verifies answer links: a string (its UTF-8 bytes) or raw bytes. */
export type AnswerLinkSecret = string | Uint8Array

/** HMAC-SHA256 wants a key at least as long as its output; a shorter one is a guessable key. */
const MIN_SECRET_BYTES = 32
/** The same pattern `Request.id` follows. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,200}$/
const B64URL = /^[A-Za-z0-9_-]+$/
const VERSION = "v1"
/** Far beyond any real token (id ≤ 200 chars); a longer one is refused before any work. */
const MAX_TOKEN_LENGTH = 600

/** @internal A verified token's contents. */
export interface LinkClaims {
  requestId: string
  /** Milliseconds since the epoch after which the link no longer works. */
  expiresAt: number
}

/** @internal Why a token was refused: `malformed` (400), `forged` (403), `expired` (410). */
export type LinkCheck =
  | { ok: true; claims: LinkClaims }
  | { ok: false; why: "malformed" | "forged" | "expired"; claims?: LinkClaims }

/**
 * @internal The secret's key bytes.
 *
 * @throws ConfigError naming `what` for a secret that is not a string or bytes of at least 32 bytes.
 */
export function keyOf(secret: unknown, what: string): Buffer {
  const key =
    typeof secret === "string"
      ? Buffer.from(secret, "utf8")
      : secret instanceof Uint8Array
        ? Buffer.from(secret)
        : undefined
  if (key === undefined || key.length < MIN_SECRET_BYTES)
    throw new ConfigError(
      `${what} must be a string or bytes of at least ${MIN_SECRET_BYTES} bytes (e.g. randomBytes(32).toString("base64url"))`,
    )
  return key
}

/**
 * @internal A token for `requestId` valid until `expiresAt`:
 * `v1.<id, base64url>.<expiry ms>.<nonce>.<HMAC-SHA256 of the three>`. The random nonce makes
 * every link distinct, so two links to one request never share a token.
 */
export function signToken(requestId: string, expiresAt: number, key: Buffer): string {
  const id = Buffer.from(requestId, "utf8").toString("base64url")
  const nonce = randomBytes(16).toString("base64url")
  return `${VERSION}.${id}.${expiresAt}.${nonce}.${mac(key, requestId, expiresAt, nonce).toString("base64url")}`
}

/**
 * @internal Checks `token` against every key (any one verifies: rotation), the signature in
 * constant time, then its expiry against `now`. An expired token is reported only once its
 * signature holds, so a forger learns nothing from the status.
 */
export function verifyToken(token: string, keys: readonly Buffer[], now: number): LinkCheck {
  const parts = token.length <= MAX_TOKEN_LENGTH ? token.split(".") : []
  if (parts.length !== 5) return { ok: false, why: "malformed" }
  const [version, id, expiry, nonce, signature] = parts as [string, string, string, string, string]
  if (version !== VERSION || !/^[0-9]{1,16}$/.test(expiry) || nonce.length !== 22 || !B64URL.test(nonce))
    return { ok: false, why: "malformed" }
  if (!B64URL.test(id) || !B64URL.test(signature)) return { ok: false, why: "malformed" }
  const requestId = Buffer.from(id, "base64url").toString("utf8")
  const given = Buffer.from(signature, "base64url")
  if (!REQUEST_ID.test(requestId) || given.length !== 32) return { ok: false, why: "malformed" }
  const expiresAt = Number(expiry)
  let valid = false
  // Every key is tried (no early exit), so the time taken does not tell which one matched.
  for (const key of keys) if (timingSafeEqual(mac(key, requestId, expiresAt, nonce), given)) valid = true
  if (!valid) return { ok: false, why: "forged" }
  const claims = { requestId, expiresAt }
  return now > expiresAt ? { ok: false, why: "expired", claims } : { ok: true, claims }
}

/** @internal Whether `id` can be a request id (and so be signed into a link). */
export function isRequestId(id: unknown): id is string {
  return typeof id === "string" && REQUEST_ID.test(id)
}

function mac(key: Buffer, requestId: string, expiresAt: number, nonce: string): Buffer {
  // A request id holds no newline, so the fields cannot run into each other.
  return createHmac("sha256", key)
    .update(`toolnexus-answer-link/${VERSION}\n${requestId}\n${expiresAt}\n${nonce}`)
    .digest()
}
