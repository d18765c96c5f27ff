import { ConfigError } from "@toolnexus/core"
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto"

/** A signed-in browser session, as read back from its cookie. */
export interface Session {
  /** Who signed in: the name their token is configured under. */
  user: string
  /** The session's random id; the CSRF token is derived from it. */
  id: string
  /** Epoch ms after which the cookie is refused. */
  expiresAt: number
}

/** Issues and checks session cookies and their CSRF tokens; stateless, so every instance with the same key accepts them. */
export interface Sessions {
  /** A new session for `user`: the cookie value and the CSRF token the page sends back. */
  issue(user: string): { cookie: string; csrf: string; session: Session }
  /** The session a cookie value carries, or `undefined` when it is forged, altered or expired. */
  read(cookie: string | undefined): Session | undefined
  /** The CSRF token of a session (an HMAC of its id, so nothing is stored). */
  csrfOf(session: Session): string
  /** True when `token` is the session's CSRF token. */
  checkCsrf(session: Session, token: string | undefined): boolean
}

/**
 * Creates the session signer. `key` signs cookies and CSRF tokens; instances sharing a
 * store must share it (the app derives it from the sign-in tokens unless one is configured).
 */
export function createSessions(opts: { key: string; ttlMs: number; now?: () => number }): Sessions {
  const now = opts.now ?? Date.now
  const sign = (purpose: string, value: string) =>
    createHmac("sha256", opts.key).update(`${purpose}:${value}`).digest("base64url")
  const csrfOf = (session: Session) => sign("csrf", session.id)
  return {
    issue(user) {
      const session: Session = {
        user,
        id: randomBytes(18).toString("base64url"),
        expiresAt: now() + opts.ttlMs,
      }
      const payload = Buffer.from(JSON.stringify([session.user, session.id, session.expiresAt])).toString(
        "base64url",
      )
      return { cookie: `${payload}.${sign("session", payload)}`, csrf: csrfOf(session), session }
    },
    read(cookie) {
      if (!cookie || cookie.length > 2048) return undefined
      const dot = cookie.lastIndexOf(".")
      if (dot <= 0) return undefined
      const payload = cookie.slice(0, dot)
      if (!sameText(cookie.slice(dot + 1), sign("session", payload))) return undefined
      try {
        const [user, id, expiresAt] = JSON.parse(
          Buffer.from(payload, "base64url").toString("utf8"),
        ) as unknown[]
        if (typeof user !== "string" || typeof id !== "string" || typeof expiresAt !== "number")
          return undefined
        if (expiresAt <= now()) return undefined
        return { user, id, expiresAt }
      } catch {
        return undefined
      }
    },
    csrfOf,
    checkCsrf: (session, token) => token !== undefined && sameText(token, csrfOf(session)),
  }
}

/**
 * A map from secret tokens to the names they are configured under, compared in constant time.
 *
 * @throws ConfigError for a token shorter than 16 characters (it could be guessed).
 */
export function createTokenTable(
  tokens: Record<string, string>,
  label: string,
): (token: string | undefined) => string | undefined {
  const entries = Object.entries(tokens).map(([name, token]) => {
    if (typeof token !== "string" || token.length < 16) {
      throw new ConfigError(`${label} "${name}" must be at least 16 characters long`)
    }
    return { name, digest: digest(token) }
  })
  return (token) => {
    if (!token) return undefined
    const given = digest(token)
    // Every entry is compared, so the time taken does not tell which one matched.
    let found: string | undefined
    for (const entry of entries) if (timingSafeEqual(entry.digest, given)) found ??= entry.name
    return found
  }
}

/** A key derived from secrets, for instances that share configuration but no explicit key. */
export function deriveKey(...secrets: string[]): string {
  const hash = createHash("sha256").update("toolnexus-approvals-session-key")
  for (const secret of [...secrets].sort()) hash.update("\0").update(secret)
  return hash.digest("base64url")
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest()
}

function sameText(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b))
}

const REVOKED_PREFIX = "approvals:session-revoked:"

/**
 * Signed-out sessions, kept in the store so that a signed-out cookie is refused by every
 * instance, not just deleted from one browser. A record lives as long as its session would
 * have; checking costs one indexed read per request (refusals are remembered in memory).
 */
export function createRevocations(store: {
  putSnapshot(key: string, value: unknown): Promise<void>
  getSnapshot(key: string): Promise<unknown>
  deleteSnapshot(key: string): Promise<void>
}) {
  const revoked = new Map<string, number>()
  return {
    async revoke(session: Session): Promise<void> {
      revoked.set(session.id, session.expiresAt)
      await store.putSnapshot(REVOKED_PREFIX + session.id, { expiresAt: session.expiresAt })
      const left = Math.max(0, session.expiresAt - Date.now())
      // After its expiry the cookie is refused anyway; the record can go.
      setTimeout(() => void store.deleteSnapshot(REVOKED_PREFIX + session.id).catch(() => {}), left).unref()
    },
    async isRevoked(session: Session): Promise<boolean> {
      if (revoked.has(session.id)) return true
      if ((await store.getSnapshot(REVOKED_PREFIX + session.id)) === undefined) return false
      revoked.set(session.id, session.expiresAt)
      return true
    },
  }
}
