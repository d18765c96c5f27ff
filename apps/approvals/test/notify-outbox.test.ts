import { type Server, createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest"
import { createWebhookOutbox } from "../src/notifier.js"
import { API_TOKEN, instance, startRun, useFakeModel } from "./support.js"

const { files, fake } = useFakeModel()
const SECRET = "notify-secret-0123456789abcdef"
const received: { type: string; requestId: string; expiresAt?: string }[] = []
/** The HTTP status the receiver answers next; 204 once these run out. */
let failWith: number[] = []
let receiver: Server
let url: string

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let raw = ""
    req.on("data", (chunk) => {
      raw += chunk
    })
    req.on("end", () => {
      received.push(JSON.parse(raw))
      res.statusCode = failWith.shift() ?? 204
      res.end()
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
  url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
})
afterAll(() => new Promise((resolve) => receiver.close(resolve)))
beforeEach(() => {
  received.length = 0
  failWith = []
})

const getJson = async (app: Awaited<ReturnType<typeof instance>>["app"], path: string) =>
  (await app.request(path, { headers: { authorization: `Bearer ${API_TOKEN}` } })).json() as Promise<any>
const getPage = async (app: Awaited<ReturnType<typeof instance>>["app"], path: string) =>
  (await app.request(path, { headers: { authorization: `Bearer ${API_TOKEN}`, accept: "text/html" } })).text()

/** Polls the request's JSON view until `done` holds (the first attempt runs after the answer). */
async function viewWhen(
  app: Awaited<ReturnType<typeof instance>>["app"],
  id: string,
  done: (view: any) => boolean,
) {
  for (let i = 0; i < 500; i++) {
    const view = await getJson(app, `/requests/${id}`)
    if (done(view)) return view
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error(`request ${id}: the notification state never got there`)
}

it("a failed request.pending is retried by the outbox's sweep; the API and the card show the attempts", async () => {
  let t = Date.now()
  const store = files.store()
  const errors: unknown[] = []
  const outbox = createWebhookOutbox(
    store,
    { url, secret: SECRET },
    { onError: (e) => errors.push(e), clock: { now: () => t } },
  )
  const { app } = await instance(fake(), store, { app: { notify: { url, secret: SECRET }, outbox } })
  failWith = [503]
  const run = await startRun(app, "refund order N-7 $4")
  const id = run.pending.id as string
  const failed = await viewWhen(app, id, (v) => v.notification?.lastError !== undefined)
  expect(failed.notification).toMatchObject({
    attempts: 1,
    lastError: expect.stringContaining("HTTP 503"),
    nextAttemptAt: new Date(t + 1_000).toISOString(),
  })
  expect(await getPage(app, `/requests/${id}`)).toContain("notification not delivered (1 attempt")
  expect(errors).toHaveLength(1)
  t += 1_000
  await outbox.sweep()
  const sent = await getJson(app, `/requests/${id}`)
  expect(sent.notification).toMatchObject({ attempts: 2, deliveredAt: expect.any(String) })
  expect(sent.notification.lastError).toBeUndefined()
  const listed = await getJson(app, "/requests")
  expect(listed.requests[0].notification.attempts).toBe(2)
  expect(await getPage(app, "/")).toContain("notified")
  expect(received.map((r) => [r.type, r.requestId])).toEqual([
    ["request.pending", id],
    ["request.pending", id],
  ])
  await outbox.sweep()
  expect(received).toHaveLength(2)
})

it("warnBeforeMs posts request.expiring once and the card says it expires soon", async () => {
  let t = Date.now()
  const store = files.store()
  const outbox = createWebhookOutbox(
    store,
    { url, secret: SECRET },
    { warnBeforeMs: 3_600_000, onError: () => undefined, clock: { now: () => t } },
  )
  const { app } = await instance(fake(), store, { app: { notify: { url, secret: SECRET }, outbox } })
  const run = await startRun(app, "refund order N-8 $4")
  const id = run.pending.id as string
  await viewWhen(app, id, (v) => v.notification?.deliveredAt !== undefined)
  await outbox.sweep()
  expect(await getPage(app, `/requests/${id}`)).not.toContain("expires soon")
  // The approval tools' requests expire after a day: half an hour before, the warning is due.
  t = Date.parse(run.pending.expiresAt) - 1_800_000
  await outbox.sweep()
  await outbox.sweep()
  expect(received.filter((r) => r.type === "request.expiring")).toEqual([
    expect.objectContaining({ requestId: id, expiresAt: run.pending.expiresAt }),
  ])
  const view = await getJson(app, `/requests/${id}`)
  expect(view.notification.expiring).toMatchObject({ warnedAt: new Date(t).toISOString(), attempts: 1 })
  expect(await getPage(app, `/requests/${id}`)).toContain(`<span class="expiring"`)
})
