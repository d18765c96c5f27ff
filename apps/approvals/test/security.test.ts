import { describe, expect, it } from "vitest"
import { signBody } from "../src/security/webhook-signature.js"
import {
  API_TOKEN,
  cookieOf,
  getJson,
  instance,
  json,
  postJson,
  postWebhook,
  signIn,
  useFakeModel,
  startRun,
  WEBHOOK_SECRET,
} from "./support.js"

const { files, fake } = useFakeModel()

/** A POST with a session, as a browser page would send it; `headers` override the defaults. */
function sessionPost(
  app: any,
  path: string,
  session: { cookie: string; csrf: string },
  headers: Record<string, string>,
  body = "{}",
) {
  return app.request(path, {
    method: "POST",
    headers: {
      cookie: session.cookie,
      origin: "http://localhost",
      "content-type": "application/json",
      "x-csrf-token": session.csrf,
      ...headers,
    },
    body,
  })
}

describe("sign-in", () => {
  it("pages redirect to the sign-in form; the JSON API answers 401", async () => {
    const { app } = await instance(fake(), files.store())
    const page = await app.request("/", { headers: { accept: "text/html" } })
    expect(page.status).toBe(303)
    expect(page.headers.get("location")).toBe("/signin")
    const api = await app.request("/requests")
    expect(api.status).toBe(401)
    expect((await json(api)).error.code).toBe("unauthenticated")
    const bad = await app.request("/requests", {
      headers: { authorization: "Bearer not-a-valid-token-at-all" },
    })
    expect(bad.status).toBe(401)
    expect((await json(bad)).error.code).toBe("invalid_token")
  })

  it("a valid token gives an HttpOnly, SameSite=Strict session cookie; a wrong one does not", async () => {
    const { app } = await instance(fake(), files.store())
    const form = await app.request("/signin")
    const pre = cookieOf(form, "tnx_signin")
    const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? ""
    const post = (token: string) =>
      app.request("/signin", {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          origin: "http://localhost",
          cookie: pre,
        },
        body: new URLSearchParams({ csrf, token }).toString(),
      })
    const wrong = await post("wrong-token-wrong-token")
    expect(wrong.status).toBe(401)
    expect(await wrong.text()).toContain("That token is not valid.")
    expect(wrong.headers.getSetCookie().some((c) => c.startsWith("tnx_session="))).toBe(false)

    const ok = await post("alice-token-0123456789abcdef")
    expect(ok.status).toBe(303)
    const line = ok.headers.getSetCookie().find((c) => c.startsWith("tnx_session=")) ?? ""
    expect(line).toMatch(/HttpOnly/)
    expect(line).toMatch(/SameSite=Strict/)
    expect(line).not.toMatch(/Secure/)
    const page = await app.request("/", { headers: { cookie: line.split(";")[0] as string } })
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('<span class="user">alice</span>')
  })

  it("the cookie is Secure over https", async () => {
    const { app } = await instance(fake(), files.store())
    const form = await app.request("https://localhost/signin")
    expect(form.headers.getSetCookie()[0]).toMatch(/Secure/)
    const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? ""
    const res = await app.request("https://localhost/signin", {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        origin: "https://localhost",
        cookie: cookieOf(form, "tnx_signin"),
      },
      body: new URLSearchParams({ csrf, token: "alice-token-0123456789abcdef" }).toString(),
    })
    expect(res.status).toBe(303)
    expect(res.headers.getSetCookie().find((c) => c.startsWith("tnx_session="))).toMatch(/Secure/)
  })

  it("refuses a sign-in form posted from another origin (login CSRF) and a tampered cookie", async () => {
    const { app } = await instance(fake(), files.store())
    const res = await app.request("/signin", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: "http://evil.example" },
      body: "token=alice-token-0123456789abcdef",
    })
    expect(res.status).toBe(403)
    const { cookie } = await signIn(app)
    const tampered = cookie.replace(/.$/, (c) => (c === "A" ? "B" : "A"))
    expect((await app.request("/requests", { headers: { cookie: tampered } })).status).toBe(401)
  })

  it("sign-out needs the CSRF field, clears the cookie and ends the session everywhere", async () => {
    const store = files.store()
    const { app } = await instance(fake(), store)
    const session = await signIn(app)
    const headers = {
      cookie: session.cookie,
      origin: "http://localhost",
      "content-type": "application/x-www-form-urlencoded",
    }
    expect((await app.request("/signout", { method: "POST", headers, body: "csrf=nope" })).status).toBe(403)
    const out = await app.request("/signout", {
      method: "POST",
      headers,
      body: `csrf=${encodeURIComponent(session.csrf)}`,
    })
    expect(out.status).toBe(303)
    expect(out.headers.getSetCookie().join()).toMatch(/tnx_session=;.*Max-Age=0/)
    // A copy of the signed-out cookie is refused too, also by another instance on the store.
    expect((await app.request("/requests", { headers: { cookie: session.cookie } })).status).toBe(401)
    const other = await instance(fake(), store)
    expect((await other.app.request("/requests", { headers: { cookie: session.cookie } })).status).toBe(401)
  })
})

