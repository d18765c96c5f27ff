import { createHmac, timingSafeEqual } from "node:crypto"

/** The header that carries a webhook's signature: `t=<unix seconds>,v1=<hex HMAC-SHA256>`. */
export const SIGNATURE_HEADER = "x-toolnexus-signature"

/** How far a signature's timestamp may be from the receiver's clock; default of {@link verifySignature}. */
export const DEFAULT_TOLERANCE_S = 300

/**
 * Signs a webhook body: HMAC-SHA256 with `secret` over `"<t>.<body>"`, where `t` is the time
 * in whole seconds. The result is the value of {@link SIGNATURE_HEADER}.
 *
 * @example
 * fetch(url, { method: "POST", body, headers: { "content-type": "application/json", [SIGNATURE_HEADER]: signBody(secret, body) } })
 */
export function signBody(secret: string, body: string, nowMs: number = Date.now()): string {
  const t = Math.floor(nowMs / 1000)
  return `t=${t},v1=${mac(secret, t, body)}`
}

/** Why {@link verifySignature} refused a webhook. */
export type SignatureProblem = "missing" | "malformed" | "stale" | "mismatch"

/**
 * Checks a webhook's signature header against the raw body. Several `v1=` values are allowed
 * (a sender rotating its secret signs with both); one match suffices.
 *
 * @returns the signed timestamp and the matching signature (a replay cache keys on it), or the problem.
 */
export function verifySignature(
  secret: string,
  header: string | undefined,
  body: string,
  opts: { nowMs?: number; toleranceS?: number } = {},
): { ok: true; timestamp: number; signature: string } | { ok: false; problem: SignatureProblem } {
  if (!header) return { ok: false, problem: "missing" }
  let timestamp: number | undefined
  const signatures: string[] = []
  for (const part of header.split(",")) {
    const [key, value] = part.trim().split("=", 2)
    if (key === "t" && value && /^\d{1,12}$/.test(value)) timestamp = Number(value)
    else if (key === "v1" && value && /^[0-9a-f]{64}$/.test(value)) signatures.push(value)
  }
  if (timestamp === undefined || signatures.length === 0) return { ok: false, problem: "malformed" }
  const nowS = (opts.nowMs ?? Date.now()) / 1000
  if (Math.abs(nowS - timestamp) > (opts.toleranceS ?? DEFAULT_TOLERANCE_S)) {
    return { ok: false, problem: "stale" }
  }
  const expected = Buffer.from(mac(secret, timestamp, body), "hex")
  const match = signatures.find((s) => timingSafeEqual(Buffer.from(s, "hex"), expected))
  return match ? { ok: true, timestamp, signature: match } : { ok: false, problem: "mismatch" }
}

function mac(secret: string, t: number, body: string): string {
  return createHmac("sha256", secret).update(`${t}.${body}`).digest("hex")
}
