import { type RunHost, createToolkit, hostAgent } from "@toolnexus/core"
import { createMemoryStore, createStoreHost } from "@toolnexus/durable"
import { afterEach, describe, expect, it } from "vitest"
import { createAgUiHandler } from "../src/ag-ui/index.js"
import { createChatHandler } from "../src/ai-sdk/index.js"
import { clientOf, postRaw, refundTools, serve, useFakeModel, userMessage } from "./helpers.js"

// §17: a door waits for a turn with `result(runId, { signal })` and releases that wait once the
// turn's post is over. Over an engine a parked run's result comes only at the run's end (days
// later): a wait left open would hold a call or a poll per parked turn for that long.

const env = useFakeModel("result-wait")
const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const clean of cleanups.splice(0)) await clean()
})

/**
 * A store host whose `result` behaves as an engine's for a parked run: it resolves only at the
 * run's end, so here never; it ends when its signal aborts. `waits` records each wait.
 */
async function engineLike() {
  const store = createMemoryStore()
  const { tools } = refundTools()
  const toolkit = await createToolkit({ extraTools: tools })
  const inner = createStoreHost({
    store,
    agents: [hostAgent({ name: "support", client: clientOf(env.fake, store), toolkit })],
    sweepEveryMs: false,
  })
  const waits: { signal: AbortSignal | undefined; released: boolean }[] = []
  const host: RunHost = Object.assign(Object.create(inner) as RunHost, {
    result: (_runId: string, opts: { signal?: AbortSignal } = {}) => {
      const wait = { signal: opts.signal, released: false }
      waits.push(wait)
      return new Promise((_resolve, reject) => {
        opts.signal?.addEventListener("abort", () => {
          wait.released = true
          reject(new Error("released"))
        })
      })
    },
  })
  cleanups.push(() => inner.close())
  return { host, waits }
}

describe("a door's wait for a parked turn", () => {
  it("the chat handler releases the host's result wait once the parked turn's post is over", async () => {
    const { host, waits } = await engineLike()
    const server = await serve(createChatHandler({ host, agent: "support" }))
    cleanups.push(() => server.close())
    const res = await postRaw(server.url, {
      id: "wait-chat-1",
      messages: [userMessage("refund my order")],
      trigger: "submit-message",
    })
    expect(res.status).toBe(200)
    expect(await res.text()).toContain("tool-approval-request")
    expect(waits.length).toBeGreaterThan(0)
    expect(waits.map((w) => w.released)).toEqual(waits.map(() => true))
  })

  it("the AG-UI handler releases it too", async () => {
    const { host, waits } = await engineLike()
    const server = await serve(createAgUiHandler({ host, agent: "support" }))
    cleanups.push(() => server.close())
    const res = await fetch(`${server.url}/agent`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        threadId: "wait-agui-1",
        runId: "r1",
        messages: [{ id: "m1", role: "user", content: "refund my order" }],
        tools: [],
        context: [],
      }),
    })
    expect(res.status).toBe(200)
    expect(await res.text()).toContain("RUN_FINISHED")
    expect(waits.length).toBeGreaterThan(0)
    expect(waits.map((w) => w.released)).toEqual(waits.map(() => true))
  })

  it("a turn that ended leaves the host's result wait to end by itself: nothing is aborted per turn", async () => {
    const store = createMemoryStore()
    const inner = createStoreHost({
      store,
      agents: [
        hostAgent({ name: "support", client: clientOf(env.fake, store), toolkit: await createToolkit({}) }),
      ],
      sweepEveryMs: false,
    })
    cleanups.push(() => inner.close())
    const signals: AbortSignal[] = []
    const host: RunHost = Object.assign(Object.create(inner) as RunHost, {
      result: (runId: string, opts: { signal?: AbortSignal } = {}) => {
        if (opts.signal) signals.push(opts.signal)
        return inner.result(runId, opts)
      },
    })
    const server = await serve(createChatHandler({ host, agent: "support" }))
    cleanups.push(() => server.close())
    // A new chat's turn: the host's `start` returns before the run, so its result is waited for.
    const res = await postRaw(server.url, {
      id: "wait-chat-done",
      messages: [userMessage("hello")],
      trigger: "submit-message",
    })
    expect(await res.text()).toContain('"finishReason":"stop"')
    await new Promise((resolve) => setImmediate(resolve))
    expect(signals.length).toBeGreaterThan(0)
    expect(signals.map((s) => s.aborted)).toEqual(signals.map(() => false))
  })
})
