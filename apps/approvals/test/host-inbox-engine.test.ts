import {
  AbortError,
  type Request,
  type RunHost,
  createClient,
  createToolkit,
  defineTool,
  hostAgent,
} from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { type StoreHost, createMemoryStore, createStoreHost } from "@toolnexus/durable"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createHostInbox } from "../src/host-inbox.js"
import { agentReply } from "./support.js"

// An engine's `result` resolves at the run's end only: the inbox learns a park from the run's
// `pending` event, and gives up its wait for the result then (it would otherwise stay open
// until the parked run ends, days later).

let llm: FakeLLMServer
beforeAll(async () => {
  llm = await createFakeLLMServer()
  llm.addRule({ match: /.*/, reply: agentReply })
})
afterAll(async () => {
  await llm.close()
})

/** A store host as an engine's connection looks to the inbox: no retries, `result` at the end only. */
async function engineLike() {
  const store = createMemoryStore()
  const refunds: string[] = []
  /** While set, `result` waits for the caller's signal only: a run whose replay is slow. */
  const slow = { on: false }
  const client = createClient({ baseUrl: `${llm.url}/v1`, style: "openai", model: "m", apiKey: "k", store })
  const refund = defineTool({
    name: "refund_order",
    description: "refunds an order",
    inputSchema: {
      type: "object",
      properties: { orderId: { type: "string" }, amountUsd: { type: "number" } },
    },
    needsApproval: true,
    run: (args: { orderId: string }) => {
      refunds.push(args.orderId)
      return `refunded ${args.orderId}`
    },
  })
  const toolkit = await createToolkit({ extraTools: [refund] })
  const inner = createStoreHost({
    store,
    agents: [hostAgent({ name: "approvals", client, toolkit })],
    sweepEveryMs: false,
  }) as StoreHost
  const { retry: _retry, listFailed: _listFailed, ...rest } = inner
  const waits: { released: boolean }[] = []
  const host: RunHost = {
    ...rest,
    async result(runId, opts) {
      const wait = { released: false }
      waits.push(wait)
      // An engine's wait ends as core's result wait does: aborted with the caller's signal.
      if (slow.on)
        return new Promise<never>((_resolve, reject) => {
          const stop = () => reject(new AbortError(`the wait for run ${runId} ended`))
          if (opts?.signal?.aborted) stop()
          else opts?.signal?.addEventListener("abort", stop)
        })
      const result = await inner.result(runId, opts)
      if (result.status !== "pending") return result
      return new Promise<never>((_resolve, reject) => {
        const release = () => {
          wait.released = true
          reject(new Error("released"))
        }
        if (opts?.signal?.aborted) release()
        else opts?.signal?.addEventListener("abort", release)
      })
    },
  }
  return { host, inner, waits, refunds, slow }
}

describe("the inbox over an engine's host", () => {
  it("a run that parks: its request is the outcome at once, and the result wait is released", async () => {
    const { host, inner, waits } = await engineLike()
    try {
      const inbox = createHostInbox({ host, agent: "approvals", settleMs: 20_000 })
      const started = await inbox.startRun("refund order A-7 for $12", { team: false })
      expect(started.result.status).toBe("pending")
      const request = started.result.pending
      expect(request?.id).toBeDefined()
      expect((await inbox.findRequest(request?.id as string))?.request.id).toBe(request?.id)
      expect(waits.map((w) => w.released)).toEqual([true])

      const done = await inbox.deliver({ id: request?.id as string, ok: true })
      expect(done.result).toMatchObject({ status: "done", text: "Done: refunded A-7" })
      expect(waits.map((w) => w.released)).toEqual([true, false])
    } finally {
      await inner.close()
    }
  })

  it("an answer whose run has not settled in settleMs: 504 run_pending, the decision stands, a retry is refused naming it, one refund", async () => {
    const { host, inner, refunds, slow } = await engineLike()
    try {
      const started = await createHostInbox({ host, agent: "approvals" }).startRun(
        "refund order A-9 for $3",
        {
          team: false,
        },
      )
      const request = started.result.pending as Request
      // The run settles no sooner than the inbox stops waiting (an engine replaying after a restart).
      slow.on = true
      const impatient = createHostInbox({ host, agent: "approvals", settleMs: 1 })
      await expect(impatient.deliver({ id: request.id, ok: true })).rejects.toMatchObject({
        status: 504,
        code: "run_pending",
      })
      // Accepted: the decision is recorded and nothing waits on the request any more.
      expect(await host.getDecision(request.id)).toEqual({ ok: true })
      expect(await impatient.findRequest(request.id)).toBeUndefined()
      // A retried answer is refused with the decision that stands (its own), and runs nothing.
      await expect(impatient.deliver({ id: request.id, ok: true })).rejects.toMatchObject({
        code: "TNX_ANSWER_CONFLICT",
        decision: { ok: true },
      })
      slow.on = false
      // The run's end is the host's to tell.
      expect(await host.result((started as { id: string }).id, { timeoutMs: 10_000 })).toMatchObject({
        status: "done",
        text: "Done: refunded A-9",
      })
      expect(refunds).toEqual(["A-9"])
    } finally {
      await inner.close()
    }
  })
})
