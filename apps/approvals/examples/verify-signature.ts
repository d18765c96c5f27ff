import { createHmac, timingSafeEqual } from "node:crypto"

/**
 * Verifies a toolnexus approvals signature: `header` is the `x-toolnexus-signature` value,
 * `rawBody` the request body exactly as received (before any JSON parsing).
 */
export function verifyToolnexusSignature(
  secret: string,
  header: string | undefined,
  rawBody: string,
): boolean {
  const parts = new Map(
    (header ?? "").split(",").map((part) => part.trim().split("=", 2) as [string, string]),
  )
  const t = Number(parts.get("t"))
  const v1 = parts.get("v1") ?? ""
  // 1. A timestamp within 5 minutes of this clock: an old capture cannot be replayed later.
  if (!Number.isInteger(t) || Math.abs(Date.now() / 1000 - t) > 300) return false
  // 2. The HMAC-SHA256 of "<t>.<raw body>" with the shared secret, compared in constant time.
  const expected = createHmac("sha256", secret).update(`${t}.${rawBody}`).digest()
  const given = Buffer.from(v1, "hex")
  return given.length === expected.length && timingSafeEqual(given, expected)
  // 3. Then remember the v1 value until t + 5 minutes and refuse it if it comes again.
}
