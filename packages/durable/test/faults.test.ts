import { createRuntime } from "@toolnexus/agents"
import {
  type Answer,
  AnswerConflictError,
  AnswerExpiredError,
  AnswerInvalidError,
  type Request,
  UnknownRequestError,
  createClient,
  createToolkit,
  defineTool,
  pending,
} from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { ClaimLostError } from "../src/errors.js"
import { askWithAnswer } from "../src/resume/ask-with-answer.js"
import { deliverAnswer, retryFailed, sweepExpiredRequests } from "../src/resume/deliver-answer.js"
import { resumeRuntime } from "../src/resume/runtime-persistence.js"
import { SqliteStore } from "../src/sqlite/index.js"

// Issue 9: durable under faults, in-process on SQLite (the crash-point kit covers processes).
let server: FakeLLMServer
beforeAll(async () => {
  server = await createFakeLLMServer()
})
beforeEach(() => server.reset())
afterAll(() => server.close())

const runs: (Answer | undefined)[] = []
function payTool(expiresAt?: string) {
  return defineTool({
    name: "pay",
    description: "pays after approval",
    inputSchema: { type: "object", properties: { amount: { type: "number" } } },
    run: ({ amount }, ctx) => {
      runs.push(ctx.answer)
      if (!ctx.answer)
        return pending({ kind: "approval", prompt: `Pay ${amount}?`, ...(expiresAt ? { expiresAt } : {}) })
      return ctx.answer.ok ? `paid ${amount}` : `not paid (${ctx.answer.reason ?? "declined"})`
    },
  })
}

async function parked(opts: { expiresAt?: string } = {}) {
  // Short deadlines and leases keep the suite fast; the margins below hold on a loaded machine.
  const store = new SqliteStore({ path: ":memory:", opTimeoutMs: 100 })
  const client = createClient({
    baseUrl: `${server.url}/v1`,
    style: "openai",
    model: "m",
    apiKey: "k",
    store,
    retries: 0,
  })
  const toolkit = await createToolkit({ extraTools: [payTool(opts.expiresAt)] })
  runs.length = 0
  server.enqueue({ toolCalls: [{ name: "pay", arguments: { amount: 5 } }] })
  const halted = await client.ask("pay 5", { id: "c", toolkit })
  return { store, client, toolkit, request: halted.pending as Request }
}

describe("attempts and retryFailed", () => {
  it("a poison run fails after maxAttempts with the tool run once; retryFailed completes it", async () => {
    const { store, client, toolkit, request } = await parked()
    server.addRule({
      match: (r) => r.toolResults.length > 0,
      reply: { status: 400, text: "bad request" },
      times: 3,
    })
    for (let attempt = 1; attempt <= 3; attempt++) {
      const failed = deliverAnswer(store, { id: request.id, ok: true }, { client, toolkit })
      await expect(failed).rejects.toMatchObject({ code: "TNX_LLM_HTTP" })
    }
    // The tool ran once: later attempts resumed from its checkpointed result.
    expect(runs.map((a) => a?.ok ?? null)).toEqual([null, true])
    const [failed] = await store.listFailed()
    expect(failed).toMatchObject({
      state: "failed",
      attempts: 3,
      lastError: { name: "LLMHttpError", code: "TNX_LLM_HTTP" },
    })
    await expect(
      deliverAnswer(store, { id: request.id, ok: false }, { client, toolkit }),
    ).rejects.toBeInstanceOf(AnswerConflictError)

    server.enqueue({ text: "paid, done" })
    const retried = await retryFailed(store, request.id, { client, toolkit })
    expect(retried).toMatchObject({
      kind: "conversation",
      id: "c",
      result: { status: "done", text: "paid, done" },
    })
    expect(runs.map((a) => a?.ok ?? null)).toEqual([null, true])
    expect(await store.getDecision(request.id)).toEqual({ ok: true })
    await expect(retryFailed(store, request.id, { client, toolkit })).rejects.toBeInstanceOf(
      AnswerConflictError,
    )
    await expect(retryFailed(store, "pnd-unknown", { client, toolkit })).rejects.toBeInstanceOf(
      UnknownRequestError,
    )
    await store.close()
  })
})

