import type { DurableStore } from "@toolnexus/durable"
import { HttpError } from "../http-error.js"
import { DEFAULT_TOLERANCE_S, SIGNATURE_HEADER, verifySignature } from "./webhook-signature.js"

const SEEN_PREFIX = "approvals:webhook-seen:"

/**
 * Checks incoming webhooks: a valid signature over the raw body, a timestamp within the
 * tolerance, and a signature never accepted before (by this or another instance on the
 * store). A replay inside the window is refused; one outside it fails the timestamp check.
 */
export function createWebhookGuard(opts: {
  secret: string | undefined
  store: Pick<DurableStore, "getSnapshot" | "putSnapshot" | "deleteSnapshot">
  toleranceS?: number
}) {
  const toleranceS = opts.toleranceS ?? DEFAULT_TOLERANCE_S
  // Accepted signatures by expiry; the store keeps them for the other instances.
  const seen = new Map<string, number>()

  return async function verify(header: string | undefined, body: string): Promise<void> {
    if (!opts.secret) throw new HttpError(403, "webhook_disabled", "no webhook secret is configured")
    const checked = verifySignature(opts.secret, header, body, { toleranceS })
    if (!checked.ok) {
      const why = {
        missing: `the ${SIGNATURE_HEADER} header is missing`,
        malformed: `the ${SIGNATURE_HEADER} header is not "t=<unix seconds>,v1=<hex HMAC-SHA256>"`,
        stale: `the signature's timestamp is more than ${toleranceS} s away from this server's clock`,
        mismatch: "the signature does not match the body",
      }[checked.problem]
      throw new HttpError(401, "invalid_signature", why)
    }
    const now = Date.now()
    for (const [signature, expires] of seen) if (expires < now) seen.delete(signature)
    const key = SEEN_PREFIX + checked.signature
    if (seen.has(checked.signature) || (await opts.store.getSnapshot(key)) !== undefined) {
      throw new HttpError(409, "webhook_replayed", "this signed webhook was already received")
    }
    const expires = checked.timestamp * 1000 + toleranceS * 1000
    seen.set(checked.signature, expires)
    await opts.store.putSnapshot(key, { t: checked.timestamp })
    // Past the window the timestamp check refuses the signature anyway; the record can go.
    // (An instance that stops before then leaves a few small records behind, harmlessly.)
    setTimeout(
      () => void opts.store.deleteSnapshot(key).catch(() => {}),
      Math.max(0, expires - now) + 1000,
    ).unref()
  }
}
