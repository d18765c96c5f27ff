import { randomUUID } from "node:crypto"
import {
  type Answer,
  AnswerConflictError,
  AnswerExpiredError,
  AnswerMismatchError,
  type Request,
  type ToolContext,
  createClient,
  createToolkit,
  defineTool,
  pending,
} from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import type { DurableStore } from "../src/durable-store.js"
import { askWithAnswer } from "../src/resume/ask-with-answer.js"
import { sweepExpiredClaims } from "../src/resume/deliver-answer.js"
import { runWithAnswer } from "../src/resume/run-with-answer.js"

/** How a backend opens a store; two opens reach the same data, like two processes. */
export interface ResumeBackend {
  skip?: string
  /** `opTimeoutMs` overrides the backend's short deadline, for a test that races on a busy machine. */
  open(extra?: { opTimeoutMs?: number }): Promise<DurableStore>
}

/**
 * Opens stores on `backend` for one suite, each closed after the suite: call it inside the
 * suite's `describe`.
 */
export function storesOf(
  backend: ResumeBackend,
): (extra?: { opTimeoutMs?: number }) => Promise<DurableStore> {
  const stores: DurableStore[] = []
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()))
  })
  return async (extra) => {
    const store = await backend.open(extra)
    stores.push(store)
    return store
  }
}

const STYLES = ["openai", "anthropic"] as const