describe("CSRF on state-changing routes", () => {
  it("a session POST needs this origin, the CSRF token and a JSON content type", async () => {
    const { app, effects } = await instance(fake(), files.store())
    const run = await startRun(app, "refund order X-1 $5")
    const session = await signIn(app)
    const path = `/requests/${run.pending.id}/answer`
    const body = JSON.stringify({ ok: true })
    const cases: [Record<string, string>, number, string][] = [
      [{ origin: "http://evil.example" }, 403, "cross_origin"],
      [{ origin: "null" }, 403, "cross_origin"],
      [{ origin: "", "sec-fetch-site": "cross-site" }, 403, "cross_origin"],
      [{ "x-csrf-token": "" }, 403, "csrf_token"],
      [{ "x-csrf-token": "forged" }, 403, "csrf_token"],
      // What a cross-site <form enctype="text/plain"> would send, even if it had the rest.
      [{ "content-type": "text/plain" }, 415, "unsupported_media_type"],
      [{ "content-type": "application/x-www-form-urlencoded" }, 415, "unsupported_media_type"],
    ]
    for (const [headers, status, code] of cases) {
      const clean = Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== ""))
      const drop = Object.keys(headers).filter((k) => headers[k] === "")
      const all: Record<string, string> = {
        cookie: session.cookie,
        origin: "http://localhost",
        "content-type": "application/json",
        "x-csrf-token": session.csrf,
        ...clean,
      }
      for (const key of drop) delete all[key]
      const res = await app.request(path, { method: "POST", headers: all, body })
      expect(res.status, JSON.stringify(headers)).toBe(status)
      expect((await json(res)).error.code).toBe(code)
    }
    expect(effects).toEqual([])
    const ok = await sessionPost(app, path, session, {}, body)
    expect(ok.status).toBe(200)
    expect(effects).toHaveLength(1)
  })

  it("JSON with a bearer token needs no CSRF token, but still application/json", async () => {
    const { app } = await instance(fake(), files.store())
    const res = await app.request("/runs", {
      method: "POST",
      headers: { authorization: `Bearer ${API_TOKEN}`, "content-type": "text/plain" },
      body: JSON.stringify({ prompt: "refund order X-2 $5" }),
    })
    expect(res.status).toBe(415)
  })
})

describe("Host allowlist", () => {
  it("a forged Host (DNS rebinding) is refused on every route but /healthz", async () => {
    const { app } = await instance(fake(), files.store())
    const headers = { host: "evil.example:3000", authorization: `Bearer ${API_TOKEN}` }
    for (const path of ["/", "/requests", "/signin", "/events"]) {
      const res = await app.request(path, { headers })
      expect(res.status, path).toBe(403)
      expect((await json(res)).error.code).toBe("forbidden_host")
    }
    expect((await postJson(app, "/runs", { prompt: "x" }, { host: "evil.example" })).status).toBe(403)
    expect((await app.request("/healthz", { headers })).status).toBe(200)
    expect((await app.request("/requests", { headers: { ...headers, host: "127.0.0.1:8080" } })).status).toBe(
      200,
    )
  })

  it("configured hosts replace the loopback default; a port pins the port", async () => {
    const { app } = await instance(fake(), files.store(), {
      app: {
        security: {
          users: { a: "a-token-0123456789abcdef" },
          apiTokens: { ci: API_TOKEN },
          allowedHosts: ["approvals.example.com:443", "inbox.internal"],
        },
      },
    })
    const get = (host: string) =>
      app.request("/requests", { headers: { host, authorization: `Bearer ${API_TOKEN}` } })
    expect((await get("approvals.example.com:443")).status).toBe(200)
    expect((await get("approvals.example.com:8443")).status).toBe(403)
    expect((await get("inbox.internal:3000")).status).toBe(200)
    expect((await get("localhost:3000")).status).toBe(403)
  })
})

