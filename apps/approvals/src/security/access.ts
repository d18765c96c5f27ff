import { ConfigError } from "@toolnexus/core"
import { randomBytes } from "node:crypto"
import type { Context, Hono, MiddlewareHandler } from "hono"
import { deleteCookie, getCookie, setCookie } from "hono/cookie"
import { HttpError } from "../http-error.js"
import { createRateLimiter } from "./rate-limit.js"
import { LOOPBACK_HOSTS, bearerToken, isAllowedHost, isSameOrigin } from "./request-checks.js"
import {
  type Session,
  type createRevocations,
  createSessions,
  createTokenTable,
  deriveKey,
} from "./sessions.js"

/** Who is calling: a signed-in person, an API token, or a signed webhook. */
export interface Principal {
  name: string
  via: "page" | "api" | "webhook"
  session?: Session
}

/** The Hono environment of the app: the principal of the request, set by {@link createAccess}. */
export interface AppEnv {
  Variables: { principal: Principal }
}

/** Who may use the service and from where. */
export interface SecurityOptions {
  /** Sign-in tokens by user name (`{ alice: "…" }`); at least one, each ≥ 16 characters. */
  users: Record<string, string>
  /** Bearer tokens for the JSON API by client name; they need no CSRF token (browsers cannot send them cross-site). */
  apiTokens?: Record<string, string>
  /** The HMAC-SHA256 secret of `POST /webhooks/answer`; without one the webhook is refused. */
  webhookSecret?: string
  /**
   * `Host` values the service answers to (`name` allows any port, `name:port` only that one);
   * default loopback only. Anything else (a DNS-rebinding page) gets 403.
   */
  allowedHosts?: string[]
  /** Signs session cookies and CSRF tokens; instances behind one load balancer share it. Default: derived from `users`. */
  sessionKey?: string
  /** How long a sign-in lasts; default 12 hours. */
  sessionTtlMs?: number
  /** Trust `X-Forwarded-Proto` from a TLS-terminating proxy (for the cookie's `Secure` flag). */
  trustProxy?: boolean
}

const SESSION_COOKIE = "tnx_session"
const SIGNIN_COOKIE = "tnx_signin"
const PUBLIC_PATHS = new Set(["/healthz", "/signin", "/favicon.svg", "/favicon.ico"])

/**
 * The access rules, as middleware plus the sign-in routes:
 * - every request but `/healthz` must name an allowed `Host`;
 * - `/webhooks/*` authenticate by signature (checked by their route), everything else by a
 *   session cookie or an API bearer token;
 * - a state-changing request with a session must come from this origin and carry the
 *   session's CSRF token (header `x-csrf-token`, or the `csrf` field of the sign-out form).
 */
