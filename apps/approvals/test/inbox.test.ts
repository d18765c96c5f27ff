import { type DurableStore, createStoreHost } from "@toolnexus/durable"
import { approvalsAgents } from "../src/host-inbox.js"
import { describe, expect, it } from "vitest"
import type { ToolEffect } from "../src/tools.js"
import {
  aMinuteAgo,
  answerTools,
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

describe("a sub-agent tree's request", () => {
  it("is listed once, with its agent path, and one answer resumes the whole tree", async () => {
    const { app, effects } = await instance(fake(), files.store())
    const run = await startRun(app, "refund order T-1 $12", { team: true })
    expect(run).toMatchObject({ kind: "runtime", status: "pending" })
    expect(run.id).toMatch(/^team-/)

    const { requests } = await getJson(app, "/requests")
    expect(requests).toHaveLength(1)
    expect(requests[0]).toMatchObject({
      runId: run.id,
      runtimeKey: run.id,
      path: ["root", "support.1", "payments.1"],
      tool: "refund_order",
      args: { orderId: "T-1", amountUsd: 12 },
      request: { id: run.pending.id, kind: "approval" },
    })
    expect(requests[0].conversationId).toBe(`${run.id}/root/support.1/payments.1`)
    const { cookie } = await signIn(app)
    const html = await (await app.request("/", { headers: { cookie } })).text()
    expect(html.match(/<article class="card[^>]*data-request-id=/g)).toHaveLength(1)
    expect(html).toContain("<li>root</li><li>support.1</li><li>payments.1</li>")

    const done = await postJson(app, `/requests/${run.pending.id}/answer`, { ok: true })
    expect(done.status).toBe(200)
    const view = await json(done)
    // The lead's own result: it got the payments agent's report back through its task call.
    expect(view).toMatchObject({ id: run.id, kind: "runtime", status: "done" })
    expect(view.text).toMatch(/^Done: Done: Refunded \$12\.00 on order T-1/)
    expect(effects).toHaveLength(1)
    expect((await getJson(app, "/requests")).requests).toEqual([])
    expect((await postJson(app, `/requests/${run.pending.id}/answer`, { ok: true })).status).toBe(409)
    expect((await postWebhook(app, { id: run.pending.id, ok: true })).status).toBe(409)
    expect(effects).toHaveLength(1)
  })
})

describe("an operator's answer (a host without the app's agents, as `toolnexus pending approve`)", () => {
  it("is recorded for the tree and applied once by the sweep of a host that runs the team", async () => {
    const store = files.store()
    const { app, effects, client, toolkit, team } = await instance(fake(), store)
    const run = await startRun(app, "refund order T-2 $5", { team: true })
    const operator = createStoreHost({ store, agents: [], sweepEveryMs: false })
    expect(await operator.deliverAnswer({ id: run.pending.id, ok: true })).toMatchObject({ runId: run.id })
    expect(effects).toEqual([])
    // Recorded, not yet applied: a second decision conflicts, naming the first.
    const second = await postJson(app, `/requests/${run.pending.id}/answer`, { ok: false })
    expect(second.status).toBe(409)

    const serving = createStoreHost({
      store,
      agents: approvalsAgents({ client, toolkit, team }),
      sweepEveryMs: false,
    })
    expect((await serving.sweep()).completed).toEqual([run.id])
    expect(effects).toHaveLength(1)
    expect((await getJson(app, "/requests")).requests).toEqual([])
    expect((await serving.sweep()).completed).toEqual([])
    expect(effects).toHaveLength(1)
  })
})

describe("ways of answering", () => {
  it("decline with a reason: the model reads the reason, the history keeps it", async () => {
    const { app, effects } = await instance(fake(), files.store())
    const run = await startRun(app, "refund order R-1 $50")
    const res = await postJson(app, `/requests/${run.pending.id}/answer`, {
      ok: false,
      reason: "over the limit without a receipt",
    })
    expect((await json(res)).text).toBe(
      "Not done, it was declined: Refund $50.00 on order R-1? (over the limit without a receipt)",
    )
    expect(effects).toEqual([])
    const [entry] = (await getJson(app, "/answers")).answers
    expect(entry).toMatchObject({
      requestId: run.pending.id,
      runId: run.id,
      tool: "refund_order",
      answeredBy: "ci",
      via: "api",
      decision: { ok: false, reason: "over the limit without a receipt" },
      outcome: { status: "done" },
    })
  })

  it("edit the arguments the tool allows before approving; others are refused", async () => {
    const { app, effects } = await instance(fake(), files.store())
    const run = await startRun(app, "refund order E-7 $80")
    const path = `/requests/${run.pending.id}/answer`
    const forbidden = await postJson(app, path, { ok: true, data: { args: { orderId: "E-8" } } })
    expect(forbidden.status).toBe(400)
    expect((await json(forbidden)).error).toMatchObject({
      code: "invalid_edit",
      message: 'the tool does not allow changing "orderId"',
    })
    const wrongType = await postJson(app, path, { ok: true, data: { args: { amountUsd: "lots" } } })
    expect((await json(wrongType)).error.message).toBe('"amountUsd" must stay a number')
    expect(effects).toEqual([])

    const edited = await postJson(app, path, { ok: true, data: { args: { amountUsd: 60 } } })
    expect(edited.status).toBe(200)
    expect((await json(edited)).text).toMatch(/^Done: Refunded \$60\.00 on order E-7/)
    expect(effects[0]?.args).toMatchObject({ orderId: "E-7", amountUsd: 60 })
    const [entry] = (await getJson(app, "/answers")).answers
    expect(entry.decision.data.args).toEqual({ orderId: "E-7", amountUsd: 60 })
  })

  it("respond to a question with text", async () => {
    const answers: unknown[] = []
    const { app } = await instance(fake(), files.store(), { extraTools: answerTools(answers) })
    const run = await startRun(app, "please ask the customer")
    expect(run.pending).toMatchObject({ kind: "question" })
    const res = await postJson(app, `/requests/${run.pending.id}/answer`, {
      ok: true,
      data: { text: "teal" },
    })
    expect((await json(res)).text).toBe("Done: The customer said: teal")
    expect(answers).toEqual([{ text: "teal" }])
  })

  it("fill in an MCP elicitation's form: values are checked and typed by its schema", async () => {
    const answers: unknown[] = []
    const { app } = await instance(fake(), files.store(), { extraTools: answerTools(answers) })
    const run = await startRun(app, "open the shipping form")
    const listed = (await getJson(app, "/requests")).requests[0]
    expect(listed).toMatchObject({ tool: "crm › update_address", request: { kind: "input" } })
    const path = `/requests/${run.pending.id}/answer`
    const missing = await postJson(app, path, { ok: true, data: { street: "Main St 1" } })
    expect((await json(missing)).error).toEqual({ code: "invalid_form", message: '"zip" is required' })
    const badEnum = await postJson(app, path, {
      ok: true,
      data: { street: "Main St 1", zip: "1000", carrier: "pigeon" },
    })
    expect((await json(badEnum)).error.message).toBe('"carrier" must be one of "ups", "dhl"')
    const ok = await postJson(app, path, {
      ok: true,
      data: { street: "Main St 1", zip: "1000", floor: "3", carrier: "dhl" },
    })
    expect(ok.status).toBe(200)
    expect(answers).toEqual([{ street: "Main St 1", zip: "1000", floor: 3, express: false, carrier: "dhl" }])
  })
})

describe("the history", () => {
  it("is filtered by decision, user, tool, outcome and text, and survives a restart", async () => {
    const store = files.store()
    const first = await instance(fake(), store)
    const a = await startRun(first.app, "refund order H-1 $5")
    const b = await startRun(first.app, "refund order H-2 $6")
    const c = await startRun(first.app, "refund order H-3 $7 and email them")
    await postJson(first.app, `/requests/${a.pending.id}/answer`, { ok: true })
    await postJson(first.app, `/requests/${b.pending.id}/answer`, { ok: false, reason: "duplicate" })
    await postWebhook(first.app, { id: c.pending.id, ok: true })

    // A new app over the same database, as after a restart.
    const { app } = await instance(fake(), store)
    const ids = async (query: string) =>
      ((await getJson(app, `/answers${query}`)).answers as { requestId: string }[]).map((e) => e.requestId)
    expect(await ids("")).toEqual([c.pending.id, b.pending.id, a.pending.id])
    expect(await ids("?decision=declined")).toEqual([b.pending.id])
    expect(await ids("?decision=approved")).toEqual([c.pending.id, a.pending.id])
    expect(await ids("?user=ci")).toEqual([b.pending.id, a.pending.id])
    expect(await ids("?tool=refund_order&outcome=pending")).toEqual([c.pending.id])
    expect(await ids("?q=H-2")).toEqual([b.pending.id])
    expect(await ids("?q=DUPLICATE")).toEqual([b.pending.id])
    expect((await getJson(app, "/answers?decision=maybe")).error.code).toBe("invalid_query")

    const { cookie } = await signIn(app)
    const html = await (await app.request("/history?decision=declined", { headers: { cookie } })).text()
    expect(html).toContain(`data-request-id="${b.pending.id}"`)
    expect(html).not.toContain(`data-request-id="${a.pending.id}"`)
    expect(html).toContain('<div class="reason">duplicate</div>')
  })

  it("two instances on one store keep each other's entries", async () => {
    const store = files.store()
    const effects: ToolEffect[] = []
    const one = await instance(fake(), store, { effects })
    const two = await instance(fake(), store, { effects })
    const runs = await Promise.all([1, 2, 3, 4].map((n) => startRun(one.app, `refund order M-${n} $${n}`)))
    await Promise.all(
      runs.map((run, i) =>
        postJson((i % 2 ? one : two).app, `/requests/${run.pending.id}/answer`, { ok: true }),
      ),
    )
    const listed = (await getJson(one.app, "/answers")).answers.map((e: { requestId: string }) => e.requestId)
    expect(listed.sort()).toEqual(runs.map((r) => r.pending.id).sort())
  })

  it("a failed resume is recorded with its error; the later success replaces it", async () => {
    const { app } = await instance(fake(), files.store())
    const run = await startRun(app, "refund order F-9 $8")
    fake().addRule({ match: "F-9", reply: { status: 401, text: "bad key, scripted" }, times: 1 })
    const failed = await postJson(app, `/requests/${run.pending.id}/answer`, { ok: true })
    expect(failed.status).toBe(502)
    expect((await json(failed)).error.message).toBe(
      "the API key was refused (401): check OPENAI_API_KEY or ANTHROPIC_API_KEY",
    )
    expect((await getJson(app, "/answers")).answers[0].outcome).toEqual({
      status: "error",
      error: "the API key was refused (401): check OPENAI_API_KEY or ANTHROPIC_API_KEY",
    })
    expect((await postJson(app, `/requests/${run.pending.id}/answer`, { ok: true })).status).toBe(200)
    const answers = (await getJson(app, "/answers")).answers
    expect(answers).toHaveLength(1)
    expect(answers[0].outcome.status).toBe("done")
  })
})

describe("failed requests", () => {
  it("are listed with their error when the store tracks them, with a retry button", async () => {
    const store = files.store() as DurableStore & { listFailed?: unknown }
    const request = {
      id: "pnd-failed-1",
      kind: "approval",
      prompt: "Refund $3.00 on order Z-1?",
      data: { tool: "refund_order", args: { orderId: "Z-1" } },
    }
    store.listFailed = async () => [
      {
        request,
        conversationId: "run-z",
        since: new Date().toISOString(),
        attempts: 3,
        state: "failed",
        lastError: { name: "LLMHttpError", code: "TNX_LLM_HTTP", message: "LLM endpoint answered HTTP 500" },
      },
    ]
    const { app } = await instance(fake(), store)
    const listed = await getJson(app, "/requests/failed")
    expect(listed).toMatchObject({
      requests: [{ runId: "run-z", attempts: 3, tool: "refund_order", lastError: { code: "TNX_LLM_HTTP" } }],
    })
    const { cookie } = await signIn(app)
    const html = await (await app.request("/", { headers: { cookie } })).text()
    expect(html).toContain("<h2>Failed (1)</h2>")
    expect(html).toContain('data-failed-id="pnd-failed-1"')
    expect(html).toContain("<strong>TNX_LLM_HTTP</strong>: LLM endpoint answered HTTP 500")
    // The retry goes to @toolnexus/durable's retryFailed, which finds no failed request in the
    // real store behind this stubbed listing: nothing is retried.
    const retry = await postJson(app, "/requests/pnd-failed-1/retry", {})
    expect(retry.status).toBe(404)
    expect((await json(retry)).error.code).toBe("unknown_request")
    const plain = await instance(fake(), files.store())
    expect(await getJson(plain.app, "/requests/failed")).toEqual({ requests: [] })
  })
})

describe("live updates", () => {
  it("GET /events streams an inbox event when a run parks and a history event when it is answered", async () => {
    const { app } = await instance(fake(), files.store())
    const { cookie } = await signIn(app)
    const abort = new AbortController()
    const res = await app.request("/events", { headers: { cookie }, signal: abort.signal })
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/)
    const reader = (res.body as ReadableStream<Uint8Array>).getReader()
    const decoder = new TextDecoder()
    let seen = ""
    const until = async (event: string) => {
      while (!seen.includes(`event: ${event}`)) {
        const { value, done } = await reader.read()
        if (done) throw new Error(`stream ended before ${event}: ${seen}`)
        seen += decoder.decode(value)
      }
      seen = seen.slice(seen.indexOf(`event: ${event}`) + 1)
    }
    await until("ready")
    const run = await startRun(app, "refund order S-1 $4")
    await until("inbox")
    await postJson(app, `/requests/${run.pending.id}/answer`, { ok: true })
    await until("history")
    abort.abort()
    await reader.cancel().catch(() => {})
  })

  it("a run parked, and an answer given, by another instance on the same store reach this instance's stream", async () => {
    const store = files.store()
    const here = await instance(fake(), store)
    const there = await instance(fake(), store)
    const { cookie } = await signIn(here.app)
    const abort = new AbortController()
    const res = await here.app.request("/events", { headers: { cookie }, signal: abort.signal })
    const reader = (res.body as ReadableStream<Uint8Array>).getReader()
    let seen = ""
    const next = async () => {
      const { value } = await reader.read()
      seen += new TextDecoder().decode(value)
    }
    while (!seen.includes("event: ready")) await next()
    // Give the first poll time to take its fingerprint before the other instance changes things.
    await new Promise((resolve) => setTimeout(resolve, 250))
    const run = await startRun(there.app, "refund order S-2 $4")
    while (!seen.includes("event: inbox")) await next()
    // An answer given over there is recorded in the shared history, and that is noticed here too.
    await postJson(there.app, `/requests/${run.pending.id}/answer`, { ok: true })
    while (!seen.includes("event: history")) await next()
    abort.abort()
    await reader.cancel().catch(() => {})
  })
})

describe("expiry", () => {
  it("an approval of a tree's request after expiresAt is refused; closing it as expired works", async () => {
    const { app, effects } = await instance(fake(), files.store(), {
      tools: { expiresInMs: 1, now: aMinuteAgo },
    })
    const run = await startRun(app, "refund order X-9 $9", { team: true })
    const res = await postJson(app, `/requests/${run.pending.id}/answer`, { ok: true })
    expect(res.status).toBe(410)
    expect((await json(res)).error).toMatchObject({
      code: "answer_expired",
      requestId: run.pending.id,
      expiresAt: run.pending.expiresAt,
    })
    const closed = await postJson(app, `/requests/${run.pending.id}/answer`, { ok: false, reason: "expired" })
    expect(closed.status).toBe(200)
    expect((await json(closed)).status).toBe("done")
    expect(effects).toEqual([])
  })
})
