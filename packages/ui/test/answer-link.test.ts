import { mkdtempSync, rmSync } from "node:fs"
import { type Server, createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  type RunHost,
  type RunResult,
  createClient,
  createToolkit,
  defineTool,
  hostAgent,
  pending,
} from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import {
  type DurableStore,
  type StoreHostAgent,
  createMemoryStore,
  createStoreHost,
} from "@toolnexus/durable"
import { SqliteStore } from "@toolnexus/durable/sqlite"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { answerLinkHandler, createAnswerLink, toNodeListener } from "../src/index.js"

const SECRET = "answer-link-test-secret-0123456789abcdef"
const OLD_SECRET = "answer-link-old-secret-0123456789abcdef!"
const OTHER_SECRET = "someone-elses-secret-0123456789abcdefgh"

const dir = mkdtempSync(join(tmpdir(), "tnx-ui-answer-link-"))
let fake: FakeLLMServer
beforeAll(async () => {
  fake = await createFakeLLMServer()
})
afterAll(async () => {
  await fake.close()
  rmSync(dir, { recursive: true, force: true })
})

const STORES: [string, () => DurableStore][] = [
  ["memory", () => createMemoryStore()],
  ["sqlite", () => new SqliteStore({ path: join(dir, `links-${Math.random().toString(36).slice(2)}.db`) })],
]

