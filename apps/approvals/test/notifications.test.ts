import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, expect, it } from "vitest"
import { readFileSync } from "node:fs"
import { verifyToolnexusSignature } from "../examples/verify-signature.js"
import { instance, postJson, startRun, useFakeModel } from "./support.js"

const { files, fake } = useFakeModel()
const SECRET = "notify-secret-0123456789abcdef"
const received: { verified: boolean; body: any }[] = []
let receiver: Server
let url: string

beforeAll(async () => {
  // A receiver as the README describes it: verify the raw body's signature, then parse.
  receiver = createServer((req, res) => {
    let raw = ""
    req.on("data", (chunk) => {
      raw += chunk
    })
    req.on("end", () => {
      const verified = verifyToolnexusSignature(
        SECRET,
        req.headers["x-toolnexus-signature"] as string | undefined,
        raw,
      )
      received.push({ verified, body: JSON.parse(raw) })
      res.statusCode = verified ? 204 : 401
      res.end()
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
  url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
})
afterAll(() => new Promise((resolve) => receiver.close(resolve)))

async function until(count: number): Promise<void> {
  for (let i = 0; i < 200 && received.length < count; i++) await new Promise((r) => setTimeout(r, 10))
}

it("posts a signed notification when a run parks and when its request is answered", async () => {
  const { app, errors } = await instance(fake(), files.store(), { app: { notify: { url, secret: SECRET } } })
  const run = await startRun(app, "refund order N-1 $4 and email them")
  await until(1)
  expect(received[0]).toEqual({
    verified: true,
    body: {
      type: "request.pending",
      requestId: run.pending.id,
      runId: run.id,
      kind: "approval",
      prompt: "Refund $4.00 on order N-1?",
      tool: "refund_order",
      at: expect.any(String),
    },
  })
  const next = await (
    await postJson(app, `/requests/${run.pending.id}/answer`, { ok: false, reason: "no" })
  ).json()
  await until(3)
  // Two deliveries in flight at once may arrive in either order.
  const later = received.slice(1).map((r) => r.body)
  expect(later.map((b) => b.type).sort()).toEqual(["request.answered", "request.pending"])
  expect(later.find((b) => b.type === "request.answered")).toMatchObject({
    requestId: run.pending.id,
    answeredBy: "ci",
    ok: false,
    reason: "no",
    outcome: "pending",
  })
  expect(later.find((b) => b.type === "request.pending")?.requestId).toBe((next as any).pending.id)
  expect(received.every((r) => r.verified)).toBe(true)
  expect(errors).toEqual([])
})

it("a receiver that is down never fails the answer; the failure is reported", async () => {
  const { app, errors } = await instance(fake(), files.store(), {
    app: { notify: { url: "http://127.0.0.1:9/nowhere", secret: SECRET, timeoutMs: 500 } },
  })
  const run = await startRun(app, "refund order N-2 $4")
  expect(run.status).toBe("pending")
  for (let i = 0; i < 100 && errors.length === 0; i++) await new Promise((r) => setTimeout(r, 10))
  expect(errors).toHaveLength(1)
})

it("the README shows the receiver code this test runs, verbatim", () => {
  const example = readFileSync(new URL("../examples/verify-signature.ts", import.meta.url), "utf8")
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8")
  expect(readme).toContain(example.trim())
})

it("the example refuses a wrong secret, an altered body and an old timestamp", async () => {
  const { signBody } = await import("../src/security/webhook-signature.js")
  const body = '{"type":"request.pending"}'
  expect(verifyToolnexusSignature(SECRET, signBody(SECRET, body), body)).toBe(true)
  expect(verifyToolnexusSignature("another-secret-0123456789", signBody(SECRET, body), body)).toBe(false)
  expect(verifyToolnexusSignature(SECRET, signBody(SECRET, body), `${body} `)).toBe(false)
  expect(verifyToolnexusSignature(SECRET, signBody(SECRET, body, Date.now() - 600_000), body)).toBe(false)
  expect(verifyToolnexusSignature(SECRET, undefined, body)).toBe(false)
})
