import { type RunResult, createToolkit, defineTool, hostAgent } from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import { type DurableStore, type StoreHostAgent, createMemoryStore, createStoreHost } from "../src/index.js"
import { modelClient, useFakeModel } from "./host-fixture.js"

// What an operator's tools rely on: a host without the run's agent records decisions for one
// with it (`deliverAnswer`'s handoff), `retry` re-delivers recorded decisions, `adopt` resumes
// conversations no host recorded.

const model = useFakeModel()

async function agentOn(store: DurableStore, runs: string[]): Promise<StoreHostAgent> {
  const refund = defineTool({
    name: "refund",
    description: "refunds an order",
    inputSchema: { type: "object", properties: { order: { type: "number" } }, required: ["order"] },
    needsApproval: true,
    run: ({ order }) => {
      runs.push(`refund ${order}`)
      return `refunded ${order}`
    },
  })
  const client = modelClient(model(), store, { retries: 0 })
  return hostAgent({ name: "refunds", client, toolkit: await createToolkit({ extraTools: [refund] }) })
}

describe("createStoreHost for operators", () => {
  it("a host without the run's agent records the answer; the serving host's sweep applies it once", async () => {
    const store = createMemoryStore()
    const runs: string[] = []
    const logged: string[] = []
    const serving = createStoreHost({ store, agents: [await agentOn(store, runs)], sweepEveryMs: false })
    const operator = createStoreHost({
      store,
      agents: [],
      sweepEveryMs: false,
      logger: {
        info: (message) => logged.push(message),
        error: (message) => logged.push(`error ${message}`),
      },
    })
    model().enqueue(
      { toolCalls: [{ id: "c1", name: "refund", arguments: { order: 1 } }] },
      { text: "done 1" },
    )
    await serving.start("refunds", "r1", "refund 1")
    const id = ((await serving.result("r1")) as RunResult).pending?.id as string

    const delivered = await operator.deliverAnswer({ id, ok: false, reason: "not today" })
    expect(delivered).toMatchObject({ runId: "r1", decision: { ok: false, reason: "not today" } })
    expect(logged.some((line) => line.includes(`answer to ${id} recorded`))).toBe(true)
    await expect(operator.deliverAnswer({ id, ok: true })).rejects.toMatchObject({
      code: "TNX_ANSWER_CONFLICT",
      decision: { ok: false, reason: "not today" },
    })
    expect(logged.some((line) => line.startsWith(`answer to ${id} refused`))).toBe(true)
    expect(runs).toEqual([])
    // The serving host too: another decision conflicts with the waiting one, never replaces it.
    await expect(serving.deliverAnswer({ id, ok: true })).rejects.toMatchObject({
      code: "TNX_ANSWER_CONFLICT",
      decision: { ok: false, reason: "not today" },
    })

    expect((await serving.sweep()).completed).toEqual(["r1"])
    expect(((await serving.result("r1")) as RunResult).text).toBe("done 1")
    expect(await serving.getDecision(id)).toEqual({ ok: false, reason: "not today" })
    expect(runs).toEqual([])
    await expect(operator.retry(id)).rejects.toMatchObject({ code: "TNX_ANSWER_CONFLICT" })
  })

  it("retry resumes a failed request with its stored decision; an open or unknown one is refused", async () => {
    const store = createMemoryStore()
    const runs: string[] = []
    const host = createStoreHost({ store, agents: [await agentOn(store, runs)], sweepEveryMs: false })
    model().enqueue(
      { toolCalls: [{ id: "c2", name: "refund", arguments: { order: 2 } }] },
      { status: 500, text: "down" },
      { status: 500, text: "down" },
      { status: 500, text: "down" },
      { text: "done 2" },
    )
    await host.start("refunds", "r2", "refund 2")
    const id = ((await host.result("r2")) as RunResult).pending?.id as string
    await expect(host.retry(id)).rejects.toMatchObject({ code: "TNX_ANSWER_CONFLICT" })
    for (let attempt = 0; attempt < 3; attempt++)
      await expect(host.deliverAnswer({ id, ok: true })).rejects.toMatchObject({ code: "TNX_LLM_HTTP" })
    expect((await host.listFailed()).map((entry) => entry.request.id)).toEqual([id])

    const retried = await host.retry(id)
    expect(retried).toMatchObject({ runId: "r2", decision: { ok: true } })
    expect(((await host.result("r2")) as RunResult).text).toBe("done 2")
    expect(await host.listFailed()).toEqual([])
    await expect(host.retry("pnd-unknown")).rejects.toMatchObject({ code: "TNX_UNKNOWN_REQUEST" })
  })

  it("adopt resumes a conversation parked by client.ask outside any host", async () => {
    const store = createMemoryStore()
    const runs: string[] = []
    const agent = await agentOn(store, runs)
    model().enqueue(
      { toolCalls: [{ id: "c3", name: "refund", arguments: { order: 3 } }] },
      { text: "done 3" },
    )
    const { client, toolkit } = agent.options
    const parked = await client?.ask("refund 3", { id: "chat-3", toolkit })
    const id = parked?.pending?.id as string
    const host = createStoreHost({ store, agents: [agent], sweepEveryMs: false, adopt: () => "refunds" })
    await host.deliverAnswer({ id, ok: true })
    expect(runs).toEqual(["refund 3"])
    expect(((await host.result("chat-3")) as RunResult).text).toBe("done 3")
  })
})
