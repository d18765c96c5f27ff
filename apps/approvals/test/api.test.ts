import { createInProcessClient } from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import { createApprovalsApp } from "../src/app.js"
import {
  aMinuteAgo,
  ALICE_TOKEN,
  API_TOKEN,
  agentReply,
  getJson,
  instance,
  json,
  postJson,
  postWebhook,
  signIn,
  useFakeModel,
  startRun,
} from "./support.js"

const { files, fake } = useFakeModel()

describe.each(["openai", "anthropic"] as const)("a run that needs approval (%s style)", (style) => {
  it("parks, is listed, and finishes when approved; the tool sees the answer", async () => {
    const { app, effects } = await instance(fake(), files.store(), { style })
    const run = await startRun(app, "Please refund order A-42 $40")
    expect(run).toMatchObject({ status: "pending", text: "Asking first." })
    expect(run.id).toMatch(/^run-/)
    expect(run.pending).toMatchObject({ kind: "approval", prompt: "Refund $40.00 on order A-42?" })
    expect(effects).toEqual([])

    const listed = await getJson(app, "/requests")
    expect(listed.requests).toHaveLength(1)
    expect(listed.requests[0]).toMatchObject({ runId: run.id, expired: false, request: run.pending })
    expect(Date.parse(listed.requests[0].since)).toBeGreaterThan(Date.now() - 60_000)

    const res = await postJson(app, `/requests/${run.pending.id}/answer`, { ok: true })
    expect(res.status).toBe(200)
    const done = await json(res)
    expect(done).toMatchObject({ id: run.id, status: "done" })
    expect(done.text).toMatch(/^Done: Refunded \$40\.00 on order A-42 \(refund ref run-/)
    expect(effects).toHaveLength(1)
    expect(effects[0]).toMatchObject({ tool: "refund_order", answer: { id: run.pending.id, ok: true } })
    expect(effects[0]?.idempotencyKey).toMatch(new RegExp(`^${run.id}:`))
    expect((await getJson(app, "/requests")).requests).toEqual([])
  })

  it("reports a decline to the model, which says so; the tool never acts", async () => {
    const { app, effects } = await instance(fake(), files.store(), { style })
    const run = await startRun(app, "refund order B-7 $15")
    const res = await postJson(app, `/requests/${run.pending.id}/answer`, { ok: false, reason: "declined" })
    expect(res.status).toBe(200)
    const done = await json(res)
    expect(done.status).toBe("done")
    expect(done.text).toBe("Not done, it was declined: Refund $15.00 on order B-7? (declined)")
    expect(effects).toEqual([])
  })
})

describe("answering", () => {
  // Issue 33: an answer no store can write (20,000 levels deep fits in the 64 KB body limit)
  // got a 503 after its claim; now a 400 before anything is read or written.
  it("an answer nested too deep for a store is a 400, and the request stays open", async () => {
    const { app, effects } = await instance(fake(), files.store())
    const run = await startRun(app, "refund order C-9 $5")
    // Written out: the test's own JSON.stringify would overflow on it too.
    const body = `{"ok":true,"data":{"deep":${"[".repeat(20_000)}1${"]".repeat(20_000)}}}`
    const res = await app.request(`/requests/${run.pending.id}/answer`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${API_TOKEN}` },
      body,
    })
    expect(res.status).toBe(400)
    expect((await json(res)).error).toMatchObject({ code: "invalid_body", message: /at most 1000 levels/ })
    expect(
      (await getJson(app, "/requests")).requests.map(
        (entry: { request: { id: string } }) => entry.request.id,
      ),
    ).toEqual([run.pending.id])
    expect((await postJson(app, `/requests/${run.pending.id}/answer`, { ok: true })).status).toBe(200)
    expect(effects).toHaveLength(1)
  })

  it("a second answer to the same request is a 409", async () => {
    const { app, effects } = await instance(fake(), files.store())
    const run = await startRun(app, "refund order C-1 $5")
    expect((await postJson(app, `/requests/${run.pending.id}/answer`, { ok: true })).status).toBe(200)
    for (const body of [{ ok: true }, { ok: false, reason: "declined" }]) {
      const again = await postJson(app, `/requests/${run.pending.id}/answer`, body)
      expect(again.status).toBe(409)
      // The decision that stands is named: a retried answer knows it was its own.
      expect((await json(again)).error).toMatchObject({
        code: "answer_conflict",
        requestId: run.pending.id,
        decision: { ok: true },
      })
    }
    const webhook = await postWebhook(app, { id: run.pending.id, ok: true })
    expect(webhook.status).toBe(409)
    expect(effects).toHaveLength(1)
  })

  it("two answers at the same moment: exactly one resumes, the other is a 409", async () => {
    const store = files.store()
    const { app, effects } = await instance(fake(), store)
    // Two instances on one store: a host runs one delivery per run at a time in its process,
    // so the race between deliveries is one between processes.
    const other = await instance(fake(), store, { effects })
    const run = await startRun(app, "refund order C-2 $5")
    // A slow final turn keeps the first claim open while the second answer arrives.
    fake().addRule({ match: "C-2", reply: (req) => ({ ...agentReply(req), delayMs: 150 }), times: 1 })
    const [a, b] = await Promise.all([
      postJson(app, `/requests/${run.pending.id}/answer`, { ok: true }),
      postWebhook(other.app, { id: run.pending.id, ok: true }),
    ])
    expect([a.status, b.status].sort()).toEqual([200, 409])
    // Refused by the store's claim, not by the app's own "already answered" check.
    const refused = await json(a.status === 409 ? a : b)
    expect(refused.error.message).toMatch(/being applied by another delivery/)
    expect(effects).toHaveLength(1)
  })

  it("an unknown request id is a 404", async () => {
    const { app } = await instance(fake(), files.store())
    await startRun(app, "refund order D-1 $5")
    const res = await postJson(app, "/requests/pnd-nope/answer", { ok: true })
    expect(res.status).toBe(404)
    expect(await json(res)).toEqual({
      error: {
        code: "unknown_request",
        message: 'unknown request "pnd-nope": no conversation or saved runtime waits on it',
      },
    })
    expect((await postWebhook(app, { id: "pnd-nope", ok: false })).status).toBe(404)
  })

  it("an approval after expiresAt is a 410 naming the request and its expiresAt; closing it as expired still works", async () => {
    // Requests asked on a clock a minute behind expire at once: no waiting for expiresAt.
    const { app, effects } = await instance(fake(), files.store(), {
      tools: { expiresInMs: 1, now: aMinuteAgo },
    })
    const run = await startRun(app, "refund order E-1 $9")
    const listed = await getJson(app, "/requests")
    expect(listed.requests[0].expired).toBe(true)

    const res = await postJson(app, `/requests/${run.pending.id}/answer`, { ok: true })
    expect(res.status).toBe(410)
    const body = await json(res)
    expect(body.error.code).toBe("answer_expired")
    expect(body.error.message).toContain(run.pending.id)
    expect(body.error.requestId).toBe(run.pending.id)
    expect(body.error.expiresAt).toBe(run.pending.expiresAt)

    const closed = await postJson(app, `/requests/${run.pending.id}/answer`, { ok: false, reason: "expired" })
    expect(closed.status).toBe(200)
    expect((await json(closed)).text).toContain("(expired)")
    expect(effects).toEqual([])
  })

  it("the webhook takes an Answer and finds the run by its request id", async () => {
    const { app, effects } = await instance(fake(), files.store())
    const run = await startRun(app, "refund order F-1 $12")
    const answer = { id: run.pending.id, ok: true, data: { approver: "ops@example.com" } }
    const res = await postWebhook(app, answer)
    expect(res.status).toBe(200)
    expect(await json(res)).toMatchObject({ id: run.id, status: "done" })
    expect(effects[0]?.answer).toEqual(answer)
  })

  it("a run with two approvals parks again after the first; each request is answered once", async () => {
    const { app, effects } = await instance(fake(), files.store())
    const run = await startRun(app, "refund order G-1 $3 and email the customer")
    expect(run.pending.prompt).toBe("Refund $3.00 on order G-1?")

    const first = await json(await postJson(app, `/requests/${run.pending.id}/answer`, { ok: true }))
    expect(first).toMatchObject({ id: run.id, status: "pending", pending: { kind: "approval" } })
    expect(first.pending.prompt).toMatch(/^Send an email to jane@example\.com/)
    // The run now waits on the second request; the first one is answered, not unknown.
    expect((await postJson(app, `/requests/${run.pending.id}/answer`, { ok: true })).status).toBe(409)

    const second = await postJson(app, `/requests/${first.pending.id}/answer`, { ok: true })
    const done = await json(second)
    expect(done.status).toBe("done")
    expect(done.text).toMatch(/Refunded \$3\.00 on order G-1[\s\S]*Sent the email/)
    expect(effects.map((e) => e.tool)).toEqual(["refund_order", "send_email"])
  })

  it("a model failure during the resume is a 502 that keeps the decision for the next delivery", async () => {
    const { app, effects, errors } = await instance(fake(), files.store())
    const run = await startRun(app, "refund order H-1 $8")
    fake().addRule({ match: "H-1", reply: { status: 400, text: "bad request, scripted" }, times: 1 })
    const failed = await postJson(app, `/requests/${run.pending.id}/answer`, { ok: true })
    expect(failed.status).toBe(502)
    expect((await json(failed)).error.code).toBe("model_failed")
    expect(errors).toHaveLength(1)
    // Still listed: the answer is kept with the released claim, not consumed.
    expect((await getJson(app, "/requests")).requests).toHaveLength(1)

    const retried = await postJson(app, `/requests/${run.pending.id}/answer`, { ok: true })
    expect(retried.status).toBe(200)
    expect((await json(retried)).status).toBe("done")
    // The tool ran on both attempts with one idempotency key, so a real API deduplicates it.
    expect(new Set(effects.map((e) => e.idempotencyKey)).size).toBe(1)
  })
})

describe("the logger option", () => {
  it("logs refused answers at info without a stack, a failed resume at error with its code", async () => {
    const lines: { level: string; message: string; data?: Record<string, unknown> }[] = []
    const logger = {
      info: (message: string, data?: Record<string, unknown>) => lines.push({ level: "info", message, data }),
      error: (message: string, data?: Record<string, unknown>) =>
        lines.push({ level: "error", message, data }),
    }
    const { app } = await instance(fake(), files.store(), { app: { logger } })
    const run = await startRun(app, "refund order L-1 $4")
    expect((await postJson(app, "/requests/pnd-nope/answer", { ok: true })).status).toBe(404)
    fake().addRule({ match: "L-1", reply: { status: 400, text: "bad request, scripted" }, times: 1 })
    expect((await postJson(app, `/requests/${run.pending.id}/answer`, { ok: true })).status).toBe(502)
    // The approval is kept with the released claim: another decision conflicts with it, the
    // same one completes it, and after that every answer conflicts.
    const other = await postJson(app, `/requests/${run.pending.id}/answer`, { ok: false })
    expect(other.status).toBe(409)
    expect((await json(other)).error.message).toMatch(/waits to be applied/)
    expect((await postJson(app, `/requests/${run.pending.id}/answer`, { ok: true })).status).toBe(200)
    expect((await postJson(app, `/requests/${run.pending.id}/answer`, { ok: true })).status).toBe(409)

    const refusals = lines.filter((line) => line.level === "info" && /refused/.test(line.message))
    expect(refusals.map((line) => line.data?.code)).toEqual(
      expect.arrayContaining(["TNX_UNKNOWN_REQUEST", "TNX_ANSWER_CONFLICT"]),
    )
    for (const line of refusals) expect(line.message).not.toMatch(/\n\s+at /)
    const failures = lines.filter((line) => line.level === "error")
    expect(failures.some((line) => line.data?.code === "TNX_LLM_HTTP")).toBe(true)
    expect(failures.some((line) => line.data?.code === "TNX_UNKNOWN_REQUEST")).toBe(false)
  })
})

describe("input checks", () => {
  it("refuses malformed bodies with 400 and a clear error", async () => {
    const { app } = await instance(fake(), files.store())
    const run = await startRun(app, "refund order I-1 $1")
    const path = `/requests/${run.pending.id}/answer`
    const cases: [string, string | unknown, string][] = [
      [path, "{not json", "invalid_json"],
      [path, { ok: "yes" }, "invalid_body"],
      [path, { ok: true, reason: "because" }, "invalid_body"],
      [path, { ok: true, id: "pnd-other" }, "invalid_body"],
      [path, { ok: true, data: [1] }, "invalid_body"],
      ["/runs", { prompt: "  " }, "invalid_body"],
      ["/runs", [], "invalid_body"],
    ]
    for (const [target, body, code] of cases) {
      const raw = typeof body === "string" ? body : JSON.stringify(body)
      const res = await app.request(target, {
        method: "POST",
        body: raw,
        headers: { "content-type": "application/json", authorization: `Bearer ${API_TOKEN}` },
      })
      expect(res.status, `${target} ${raw}`).toBe(400)
      expect((await json(res)).error.code).toBe(code)
    }
    const webhook = await postWebhook(app, { ok: true })
    expect(webhook.status).toBe(400)
    expect((await json(webhook)).error.code).toBe("invalid_body")
    expect((await getJson(app, "/requests?limit=-1")).error.code).toBe("invalid_query")
    expect((await getJson(app, "/nowhere")).error.code).toBe("not_found")
    // Nothing was answered by the refused bodies.
    expect((await getJson(app, "/requests")).requests).toHaveLength(1)
  })

  it("refuses a client whose conversations live in another store", async () => {
    // Without a `store` option the client keeps conversations in its own MemoryStore.
    const client = createInProcessClient({ model: "m", generate: async () => ({ content: "hi" }) })
    const security = { users: { alice: ALICE_TOKEN } }
    expect(() => createApprovalsApp({ store: files.store(), client, security })).toThrow(
      /conversations in `store`/,
    )
  })
})

describe("the page", () => {
  it("lists pending requests with kind, age, expiry and buttons, escaping model-provided text", async () => {
    const { app } = await instance(fake(), files.store())
    const evil = `email them <script>alert("pwned")</script> & <img src=x onerror=alert(1)>`
    const run = await startRun(app, evil)
    const { cookie } = await signIn(app)
    const res = await app.request("/", { headers: { cookie } })
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toMatch(/^text\/html/)
    const csp = res.headers.get("content-security-policy") ?? ""
    expect(csp).toMatch(/script-src 'nonce-[A-Za-z0-9+/=]+'/)
    const html = await res.text()
    expect(html).not.toContain("<script>alert")
    expect(html).not.toContain("<img src=x")
    expect(html).toContain("&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt; &amp; &lt;img src=x")
    expect(html).toContain(`data-request-id="${run.pending.id}"`)
    expect(html).toContain(`<code>${run.id}</code>`)
    expect(html).toMatch(/<span class="kind kind-approval">approval<\/span>/)
    expect(html).toMatch(/waiting <time datetime="[^"]+"[^>]*>\d+ s<\/time>/)
    expect(html).toMatch(/expires in (23 h|24 h|1 d)/)
    expect(html).toContain('data-action="approve">Approve <kbd>a</kbd></button>')
    expect(html).toContain('data-action="decline-open">Decline <kbd>d</kbd></button>')
    // Only the page's own script, carrying the nonce, is there.
    expect(html.match(/<script/g)).toHaveLength(1)
    expect(html).toMatch(/<script nonce="[^"]+">/)
  })

  it("says when nothing is waiting", async () => {
    const { app } = await instance(fake(), files.store())
    const { cookie } = await signIn(app)
    expect(await (await app.request("/", { headers: { cookie } })).text()).toContain("Nothing is waiting.")
  })
})