export function createAccess(opts: SecurityOptions, revocations: ReturnType<typeof createRevocations>) {
  const users = createTokenTable(opts.users, "the sign-in token of user")
  if (Object.keys(opts.users).length === 0) throw new ConfigError("security.users needs at least one user")
  const apiTokens = createTokenTable(opts.apiTokens ?? {}, "the API token")
  const allowedHosts = opts.allowedHosts ?? LOOPBACK_HOSTS
  const sessions = createSessions({
    key: opts.sessionKey ?? deriveKey(...Object.values(opts.users)),
    ttlMs: opts.sessionTtlMs ?? 12 * 60 * 60 * 1000,
  })
  // Tokens are long and random, but a sign-in form is still no place for unlimited guessing.
  const signInLimit = createRateLimiter({ limit: 10, windowMs: 60_000 })

  const secure = (c: Context) =>
    new URL(c.req.url).protocol === "https:" ||
    (opts.trustProxy === true && c.req.header("x-forwarded-proto")?.split(",")[0]?.trim() === "https")
  // The node adapter builds the URL from the Host header; in-process requests have only the URL.
  const hostOf = (c: Context) => c.req.header("host") ?? new URL(c.req.url).host
  const sameOrigin = (c: Context) =>
    isSameOrigin({
      origin: c.req.header("origin"),
      host: hostOf(c),
      fetchSite: c.req.header("sec-fetch-site"),
    })
  const wantsHtml = (c: Context) =>
    c.req.method === "GET" && (c.req.header("accept") ?? "").includes("text/html")

  const hostCheck: MiddlewareHandler<AppEnv> = async (c, next) => {
    if (c.req.path !== "/healthz" && !isAllowedHost(hostOf(c), allowedHosts)) {
      throw new HttpError(
        403,
        "forbidden_host",
        `this service does not answer to host ${JSON.stringify(hostOf(c))}`,
      )
    }
    await next()
  }

  const authenticate: MiddlewareHandler<AppEnv> = async (c, next) => {
    const path = c.req.path
    if (PUBLIC_PATHS.has(path) || path.startsWith("/webhooks/")) return next()
    const authorization = c.req.header("authorization")
    if (authorization !== undefined) {
      const name = apiTokens(bearerToken(authorization))
      if (name === undefined) throw new HttpError(401, "invalid_token", "the bearer token is not valid")
      c.set("principal", { name, via: "api" })
      return next()
    }
    const read = sessions.read(getCookie(c, SESSION_COOKIE))
    const session = read && !(await revocations.isRevoked(read)) ? read : undefined
    if (!session) {
      if (wantsHtml(c)) return c.redirect("/signin", 303)
      throw new HttpError(
        401,
        "unauthenticated",
        "sign in first, or send an API token as `Authorization: Bearer <token>`",
      )
    }
    if (c.req.method !== "GET" && c.req.method !== "HEAD") {
      if (!sameOrigin(c))
        throw new HttpError(
          403,
          "cross_origin",
          "state-changing requests must come from this service's own pages",
        )
      // The sign-out form posts its token as a field; its route checks it.
      if (path !== "/signout" && !sessions.checkCsrf(session, c.req.header("x-csrf-token"))) {
        throw new HttpError(403, "csrf_token", "the CSRF token is missing or does not match the session")
      }
    }
    c.set("principal", { name: session.user, via: "page", session })
    return next()
  }

  /** Adds `GET/POST /signin` and `POST /signout` to the app. */
  function routes(
    app: Hono<AppEnv>,
    render: (c: Context, csrf: string, problem?: string, status?: 200 | 401 | 429) => Response,
  ): void {
    app.get("/signin", (c) => {
      if (sessions.read(getCookie(c, SESSION_COOKIE))) return c.redirect("/", 303)
      return render(c, issueSignInToken(c))
    })

    app.post("/signin", async (c) => {
      // Login CSRF: a cross-site form must not sign the victim in as the attacker.
      if (!sameOrigin(c)) throw new HttpError(403, "cross_origin", "sign in from this service's own page")
      const form = await formOf(c)
      const expected = getCookie(c, SIGNIN_COOKIE)
      if (!expected || form.csrf !== expected) {
        return render(c, issueSignInToken(c), "The sign-in form expired; please try again.", 401)
      }
      const limited = signInLimit.take(clientAddress(c))
      if (!limited.ok) {
        c.header("retry-after", String(limited.retryAfterS))
        return render(c, issueSignInToken(c), "Too many sign-in attempts; wait a minute.", 429)
      }
      const user = users(form.token)
      if (user === undefined) return render(c, issueSignInToken(c), "That token is not valid.", 401)
      const { cookie } = sessions.issue(user)
      deleteCookie(c, SIGNIN_COOKIE, { path: "/signin" })
      setCookie(c, SESSION_COOKIE, cookie, {
        httpOnly: true,
        sameSite: "Strict",
        secure: secure(c),
        path: "/",
        maxAge: Math.floor((opts.sessionTtlMs ?? 12 * 60 * 60 * 1000) / 1000),
      })
      return c.redirect("/", 303)
    })

    app.post("/signout", async (c) => {
      const { session } = c.get("principal")
      const form = await formOf(c)
      if (!session || !sessions.checkCsrf(session, form.csrf)) {
        throw new HttpError(403, "csrf_token", "the CSRF token is missing or does not match the session")
      }
      await revocations.revoke(session)
      deleteCookie(c, SESSION_COOKIE, { path: "/", secure: secure(c) })
      return c.redirect("/signin", 303)
    })
  }

  function issueSignInToken(c: Context): string {
    const token = randomBytes(18).toString("base64url")
    setCookie(c, SIGNIN_COOKIE, token, {
      httpOnly: true,
      sameSite: "Strict",
      secure: secure(c),
      path: "/signin",
      maxAge: 3600,
    })
    return token
  }

  return {
    hostCheck,
    authenticate,
    routes,
    /** The CSRF token a page embeds for its session. */
    csrfOf: (principal: Principal) => (principal.session ? sessions.csrfOf(principal.session) : ""),
  }
}

async function formOf(c: Context): Promise<Record<string, string>> {
  const type = c.req.header("content-type") ?? ""
  if (!type.startsWith("application/x-www-form-urlencoded") && !type.startsWith("multipart/form-data")) {
    throw new HttpError(415, "unsupported_media_type", "expected a form body")
  }
  const body = await c.req.parseBody()
  const form: Record<string, string> = {}
  for (const [key, value] of Object.entries(body)) if (typeof value === "string") form[key] = value
  return form
}

/** The peer address, for per-client limits; behind a proxy every client shares the proxy's. */
export function clientAddress(c: Context): string {
  const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined
  return env?.incoming?.socket?.remoteAddress ?? "local"
}