/** The durable resume scenarios, written once and run against every backend. */
export function describeResumeSuite(name: string, backend: ResumeBackend): void {
  describe.skipIf(backend.skip !== undefined)(`durable resume on ${name}`, () => {
    let server: FakeLLMServer
    const open = storesOf(backend)
    beforeAll(async () => {
      server = await createFakeLLMServer()
    })
    beforeEach(() => server.reset())
    afterAll(async () => {
      await server?.close()
    })

    /** A payment tool recording the context of every execution. */
    function paymentKit(seen: ToolContext[]) {
      const pay = defineTool({
        name: "pay",
        description: "pay",
        inputSchema: { type: "object", properties: { amount: { type: "number" } } },
        run: ({ amount }, ctx) => {
          seen.push(ctx)
          if (!ctx.answer) return pending({ kind: "approval", prompt: `Pay ${amount}?` })
          return ctx.answer.ok ? `paid ${amount}` : "not paid"
        },
      })
      return createToolkit({ extraTools: [pay] })
    }

    for (const style of STYLES) {
      const clientOn = (store?: DurableStore) =>
        createClient({
          baseUrl: style === "openai" ? `${server.url}/v1` : server.url,
          style,
          model: "m",
          apiKey: "k",
          retryBaseMs: 1,
          retries: 0,
          ...(store ? { store } : {}),
        })
      const haltReply = { toolCalls: [{ name: "pay", arguments: { amount: 5 } }] }
      const finalReply = (req: { toolResults: { content: string }[] }) => ({
        text: `final: ${req.toolResults[0]?.content}`,
      })

      it(`[${style}] ask halts → askWithAnswer from another store instance → the store holds the balanced transcript`, async () => {
        const id = `conv-${randomUUID()}`
        const seen: ToolContext[] = []
        server.enqueue(haltReply, finalReply)
        const halted = await clientOn(await open()).ask("pay 5", { id, toolkit: await paymentKit(seen) })
        expect(halted.status).toBe("pending")

        const other = await open()
        const req = (await other.getPending(id)) as Request
        expect(req).toEqual(halted.pending)
        expect(
          (await other.listPending()).some((p) => p.conversationId === id && p.request.id === req.id),
        ).toBe(true)
        const result = await askWithAnswer(clientOn(other), {
          id,
          answer: { id: req.id, ok: true },
          toolkit: await paymentKit(seen),
        })
        expect(result).toMatchObject({ status: "done", text: "final: paid 5" })
        expect(seen.map((c) => c.answer?.ok)).toEqual([undefined, true])
        expect(seen[1]?.idempotencyKey).toBe(seen[0]?.idempotencyKey)
        expect(await other.getPending(id)).toBeUndefined()
        const stored = (await (await open()).get(id)) ?? []
        expect(stored).toEqual(result.messages)
        expect(server.requests).toHaveLength(2)
        // A redelivery of the same answer is refused: it was applied once.
        await expect(
          askWithAnswer(clientOn(other), { id, answer: { id: req.id, ok: true } }),
        ).rejects.toThrow(AnswerConflictError)
      })

      it(`[${style}] re-answering a request after the run moved on to a new one is a conflict`, async () => {
        const id = `moved-${randomUUID()}`
        const seen: ToolContext[] = []
        server.enqueue(haltReply, haltReply)
        const store = await open()
        const first = await clientOn(store).ask("pay", { id, toolkit: await paymentKit(seen) })
        const oldRequest = first.pending as Request
        const second = await askWithAnswer(clientOn(store), {
          id,
          answer: { id: oldRequest.id, ok: true },
          toolkit: await paymentKit(seen),
        })
        expect(second.status).toBe("pending")
        expect(second.pending?.id).not.toBe(oldRequest.id)
        await expect(
          askWithAnswer(clientOn(store), { id, answer: { id: oldRequest.id, ok: true } }),
        ).rejects.toThrow(AnswerConflictError)
        await expect(
          askWithAnswer(clientOn(store), { id, answer: { id: "pnd-never", ok: true } }),
        ).rejects.toThrow(AnswerMismatchError)
      })

      it(`[${style}] runWithAnswer on a fresh client after JSON round trip; a mismatched id is refused first`, async () => {
        const seen: ToolContext[] = []
        server.enqueue(haltReply, finalReply)
        const halted = await clientOn().run("pay 5", { toolkit: await paymentKit(seen) })
        const saved = JSON.parse(JSON.stringify({ history: halted.messages, pending: halted.pending })) as {
          history: typeof halted.messages
          pending: Request
        }
        const toolkit = await paymentKit(seen)
        await expect(
          runWithAnswer(clientOn(), { ...saved, toolkit, answer: { id: "pnd-other", ok: true } }),
        ).rejects.toThrow(AnswerMismatchError)
        expect(seen).toHaveLength(1)
        const result = await runWithAnswer(clientOn(), {
          ...saved,
          toolkit,
          answer: { id: saved.pending.id, ok: true },
        })
        expect(result.text).toBe("final: paid 5")
      })

      it(`[${style}] two deliveries at the same moment: exactly one resumes`, async () => {
        const id = `race-${randomUUID()}`
        const seen: ToolContext[] = []
        server.enqueue(haltReply)
        const halted = await clientOn(await open()).ask("pay", { id, toolkit: await paymentKit(seen) })
        server.addRule({ match: () => true, reply: (req) => ({ ...finalReply(req), delayMs: 20 }) })
        const answer: Answer = { id: (halted.pending as Request).id, ok: true }
        const [a, b] = await Promise.allSettled([
          askWithAnswer(clientOn(await open()), { id, answer, toolkit: await paymentKit(seen) }),
          askWithAnswer(clientOn(await open()), { id, answer, toolkit: await paymentKit(seen) }),
        ])
        const outcomes = [a, b].map((o) => o.status)
        expect(outcomes.sort()).toEqual(["fulfilled", "rejected"])
        const rejected = [a, b].find((o) => o.status === "rejected") as PromiseRejectedResult
        expect(rejected.reason).toBeInstanceOf(AnswerConflictError)
        expect(seen.filter((c) => c.answer)).toHaveLength(1)
        expect(server.requests).toHaveLength(2)
      })

      it(`[${style}] a worker that dies after claiming: the lease expires and another completes with the stored answer`, async () => {
        const id = `dead-${randomUUID()}`
        const seen: ToolContext[] = []
        server.enqueue(haltReply)
        const halted = await clientOn(await open()).ask("pay", { id, toolkit: await paymentKit(seen) })
        const req = halted.pending as Request
        // The "dead" worker claimed with the user's approval and never saved.
        const dead = await open()
        // The lease leaves room for the refused delivery below even on a busy machine.
        await dead.claimAnswer(id, { id: req.id, ok: true }, { leaseMs: 1000 })
        await expect(
          askWithAnswer(clientOn(await open()), { id, answer: { id: req.id, ok: true } }),
        ).rejects.toThrow(AnswerConflictError)
        await new Promise((r) => setTimeout(r, 1100))
        server.enqueue(finalReply)
        const sweeping = await open()
        const swept = await sweepExpiredClaims(sweeping, {
          client: clientOn(sweeping),
          toolkit: await paymentKit(seen),
        })
        const mine = swept.completed.find((c) => c.kind === "conversation" && c.id === id)
        expect(mine?.kind === "conversation" && mine.result.text).toBe("final: paid 5")
        expect(seen.map((c) => c.answer?.ok)).toEqual([undefined, true])
        expect(await (await open()).getPending(id)).toBeUndefined()
      })

      it(`[${style}] a failed resume releases the claim; the next delivery applies the stored answer`, async () => {
        const id = `fail-${randomUUID()}`
        const seen: ToolContext[] = []
        server.enqueue(haltReply)
        const store = await open()
        const halted = await clientOn(store).ask("pay", { id, toolkit: await paymentKit(seen) })
        const req = halted.pending as Request
        server.enqueue({ status: 400, text: "bad request" })
        await expect(
          askWithAnswer(clientOn(store), {
            id,
            answer: { id: req.id, ok: true },
            toolkit: await paymentKit(seen),
          }),
        ).rejects.toThrow(/HTTP 400/)
        expect(await store.getPending(id)).toEqual(req)
        server.enqueue(finalReply)
        // The user clicks again, this time "decline": the first decision, stored with the claim, wins.
        const result = await askWithAnswer(clientOn(store), {
          id,
          answer: { id: req.id, ok: false },
          toolkit: await paymentKit(seen),
        })
        expect(result.text).toBe("final: paid 5")
      })

      it(`[${style}] an ok answer after expiresAt is refused and nothing is claimed`, async () => {
        const id = `exp-${randomUUID()}`
        const expiring = defineTool({
          name: "pay",
          description: "pay",
          inputSchema: { type: "object" },
          run: (_a, ctx) =>
            ctx.answer
              ? `answered ${ctx.answer.reason ?? "ok"}`
              : pending({ kind: "approval", prompt: "Pay?", expiresAt: "2001-01-01T00:00:00Z" }),
        })
        const toolkit = await createToolkit({ extraTools: [expiring] })
        server.enqueue(haltReply)
        const store = await open()
        const halted = await clientOn(store).ask("pay", { id, toolkit })
        const req = halted.pending as Request
        await expect(
          askWithAnswer(clientOn(store), { id, toolkit, answer: { id: req.id, ok: true } }),
        ).rejects.toThrow(AnswerExpiredError)
        server.enqueue(finalReply)
        const result = await askWithAnswer(clientOn(store), {
          id,
          toolkit,
          answer: { id: req.id, ok: false, reason: "expired" },
        })
        expect(result.text).toBe("final: declined: Pay? (expired)")
      })
    }
  })
}