describe.each(STORES)("answer links over createStoreHost on the %s store", (_name, makeStore) => {
  let store: DurableStore
  let host: RunHost
  let server: Server
  let origin: string
  let base: string
  let runs: { amount: number }[]
  let count = 0

  beforeEach(async () => {
    fake.reset()
    runs = []
    store = makeStore()
    const client = createClient({
      baseUrl: `${fake.url}/v1`,
      style: "openai",
      model: "m",
      apiKey: "k",
      store,
    })
    const pay = defineTool({
      name: "pay",
      description: "pays an amount",
      inputSchema: { type: "object", properties: { amount: { type: "number" }, to: { type: "string" } } },
      needsApproval: true,
      run: (args: { amount: number }) => {
        runs.push(args)
        return `paid ${args.amount}`
      },
    })
    // An approval whose deadline passed long ago: an approval of it is refused as expired.
    const quote = defineTool({
      name: "quote",
      description: "offers a quote that had to be accepted long ago",
      inputSchema: { type: "object", properties: {} },
      run: (_args, ctx) => {
        if (!ctx?.answer?.ok)
          return pending({ kind: "approval", prompt: "Accept the quote?", expiresAt: "2000-01-01T00:00:00Z" })
        runs.push({ amount: 0 })
        return "accepted"
      },
    })
    const toolkit = await createToolkit({ extraTools: [pay, quote] })
    host = createStoreHost({
      store,
      agents: [hostAgent({ name: "payer", client, toolkit })] as StoreHostAgent[],
      sweepEveryMs: false,
    })
    const links = answerLinkHandler({ host, secrets: [SECRET, OLD_SECRET] })
    server = createServer(toNodeListener(links.fetch))
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    base = `${origin}/answer`
  })
  afterEach(async () => {
    await new Promise((resolve) => server.close(resolve))
    await host.close()
    await (store as { close?: () => Promise<void> | void }).close?.()
  })

  /** Starts a run that parks on the pay tool's approval; resolves to the request id. */
  async function parked(args: Record<string, unknown> = { amount: 42, to: "Ada" }): Promise<string> {
    const runId = `pay-${++count}`
    fake.enqueue({ toolCalls: [{ id: "c1", name: "pay", arguments: args }] }, { text: "all done" })
    await host.start("payer", runId, "pay Ada")
    const result = (await host.result(runId, { timeoutMs: 10_000 })) as RunResult
    expect(result.pending?.kind).toBe("approval")
    return result.pending?.id as string
  }
  const link = (id: string, secret = SECRET, expiresInMs = 60_000) =>
    createAnswerLink(id, { secret, expiresInMs, baseUrl: base })
  const post = (url: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin, ...headers },
      body: new URLSearchParams(form).toString(),
    })
  const asJson = { accept: "application/json" }

  it("GET shows the request, escaped, and decides nothing", async () => {
    const id = await parked({ amount: 7, to: "<script>alert(1)</script>" })
    const url = link(id)
    expect(new URL(url).origin + new URL(url).pathname).toBe(base)
    const res = await fetch(url)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toMatch(/^text\/html/)
    expect(res.headers.get("referrer-policy")).toBe("no-referrer")
    expect(res.headers.get("cache-control")).toBe("no-store")
    const page = await res.text()
    expect(page).toContain("<p>Approve pay with {&quot;amount&quot;:7,&quot;to&quot;:&quot;&lt;script&gt;")
    expect(page).toContain("approval")
    expect(page).toContain("<code>pay</code>")
    expect(page).toContain("&lt;script&gt;alert(1)&lt;/script&gt;")
    expect(page).not.toContain("<script>")
    expect(page).toContain('method="post"')
    expect(page).toContain('value="approve"')
    expect(page).toContain('value="decline"')
    expect(page).not.toContain(SECRET)
    // Twice, even: a GET (a mail scanner's prefetch) decides nothing.
    expect((await fetch(url)).status).toBe(200)
    expect(await host.getDecision(id)).toBeUndefined()
    expect(await host.findRequest(id)).toBeDefined()
    expect(runs).toEqual([])
  })

  it("POST approve runs the tool once; a second use is 409 with the first decision", async () => {
    const id = await parked()
    // The form posts where the page says: its action resolved against the link.
    const shownPage = await (await fetch(link(id))).text()
    const action = /action="([^"]*)"/.exec(shownPage)?.[1]?.replaceAll("&amp;", "&") as string
    const url = new URL(action, link(id)).href
    const res = await post(url, { decision: "approve" })
    expect(res.status).toBe(200)
    expect(await res.text()).toContain("approved")
    expect(runs).toEqual([{ amount: 42, to: "Ada" }])
    expect(await host.getDecision(id)).toEqual({ ok: true })

    const again = await post(url, { decision: "decline", reason: "changed my mind" }, asJson)
    expect(again.status).toBe(409)
    expect(await again.json()).toMatchObject({
      error: { code: "TNX_ANSWER_CONFLICT", requestId: id, decision: { ok: true } },
    })
    const page = await post(url, { decision: "approve" })
    expect(page.status).toBe(409)
    expect(await page.text()).toContain("already approved")
    // Another link to the same request is spent too, and a GET says so.
    const shown = await fetch(link(id))
    expect(shown.status).toBe(409)
    expect(runs).toHaveLength(1)
    expect(await host.getDecision(id)).toEqual({ ok: true })
  })

  it("POST decline records the reason and runs nothing", async () => {
    const id = await parked()
    const res = await post(link(id), { decision: "decline", reason: "  too much  " }, asJson)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ requestId: id, decision: { ok: false, reason: "too much" } })
    expect(await host.getDecision(id)).toEqual({ ok: false, reason: "too much" })
    expect(runs).toEqual([])
  })

  it("a request decided through another door first: 409 with that decision", async () => {
    const id = await parked()
    const url = link(id)
    await host.deliverAnswer({ id, ok: false, reason: "by the inbox" })
    const res = await post(url, { decision: "approve" }, asJson)
    expect(res.status).toBe(409)
    expect(await res.json()).toMatchObject({
      error: { code: "TNX_ANSWER_CONFLICT", decision: { ok: false, reason: "by the inbox" } },
    })
    const page = await fetch(url)
    expect(page.status).toBe(409)
    expect(await page.text()).toContain("declined (by the inbox)")
    expect(runs).toEqual([])
  })

  it("a decision that lands between the check and the delivery: 409 with the winner's decision", async () => {
    const id = await parked()
    let first = true
    // The other door decides right after this handler saw the request open.
    const racing: RunHost = Object.assign(Object.create(host), {
      getDecision: async (requestId: string) => {
        if (!first) return host.getDecision(requestId)
        first = false
        await host.deliverAnswer({ id: requestId, ok: false, reason: "other tab" })
        return undefined
      },
    })
    const links = answerLinkHandler({ host: racing, secrets: [SECRET] })
    const res = await links.fetch(
      new Request(link(id), {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json", origin },
        body: "decision=approve",
      }),
    )
    expect(res.status).toBe(409)
    expect(await res.json()).toMatchObject({ error: { decision: { ok: false, reason: "other tab" } } })
    expect(runs).toEqual([])
  })

  it("forged, foreign, malformed and expired tokens are refused and decide nothing", async () => {
    const id = await parked()
    const good = new URL(link(id))
    const token = good.searchParams.get("token") as string
    const withToken = (t: string) => {
      const u = new URL(base)
      u.searchParams.set("token", t)
      return u.href
    }
    // The signature of another request's token on this request's claims.
    const parts = token.split(".")
    const otherSig = (new URL(link("other-request")).searchParams.get("token") as string).split(".")[4]
    const forged = withToken([...parts.slice(0, 4), otherSig].join("."))
    // A request id swapped under a valid signature.
    const swapped = withToken(
      [parts[0], Buffer.from("pnd-someone-else").toString("base64url"), ...parts.slice(2)].join("."),
    )
    for (const url of [forged, swapped, link(id, OTHER_SECRET)]) {
      for (const send of [
        () => fetch(url, { headers: asJson }),
        () => post(url, { decision: "approve" }, asJson),
      ]) {
        const res = await send()
        expect(res.status).toBe(403)
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe("TNX_LINK_INVALID")
      }
    }
    for (const url of [
      base,
      withToken("garbage"),
      withToken(`${token}x`),
      withToken(token.replace("v1.", "v2.")),
    ]) {
      const res = await post(url, { decision: "approve" })
      expect(res.status).toBe(400)
      const page = await res.text()
      expect(page).not.toContain(SECRET)
      expect(page).not.toMatch(/at .*\.(ts|js):\d+/)
    }
    const expired = link(id, SECRET, 1)
    // Past the expiry the token carries (taking the time before signing could read a
    // millisecond early on a busy machine).
    const expiresAt = Number((new URL(expired).searchParams.get("token") as string).split(".")[2])
    while (Date.now() <= expiresAt) await new Promise((resolve) => setImmediate(resolve))
    for (const res of [await fetch(expired), await post(expired, { decision: "approve" }, asJson)]) {
      expect(res.status).toBe(410)
    }
    expect(await host.getDecision(id)).toBeUndefined()
    expect(runs).toEqual([])
  })

  it("approving a request after its expiresAt is a 410 TNX_ANSWER_EXPIRED with requestId and expiresAt", async () => {
    fake.enqueue({ toolCalls: [{ id: "c1", name: "quote", arguments: {} }] })
    await host.start("payer", "quote-1", "accept the quote")
    const result = (await host.result("quote-1", { timeoutMs: 10_000 })) as RunResult
    const id = result.pending?.id as string
    const res = await post(link(id), { decision: "approve" }, asJson)
    expect(res.status).toBe(410)
    expect(((await res.json()) as { error: unknown }).error).toMatchObject({
      code: "TNX_ANSWER_EXPIRED",
      requestId: id,
      expiresAt: "2000-01-01T00:00:00Z",
    })
    expect(runs).toEqual([])
  })

  it("rotation: links of every listed secret work, the first one's included", async () => {
    const old = await parked()
    const res = await post(link(old, OLD_SECRET), { decision: "approve" })
    expect(res.status).toBe(200)
    const fresh = await parked()
    expect((await post(link(fresh, SECRET), { decision: "approve" })).status).toBe(200)
    expect(runs).toHaveLength(2)
    // Once the old secret is dropped, its links stop working.
    const rotated = answerLinkHandler({ host, secrets: [SECRET] })
    const third = await parked()
    const refused = await rotated.fetch(new Request(link(third, OLD_SECRET)))
    expect(refused.status).toBe(403)
    const shown = await rotated.fetch(new Request(link(third, SECRET)))
    expect(shown.status).toBe(200)
  })

  it("a post from another origin, or not a form, is refused before anything is decided", async () => {
    const id = await parked()
    const url = link(id)
    const crossSite = await post(url, { decision: "approve" }, { origin: "https://evil.example" })
    expect(crossSite.status).toBe(403)
    const asJsonBody = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", origin },
      body: JSON.stringify({ decision: "approve" }),
    })
    expect(asJsonBody.status).toBe(415)
    expect((await post(url, { decision: "maybe" })).status).toBe(400)
    expect((await fetch(url, { method: "PUT" })).status).toBe(405)
    expect(await host.getDecision(id)).toBeUndefined()
    expect(runs).toEqual([])
  })

  it("a link to a request nobody holds is 404", async () => {
    const res = await fetch(link("pnd-nobody-holds-this"))
    expect(res.status).toBe(404)
    expect((await post(link("pnd-nobody-holds-this"), { decision: "approve" })).status).toBe(404)
  })
})