describe("the signed webhook", () => {
  it("refuses unsigned, wrongly signed, stale and replayed deliveries; nothing is answered", async () => {
    const { app, effects } = await instance(fake(), files.store())
    const run = await startRun(app, "refund order W-1 $9")
    const answer = { id: run.pending.id, ok: true }
    const refused: [Response, number, string][] = [
      [await postWebhook(app, answer, { signature: null }), 401, "invalid_signature"],
      [await postWebhook(app, answer, { signature: "t=1,v1=zz" }), 401, "invalid_signature"],
      [await postWebhook(app, answer, { secret: "another-secret-0123456789" }), 401, "invalid_signature"],
      [await postWebhook(app, answer, { nowMs: Date.now() - 10 * 60_000 }), 401, "invalid_signature"],
    ]
    for (const [res, status, code] of refused) {
      expect(res.status).toBe(status)
      expect((await json(res)).error.code).toBe(code)
    }
    // A body changed after signing fails too.
    const body = JSON.stringify(answer)
    const signature = signBody(WEBHOOK_SECRET, body)
    const altered = await app.request("/webhooks/answer", {
      method: "POST",
      headers: { "content-type": "application/json", "x-toolnexus-signature": signature },
      body: JSON.stringify({ ...answer, data: { amountUsd: 999 } }),
    })
    expect(altered.status).toBe(401)
    expect(effects).toEqual([])

    const send = () =>
      app.request("/webhooks/answer", {
        method: "POST",
        headers: { "content-type": "application/json", "x-toolnexus-signature": signature },
        body,
      })
    expect((await send()).status).toBe(200)
    const replay = await send()
    expect(replay.status).toBe(409)
    expect((await json(replay)).error.code).toBe("webhook_replayed")
    expect(effects).toHaveLength(1)
  })

  it("a replay to another instance on the same store is refused too", async () => {
    const store = files.store()
    const one = await instance(fake(), store)
    const two = await instance(fake(), store)
    const run = await startRun(one.app, "refund order W-2 $9")
    const body = JSON.stringify({ id: run.pending.id, ok: false, reason: "declined" })
    // One signature, sent twice.
    const now = Date.now()
    const send = (app: typeof one.app) =>
      app.request("/webhooks/answer", {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-toolnexus-signature": signBody(WEBHOOK_SECRET, body, now),
        },
        body,
      })
    expect((await send(one.app)).status).toBe(200)
    const replay = await send(two.app)
    expect(replay.status).toBe(409)
    expect((await json(replay)).error.code).toBe("webhook_replayed")
  })

  it("is refused when no secret is configured", async () => {
    const { app } = await instance(fake(), files.store(), {
      app: { security: { users: { a: "a-token-0123456789abcdef" } } },
    })
    const res = await postWebhook(app, { id: "pnd-1", ok: true })
    expect(res.status).toBe(403)
    expect((await json(res)).error.code).toBe("webhook_disabled")
  })
})

describe("limits", () => {
  it("an oversized body is a 413 and answers nothing", async () => {
    const { app, effects } = await instance(fake(), files.store())
    const run = await startRun(app, "refund order L-1 $5")
    const big = { ok: true, data: { note: "x".repeat(70 * 1024) } }
    const res = await postJson(app, `/requests/${run.pending.id}/answer`, big)
    expect(res.status).toBe(413)
    expect((await json(res)).error.code).toBe("body_too_large")
    expect(effects).toEqual([])
    expect((await getJson(app, "/requests")).requests).toHaveLength(1)
  })

  it("answers are rate limited per caller with 429 and Retry-After", async () => {
    const { app } = await instance(fake(), files.store(), {
      app: { answerRateLimit: { limit: 2, windowMs: 60_000 } },
    })
    const statuses: number[] = []
    let last: Response | undefined
    for (let i = 0; i < 3; i++) {
      last = await postJson(app, "/requests/pnd-none/answer", { ok: false })
      statuses.push(last.status)
    }
    expect(statuses).toEqual([404, 404, 429])
    expect(Number(last?.headers.get("retry-after"))).toBeGreaterThan(0)
    expect((await json(last as Response)).error.code).toBe("rate_limited")
  })

  it("an answer finds its request through the index, never by listing the pending requests", async () => {
    const store = files.store()
    let listed = 0
    const listPending = store.listPending.bind(store)
    store.listPending = (opts) => {
      listed++
      return listPending(opts)
    }
    const { app } = await instance(fake(), store)
    const run = await startRun(app, "refund order L-2 $5")
    listed = 0
    expect((await postJson(app, "/requests/pnd-unknown/answer", { ok: true })).status).toBe(404)
    expect((await postJson(app, `/requests/${run.pending.id}/answer`, { ok: true })).status).toBe(200)
    expect(listed).toBe(0)
  })
})
