import { type RunResult, isRelayRequest, relayAnswer } from "@toolnexus/core"
import { afterEach, describe, expect, it, vi } from "vitest"
import { type DurableStore, createMemoryStore, openStore } from "../src/index.js"
import { hostFixture, useFakeModel } from "./host-fixture.js"

// A relay run (HostStartOptions.relay, §17) is resumed by whichever process applies its
// answer: when the process that claimed the answer died before applying it, another host's
// sweep resumes the run, and it must offer the caller's tools and output schema as the caller's
// own process would have. Each host here stands for a process (its own agent, toolkit and client).

const model = useFakeModel({ reset: true })
afterEach(() => vi.useRealTimers())

const show = { name: "show", description: "shows a value", parameters: { type: "object", properties: {} } }
const output = {
  type: "object",
  properties: { shown: { type: "string" } },
  required: ["shown"],
  additionalProperties: false,
}

/** Parks run `runId` on a relay request of a caller's `show` (host one), for another process to answer. */
async function parkedRelayRun(runId: string, store: DurableStore = createMemoryStore()) {
  const first = await hostFixture(model(), { store })
  model().enqueue({ toolCalls: [{ id: "c1", name: "show", arguments: {} }] })
  await first.host.start("a", runId, "show me", { relay: { tools: [show], output } })
  const halted = (await first.host.result(runId)) as RunResult
  expect(halted.status).toBe("pending")
  await first.host.close()
  return { store, halted }
}

describe("a relay run resumed by another process", () => {
  const stores = { memory: async () => createMemoryStore(), sqlite: () => openStore("sqlite::memory:") }
  it.each(Object.keys(stores) as (keyof typeof stores)[])(
    "on %s: a sweep after the claiming process died offers the caller's tools and output again",
    async (kind) => {
      const { store, halted } = await parkedRelayRun("rs1", await stores[kind]())
      // Process two claims the answer and dies before applying it: its lease runs out.
      vi.useFakeTimers({ toFake: ["Date"] })
      const answer = relayAnswer(halted.pending!.id, [{ id: "c1", output: "X" }])
      await store.claimAnswer("rs1", answer, { leaseMs: 30_000 })
      vi.setSystemTime(Date.now() + 60_000)

      // Process three's sweep resumes the run; its model calls the caller's tool again.
      const third = await hostFixture(model(), { store })
      model().enqueue({ toolCalls: [{ id: "c2", name: "show", arguments: {} }] })
      const swept = await third.host.sweep()
      expect(swept).toEqual({ completed: ["rs1"], failed: [] })
      const resumed = model().requests[1]
      expect(resumed?.toolNames).toEqual(["show"])
      expect(resumed?.body.response_format?.type).toBe("json_schema")
      // It halts on a relay request for the caller again, not on an unknown tool.
      const again = (await third.host.result("rs1")) as RunResult
      expect(again.status).toBe("pending")
      expect(isRelayRequest(again.pending!)).toBe(true)

      // Its answer, from a caller that passes no relay this time (an inbox, a retry), still ends
      // under the caller's output schema.
      model().enqueue({ text: '{"shown":"Y"}' })
      await third.host.deliverAnswer(relayAnswer(again.pending!.id, [{ id: "c2", output: "Y" }]))
      const done = (await third.host.result("rs1")) as RunResult
      expect(done).toMatchObject({ status: "done", output: { shown: "Y" } })
      expect(model().requests[2]?.toolNames).toEqual(["show"])
      await third.host.close()
      await store.close()
    },
  )
  it("a later deliverAnswer's relay replaces the kept one: the sweep offers the current caller's tools", async () => {
    const { store, halted } = await parkedRelayRun("rs2")
    // Process two answers with other tools and no output; it stops (dies) before the model answers.
    const second = await hostFixture(model(), { store })
    const pick = { name: "pick", parameters: { type: "object", properties: {} } }
    model().enqueue({ text: "never seen", delayMs: 5_000 })
    const controller = new AbortController()
    const answer = relayAnswer(halted.pending!.id, [{ id: "c1", output: "X" }])
    const delivering = second.host.deliverAnswer(answer, {
      relay: { tools: [pick], stream: false },
      signal: controller.signal,
    })
    await expect.poll(() => model().requests.length).toBe(2)
    controller.abort()
    await expect(delivering).rejects.toThrow()
    await second.host.close()
    expect(await store.getSnapshot("host-run/rs2")).toMatchObject({
      v: 2,
      relay: { tools: [{ name: "pick" }], stream: false },
    })
    expect((await store.getSnapshot("host-run/rs2")) as object).not.toHaveProperty("relay.output")

    // The recorded decision is due for a sweep: process three resumes with `pick`, not `show`.
    model().reset()
    model().enqueue({ text: "picked" })
    const third = await hostFixture(model(), { store })
    expect(await third.host.sweep()).toEqual({ completed: ["rs2"], failed: [] })
    expect(model().requests[0]?.toolNames).toEqual(["pick"])
    expect(model().requests[0]?.stream).toBe(false)
    expect(model().requests[0]?.body.response_format).toBeUndefined()
    expect(await third.host.result("rs2")).toMatchObject({ status: "done", text: "picked" })

    // A turn without relay is the agent's alone: nothing of the caller's is kept for its resumes.
    model().enqueue({ text: "plain" })
    await third.host.send("rs2", "again")
    await third.host.result("rs2")
    const record = await store.getSnapshot("host-run/rs2")
    expect(record).toMatchObject({ v: 1, state: "done" })
    expect(record as object).not.toHaveProperty("relay")
    await third.host.close()
  })

  it("retry of a failed relay request, from another process, resumes with the kept tools", async () => {
    const { store, halted } = await parkedRelayRun("rs3")
    // Process two's one attempt fails (the model is down): the request is failed.
    const second = await hostFixture(model(), { store, retries: 0, host: { maxAttempts: 1 } })
    model().enqueue({ status: 500, text: "down" })
    const id = halted.pending!.id
    const answer = relayAnswer(id, [{ id: "c1", output: "X" }])
    await expect(
      second.host.deliverAnswer(answer, { relay: { tools: [show], output } }),
    ).rejects.toMatchObject({
      code: "TNX_LLM_HTTP",
    })
    expect((await second.host.listFailed()).map((entry) => entry.request.id)).toEqual([id])
    await second.host.close()

    // An operator's retry in process three: the caller's tool is offered again, so it halts on it.
    model().reset()
    model().enqueue({ toolCalls: [{ id: "c2", name: "show", arguments: {} }] })
    const third = await hostFixture(model(), { store })
    await third.host.retry(id)
    expect(model().requests[0]?.toolNames).toEqual(["show"])
    const again = (await third.host.result("rs3")) as RunResult
    expect(isRelayRequest(again.pending!)).toBe(true)
    await third.host.close()
  })
})
