import { randomUUID } from "node:crypto"
import {
  type ExpiringEvent,
  type NotifyInfo,
  type PendingEntry,
  type RunResult,
  createClient,
  createToolkit,
  defineTool,
  hostAgent,
  pending,
} from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { type DurableStore, type StoreHostOptions, createStoreHost } from "../src/index.js"

export interface GrantsDeliverySuite {
  skip?: string | undefined
  /** A fresh store; two calls may share the data (two processes over one database). */
  store: () => Promise<DurableStore>
  closeStore?: (store: DurableStore) => Promise<void>
}

/** §19's grants and delivery on one backend. */
export function describeGrantsAndDelivery(name: string, suite: GrantsDeliverySuite): void {
  describe.skipIf(suite.skip !== undefined)(`grants and notifications on ${name}`, () => {
    let server: FakeLLMServer
    const stores: DurableStore[] = []
    beforeAll(async () => {
      server = await createFakeLLMServer()
    })
    beforeEach(() => server.reset())
    afterAll(async () => {
      for (const store of stores) await suite.closeStore?.(store)
      await server?.close()
    })

    const ran: number[] = []
    const pay = defineTool({
      name: "pay",
      description: "pays",
      inputSchema: { type: "object", properties: { amount: { type: "number" } }, required: ["amount"] },
      needsApproval: true,
      run: ({ amount }) => {
        ran.push(amount as number)
        return `paid ${amount}`
      },
    })
    const EXPIRES = "2099-01-01T00:00:00.000Z"
    const slow = defineTool({
      name: "slow",
      description: "asks with a deadline",
      inputSchema: { type: "object", properties: {} },
      run: (_args, ctx) =>
        ctx.answer ? "answered" : pending({ kind: "approval", prompt: "Slow?", expiresAt: EXPIRES }),
    })

    async function setup(extra: Partial<StoreHostOptions> = {}, shared?: DurableStore) {
      const store = shared ?? (await suite.store())
      if (!shared) stores.push(store)
      const client = createClient({
        baseUrl: `${server.url}/v1`,
        style: "openai",
        model: "m",
        apiKey: "k",
        store,
      })
      const toolkit = await createToolkit({ extraTools: [pay, slow] })
      const host = createStoreHost({
        store,
        agents: [
          hostAgent({ name: "payer", client, toolkit }),
          hostAgent({
            name: "tree",
            runtime: {
              root: "payer",
              registry: { payer: { name: "payer", does: "pays", soul: "payer", tools: [pay] } },
              llm: { baseUrl: `${server.url}/v1`, style: "openai", model: "m", apiKey: "k" },
            },
          }),
        ],
        sweepEveryMs: false,
        ...extra,
      })
      return { store, host }
    }
    const call = (amount: number) => ({ toolCalls: [{ name: "pay", arguments: { amount } }] })
    const parkedOn = async (host: Awaited<ReturnType<typeof setup>>["host"], runId: string) => {
      const result = (await host.result(runId, { timeoutMs: 20_000 })) as RunResult
      expect(result.status).toBe("pending")
      return result.pending?.id as string
    }

    it("remember: conversation covers later calls there, recorded as granted; list and revoke", async () => {
      const { host } = await setup()
      const run = `conv-${randomUUID()}`
      const other = `other-${randomUUID()}`
      try {
        server.enqueue(call(5))
        await host.start("payer", run, "pay 5")
        const requestId = await parkedOn(host, run)
        ran.length = 0
        // The resumed run calls pay again at once: the grant covers it, nobody is asked.
        server.enqueue(call(7), { text: "paid both" })
        await host.deliverAnswer({ id: requestId, ok: true, data: { remember: "conversation" } })
        const done = (await host.result(run)) as RunResult
        expect(done.status).toBe("done")
        expect(ran).toEqual([5, 7])
        const grantId = `grant-${requestId}`
        expect(done.toolCalls.at(-1)?.metadata?.approval).toEqual({
          decision: "granted",
          by: "grant",
          grantId,
          grantedBy: requestId,
        })
        expect(await host.listGrants()).toEqual([
          expect.objectContaining({ id: grantId, tool: "pay", scope: "conversation", conversationId: run }),
        ])
        expect(await host.listGrants({ conversationId: other })).toEqual([])
        // Another conversation is not covered.
        server.enqueue(call(9))
        await host.start("payer", other, "pay 9")
        await parkedOn(host, other)
        // Revoked: the conversation asks again.
        expect(await host.revokeGrant(grantId)).toBe(true)
        expect(await host.revokeGrant(grantId)).toBe(false)
        expect(await host.listGrants()).toEqual([])
        server.enqueue(call(11))
        await host.send(run, "pay 11")
        await parkedOn(host, run)
        expect(ran).toEqual([5, 7])
      } finally {
        await host.close()
      }
    })

    it("remember: principal covers the principal's runs; an explicit decline still wins", async () => {
      const { host } = await setup()
      const alice = `alice-${randomUUID()}`
      // Run ids scoped by user, with a `/` (a chat door's `ada/chat-1`): the principal is the run's.
      const [a1, a2, a3, b1] = ["a1", "a2", "a3", "b1"].map((r) => `${r}/chat-${randomUUID()}`) as string[]
      try {
        server.enqueue(call(1), call(2), call(3))
        await host.start("payer", a1 as string, "pay 1", { principal: alice })
        const first = await parkedOn(host, a1 as string)
        await host.start("payer", a2 as string, "pay 2", { principal: alice })
        const second = await parkedOn(host, a2 as string)
        await host.start("payer", b1 as string, "pay 3", { principal: "bob" })
        await parkedOn(host, b1 as string)
        ran.length = 0
        // Bad remembers decide nothing.
        await expect(
          host.deliverAnswer({ id: second, ok: true, data: { remember: "forever" } }),
        ).rejects.toMatchObject({ code: "TNX_ANSWER_INVALID" })
        server.enqueue({ text: "ok" })
        await host.deliverAnswer({ id: second, ok: true, data: { remember: "principal" } })
        expect(await host.listGrants({ principal: alice })).toEqual([
          expect.objectContaining({ tool: "pay", scope: "principal", principal: alice, grantedBy: second }),
        ])
        // a1 asked before the grant: its explicit decline is what happens.
        server.enqueue({ text: "not paid" })
        await host.deliverAnswer({ id: first, ok: false, reason: "no" })
        const declined = (await host.result(a1 as string)) as RunResult
        expect(declined.toolCalls[0]?.output).toContain("declined")
        expect(ran).toEqual([2])
        // A new run of alice's runs without asking; bob's still asks.
        server.enqueue(call(4), { text: "paid 4" })
        await host.start("payer", a3 as string, "pay 4", { principal: alice })
        expect(((await host.result(a3 as string)) as RunResult).status).toBe("done")
        expect(ran).toEqual([2, 4])
        expect(await host.findRequest((await host.listPending())[0]?.request.id as string)).toMatchObject({
          conversationId: b1,
        })
      } finally {
        await host.close()
      }
    })

    it("a runtime tree: a principal grant covers the handles of the principal's later runs", async () => {
      const { host } = await setup()
      const bob = `bob-${randomUUID()}`
      const [t1, t2] = ["t1", "t2"].map((r) => `${r}-${randomUUID()}`) as string[]
      try {
        server.enqueue(call(21))
        await host.start("tree", t1 as string, "pay 21", { principal: bob })
        const parked = (await host.result(t1 as string, { timeoutMs: 20_000 })) as { status: string }
        expect(parked.status).toBe("pending")
        const [entry] = await host.listPending()
        expect(entry).toMatchObject({ runtimeKey: t1, conversationId: `${t1}/root/payer.1` })
        ran.length = 0
        server.enqueue({ text: "paid" })
        await host.deliverAnswer({
          id: entry?.request.id as string,
          ok: true,
          data: { remember: "principal" },
        })
        expect(ran).toEqual([21])
        server.enqueue(call(22), { text: "paid again" })
        await host.start("tree", t2 as string, "pay 22", { principal: bob })
        expect(((await host.result(t2 as string, { timeoutMs: 20_000 })) as { status: string }).status).toBe(
          "done",
        )
        expect(ran).toEqual([21, 22])
      } finally {
        await host.close()
      }
    })

    it("remember: principal on a run started without one is refused; nothing is decided", async () => {
      const { host } = await setup()
      const run = `np-${randomUUID()}`
      try {
        server.enqueue(call(1))
        await host.start("payer", run, "pay 1")
        const requestId = await parkedOn(host, run)
        await expect(
          host.deliverAnswer({ id: requestId, ok: true, data: { remember: "principal" } }),
        ).rejects.toMatchObject({ code: "TNX_ANSWER_INVALID" })
        expect(await host.getDecision(requestId)).toBeUndefined()
        expect(await host.listGrants()).toEqual([])
      } finally {
        await host.close()
      }
    })

    it("notify is retried with backoff until it resolves, attempts recorded, never again after", async () => {
      let t = Date.parse("2030-01-01T00:00:00Z")
      const calls: NotifyInfo[] = []
      let failures = 2
      const notify = async (_entry: PendingEntry, info: NotifyInfo) => {
        calls.push(info)
        if (failures-- > 0) throw new Error(`mail server down (${info.attempt})`)
      }
      const errors: string[] = []
      const logger = { info: () => undefined, error: (m: string) => errors.push(m) }
      const { host, store } = await setup({ notify, clock: { now: () => t }, logger })
      const run = `n-${randomUUID()}`
      try {
        server.enqueue(call(1))
        await host.start("payer", run, "pay 1")
        const requestId = await parkedOn(host, run)
        expect(calls).toEqual([{ kind: "new", attempt: 1 }])
        expect(await host.getDelivery(requestId)).toEqual({
          requestId,
          attempts: 1,
          lastAttemptAt: new Date(t).toISOString(),
          lastError: "mail server down (1)",
          nextAttemptAt: new Date(t + 1_000).toISOString(),
        })
        await host.sweep() // not due yet
        expect(calls).toHaveLength(1)
        t += 1_000
        await host.sweep()
        expect(calls).toHaveLength(2)
        expect((await host.getDelivery(requestId))?.nextAttemptAt).toBe(new Date(t + 2_000).toISOString())
        t += 2_000
        await host.sweep()
        expect(calls.map((c) => c.attempt)).toEqual([1, 2, 3])
        const delivered = await host.getDelivery(requestId)
        expect(delivered).toMatchObject({ attempts: 3, deliveredAt: new Date(t).toISOString() })
        expect(delivered?.lastError).toBeUndefined()
        t += 600_000
        await host.sweep()
        // Another host on the same store sends nothing again either.
        const again = await setup({ notify, clock: { now: () => t } }, store)
        await again.host.sweep()
        await again.host.close()
        expect(calls).toHaveLength(3)
        expect(errors).toHaveLength(2)
      } finally {
        await host.close()
      }
    })

    it("a host started over a store with an unnotified request sends it at once", async () => {
      const { host, store } = await setup()
      const run = `quiet-${randomUUID()}`
      server.enqueue(call(3))
      await host.start("payer", run, "pay 3")
      const requestId = await parkedOn(host, run)
      await host.close()
      const calls: string[] = []
      const restarted = await setup(
        {
          sweepEveryMs: 3_600_000,
          notify: async (entry) => {
            calls.push(entry.request.id)
          },
        },
        store,
      )
      // close() waits for the sweep the host began when it was created.
      await restarted.host.close()
      expect(calls).toEqual([requestId])
    })

    it("two hosts sweeping one store at once make each attempt once", async () => {
      let t = Date.parse("2030-01-01T00:00:00Z")
      const calls: string[] = []
      let release: (() => void) | undefined
      const held = new Promise<void>((resolve) => {
        release = resolve
      })
      let inFlight: (() => void) | undefined
      const secondAttempt = new Promise<void>((resolve) => {
        inFlight = resolve
      })
      // The first host's first attempt fails, so both sweeps find the retry due.
      let first = true
      const notify = async (entry: PendingEntry, info: NotifyInfo) => {
        calls.push(`${entry.request.id}#${info.attempt}`)
        if (calls.length === 2) inFlight?.()
        if (first) {
          first = false
          throw new Error("down")
        }
        await held
      }
      const a = await setup({ notify, clock: { now: () => t } })
      const b = await setup({ notify, clock: { now: () => t } }, a.store)
      const run = `two-${randomUUID()}`
      try {
        server.enqueue(call(1))
        await a.host.start("payer", run, "pay 1")
        const requestId = await parkedOn(a.host, run)
        t += 5_000
        const sweepA = a.host.sweep()
        // B sweeps while A's attempt 2 is in flight: it finds the attempt taken and leaves it.
        // Waited for, not counted in ticks: a loaded machine can take longer to start it.
        await secondAttempt
        await b.host.sweep()
        release?.()
        await sweepA
        await b.host.sweep()
        expect(calls).toEqual([`${requestId}#1`, `${requestId}#2`])
        expect(await b.host.getDelivery(requestId)).toMatchObject({
          attempts: 2,
          deliveredAt: expect.any(String),
        })
      } finally {
        await a.host.close()
        await b.host.close()
      }
    })

    it("an expiring warning once per request, warnBeforeMs before expiresAt, across a restart", async () => {
      const expires = Date.parse(EXPIRES)
      let t = expires - 20 * 60_000
      const events: ExpiringEvent[] = []
      const calls: [string, NotifyInfo][] = []
      const options = (): Partial<StoreHostOptions> => ({
        notify: async (entry, info) => {
          calls.push([entry.request.id, info])
        },
        warnBeforeMs: 10 * 60_000,
        clock: { now: () => t },
        onEvent: (ev) => events.push(ev),
      })
      const { host, store } = await setup(options())
      // A run id with a `/` (a chat door's `ada/chat-1`): the event names the whole run.
      const run = `ada/x-${randomUUID()}`
      try {
        server.enqueue({ toolCalls: [{ name: "slow", arguments: {} }] })
        await host.start("payer", run, "slow")
        const requestId = await parkedOn(host, run)
        await host.sweep()
        expect(events).toEqual([])
        t = expires - 5 * 60_000
        await host.sweep()
        await host.sweep()
        expect(events).toEqual([
          expect.objectContaining({
            type: "expiring",
            runId: run,
            expiresAt: EXPIRES,
            request: expect.anything(),
          }),
        ])
        expect(calls.filter(([id]) => id === requestId).map(([, info]) => info)).toEqual([
          { kind: "new", attempt: 1 },
          { kind: "expiring", attempt: 1 },
        ])
        expect((await host.getDelivery(requestId))?.expiring).toEqual({
          warnedAt: new Date(t).toISOString(),
          attempts: 1,
          deliveredAt: new Date(t).toISOString(),
        })
        await host.close()
        // A restarted host warns no more.
        const restarted = await setup(options(), store)
        t += 60_000
        await restarted.host.sweep()
        await restarted.host.close()
        expect(events).toHaveLength(1)
        expect(calls.filter(([id]) => id === requestId)).toHaveLength(2)
      } finally {
        await host.close()
      }
    })
  })
}