describe("createAnswerLink and answerLinkHandler refuse bad options", () => {
  const ok = { secret: SECRET, expiresInMs: 1000, baseUrl: "https://app.example.com/answer?x=1" }
  it("makes a URL on baseUrl, keeping its query, distinct per call", () => {
    const a = new URL(createAnswerLink("pnd-1", ok))
    expect(a.origin + a.pathname).toBe("https://app.example.com/answer")
    expect(a.searchParams.get("x")).toBe("1")
    expect(a.searchParams.get("token")).toMatch(/^v1\./)
    expect(createAnswerLink("pnd-1", ok)).not.toBe(a.href)
  })
  it.each([
    ["a short secret", "pnd-1", { ...ok, secret: "short" }, /secret/],
    ["a bad request id", "bad id!", ok, /requestId/],
    ["no expiry", "pnd-1", { ...ok, expiresInMs: 0 }, /expiresInMs/],
    ["a relative baseUrl", "pnd-1", { ...ok, baseUrl: "/answer" }, /baseUrl/],
  ])("%s ⇒ ConfigError", (_what, id, options, message) => {
    expect(() => createAnswerLink(id, options)).toThrow(message)
    expect(() => createAnswerLink(id, options)).toThrow(expect.objectContaining({ code: "TNX_CONFIG" }))
  })
  it("no secrets, or a short one ⇒ ConfigError", () => {
    const host = {} as RunHost
    expect(() => answerLinkHandler({ host, secrets: [] })).toThrow(/secrets/)
    expect(() => answerLinkHandler({ host, secrets: [SECRET, "short"] })).toThrow(/secrets\[1\]/)
  })
})
