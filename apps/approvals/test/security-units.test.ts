import { describe, expect, it } from "vitest"
import { createRateLimiter } from "../src/security/rate-limit.js"
import {
  isAllowedHost,
  isJsonContentType,
  isSameOrigin,
  LOOPBACK_HOSTS,
} from "../src/security/request-checks.js"
import { createSessions, createTokenTable } from "../src/security/sessions.js"
import { signBody, verifySignature } from "../src/security/webhook-signature.js"

describe("isAllowedHost", () => {
  it.each([
    ["localhost:3000", true],
    ["LOCALHOST:3000", true],
    ["127.0.0.1", true],
    ["[::1]:8080", true],
    ["localhost.evil.example:3000", false],
    ["evil.example", false],
    ["127.0.0.1.nip.io:3000", false],
    ["", false],
  ])("%s on the loopback default ⇒ %s", (host, allowed) => {
    expect(isAllowedHost(host, LOOPBACK_HOSTS)).toBe(allowed)
  })

  it("an entry with a port allows only that port", () => {
    expect(isAllowedHost("inbox.example:443", ["inbox.example:443"])).toBe(true)
    expect(isAllowedHost("inbox.example", ["inbox.example:443"])).toBe(false)
    expect(isAllowedHost("inbox.example:8443", ["inbox.example:443"])).toBe(false)
  })
})

describe("isSameOrigin", () => {
  it.each([
    [{ origin: "http://localhost:3000", host: "localhost:3000" }, true],
    [{ origin: "https://localhost:3000", host: "localhost:3000" }, true],
    [{ origin: "http://localhost:3001", host: "localhost:3000" }, false],
    [{ origin: "http://127.0.0.1:3000", host: "localhost:3000" }, false],
    [{ origin: "null", host: "localhost:3000" }, false],
    [{ origin: "file://", host: "localhost:3000" }, false],
    [{ host: "localhost:3000" }, false],
    [{ host: "localhost:3000", fetchSite: "same-origin" }, true],
    [{ origin: "http://localhost:3000", host: "localhost:3000", fetchSite: "same-site" }, false],
  ])("%j ⇒ %s", (headers, same) => {
    expect(isSameOrigin(headers)).toBe(same)
  })
})

it("only application/json is JSON", () => {
  expect(isJsonContentType("application/json")).toBe(true)
  expect(isJsonContentType("Application/JSON; charset=utf-8")).toBe(true)
  for (const type of [
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data",
    "application/jsonx",
    undefined,
  ]) {
    expect(isJsonContentType(type)).toBe(false)
  }
})

describe("sessions", () => {
  it("a cookie is refused once expired, altered, or signed with another key", () => {
    let now = 1_000_000
    const sessions = createSessions({ key: "k1", ttlMs: 60_000, now: () => now })
    const { cookie, csrf, session } = sessions.issue("alice")
    expect(sessions.read(cookie)).toEqual(session)
    expect(sessions.checkCsrf(session, csrf)).toBe(true)
    expect(sessions.checkCsrf(session, `${csrf}x`)).toBe(false)
    expect(createSessions({ key: "k2", ttlMs: 60_000, now: () => now }).read(cookie)).toBeUndefined()
    const [payload, mac] = cookie.split(".")
    const forged = Buffer.from(JSON.stringify(["mallory", session.id, session.expiresAt])).toString(
      "base64url",
    )
    expect(sessions.read(`${forged}.${mac}`)).toBeUndefined()
    expect(sessions.read(`${payload}.`)).toBeUndefined()
    expect(sessions.read("garbage")).toBeUndefined()
    now += 60_001
    expect(sessions.read(cookie)).toBeUndefined()
  })

  it("tokens shorter than 16 characters are refused when configured", () => {
    expect(() => createTokenTable({ bob: "short" }, "the sign-in token of user")).toThrow(
      expect.objectContaining({
        code: "TNX_CONFIG",
        message: 'the sign-in token of user "bob" must be at least 16 characters long',
      }),
    )
    const lookup = createTokenTable({ a: "aaaaaaaaaaaaaaaa", b: "bbbbbbbbbbbbbbbb" }, "token")
    expect([lookup("bbbbbbbbbbbbbbbb"), lookup("cccccccccccccccc"), lookup(undefined)]).toEqual([
      "b",
      undefined,
      undefined,
    ])
  })
})

it("the rate limiter refuses past the limit and allows again in the next window", () => {
  let now = 0
  const limiter = createRateLimiter({ limit: 2, windowMs: 10_000, now: () => now })
  expect([limiter.take("a"), limiter.take("a"), limiter.take("b")].every((r) => r.ok)).toBe(true)
  expect(limiter.take("a")).toEqual({ ok: false, retryAfterS: 10 })
  now = 9_500
  expect(limiter.take("a")).toEqual({ ok: false, retryAfterS: 1 })
  now = 10_000
  expect(limiter.take("a").ok).toBe(true)
  expect(() => createRateLimiter({ limit: 0, windowMs: 1 })).toThrow(
    expect.objectContaining({ code: "TNX_CONFIG" }),
  )
})

it("a signature with a rotated secret's second v1 value is accepted", () => {
  const body = "{}"
  const t = Math.floor(Date.now() / 1000)
  const old = signBody("old-secret-0123456789", body).split("v1=")[1]
  const header = `t=${t},v1=${"0".repeat(64)},v1=${old}`
  expect(verifySignature("old-secret-0123456789", header, body)).toMatchObject({ ok: true, timestamp: t })
  expect(verifySignature("old-secret-0123456789", `v1=${old}`, body)).toEqual({
    ok: false,
    problem: "malformed",
  })
})