describe("heartbeat", () => {
  it("renews the claim while a slow model outlasts the lease; a delivery meanwhile is refused", async () => {
    const { store, client, toolkit, request } = await parked()
    server.enqueue({ text: "slow but done", delayMs: 2_000 })
    const slow = askWithAnswer(client, {
      id: "c",
      answer: { id: request.id, ok: true },
      toolkit,
      leaseMs: 600,
    })
    await new Promise((r) => setTimeout(r, 1_300))
    await expect(
      askWithAnswer(client, { id: "c", answer: { id: request.id, ok: true }, toolkit }),
    ).rejects.toBeInstanceOf(AnswerConflictError)
    expect((await slow).text).toBe("slow but done")
    expect(runs.filter(Boolean)).toHaveLength(1)
    await store.close()
  })

  it("aborts the resume, before any further tool or LLM call, when a renewal finds the claim lost", async () => {
    const { store, client, toolkit, request } = await parked()
    server.enqueue({ text: "never seen", delayMs: 5_000 })
    // The store answers that the claim is no longer held (taken over, or released).
    store.renewClaim = async () => false
    const started = Date.now()
    const lost = await askWithAnswer(client, {
      id: "c",
      answer: { id: request.id, ok: true },
      toolkit,
      leaseMs: 300,
    }).catch((e: unknown) => e)
    expect(lost).toBeInstanceOf(ClaimLostError)
    expect(Date.now() - started).toBeLessThan(3_500) // the in-flight model call was aborted
    expect(server.requests).toHaveLength(2) // the halt, then the one in flight; nothing after
    expect(runs.filter(Boolean)).toHaveLength(1)
    // Nothing was consumed: the decision waits with the claim for the next delivery.
    expect(await store.getDecision(request.id)).toBeUndefined()
    expect(await store.getPending("c")).toEqual(request)
    await store.close()
  })
})

describe("expiry", () => {
  it("ok:true after expiresAt is AnswerExpiredError; ok:false is accepted; sweepExpiredRequests declines open ones", async () => {
    const past = new Date(Date.now() - 1_000).toISOString()
    const { store, client, toolkit, request } = await parked({ expiresAt: past })
    await expect(
      deliverAnswer(store, { id: request.id, ok: true }, { client, toolkit }),
    ).rejects.toBeInstanceOf(AnswerExpiredError)
    expect(await store.findRequest(request.id)).toMatchObject({ state: "open", attempts: 0 })
    server.enqueue({ text: "the approval expired" })
    const swept = await sweepExpiredRequests(store, { client, toolkit })
    expect(swept.failed).toEqual([])
    expect(swept.completed).toMatchObject([
      { kind: "conversation", id: "c", result: { text: "the approval expired" } },
    ])
    expect(await store.getDecision(request.id)).toEqual({ ok: false, reason: "expired" })
    expect(server.requests.at(-1)?.toolResults[0]?.content).toBe("declined: Pay 5? (expired)")
    expect(await sweepExpiredRequests(store, { client, toolkit })).toEqual({ completed: [], failed: [] })
    await store.close()
  })

  it("a request that expires while claimed is honoured when the resume ends", async () => {
    const soon = new Date(Date.now() + 1_500).toISOString()
    const { store, client, toolkit, request } = await parked({ expiresAt: soon })
    server.enqueue({ text: "paid in time", delayMs: 2_000 })
    const result = await askWithAnswer(client, {
      id: "c",
      answer: { id: request.id, ok: true },
      toolkit,
      leaseMs: 600,
    })
    expect(Date.parse(soon)).toBeLessThan(Date.now()) // it did expire while claimed
    expect(result.text).toBe("paid in time")
    expect(await store.getDecision(request.id)).toEqual({ ok: true })
    await store.close()
  })
})

describe("answers are validated at every entry point (AnswerInvalidError, nothing changed)", () => {
  it.each([
    ["null", null],
    ["data not a plain object", { ok: true, data: [1] }],
    ["reason not a string", { ok: false, reason: 42 }],
    ["ok not a boolean", { ok: "yes" }],
  ])("%s", async (_label, shape) => {
    const { store, client, toolkit, request } = await parked()
    const answer = (shape === null ? null : { id: request.id, ...shape }) as unknown as Answer
    const rt = createRuntime({ registry: {}, store })
    const entries = {
      askWithAnswer: () => askWithAnswer(client, { id: "c", answer, toolkit }),
      deliverAnswer: () => deliverAnswer(store, answer, { client, toolkit }),
      resumeRuntime: () => resumeRuntime(store, "rt", answer, { registry: {} }),
      claimAnswer: () => store.claimAnswer("c", answer),
      "Runtime.resume": () => rt.resume(answer),
      continueRun: () => client.continueRun({ id: "c", answer, toolkit }),
    }
    for (const [name, entry] of Object.entries(entries)) {
      const error = await entry().catch((e: unknown) => e)
      expect([name, AnswerInvalidError.isInstance(error)]).toEqual([name, true])
    }
    expect(await store.findRequest(request.id)).toMatchObject({ state: "open", attempts: 0 })
    expect(runs).toHaveLength(1)
    await store.close()
  })
})
