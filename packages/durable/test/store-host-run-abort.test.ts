import { AbortError, createClient, createToolkit, defineTool, hostAgent } from "@toolnexus/core"
import { RunAbort } from "@toolnexus/core/engine"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterEach, expect, it, vi } from "vitest"
import { createMemoryStore, createStoreHost } from "../src/index.js"

// A store host's execution stops its run through a `RunAbort` (core), not an `AbortController`
// made per execution: `cancel`, `close` and the caller's signal still stop an in-flight LLM
// request and a running tool, and no `AbortSignal` is made unless the run reads one. "Made" is
// counted on `RunAbort`'s `signal` getter, the one place it makes an `AbortController`.

/** Resolves when `open()` is called. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open: () => void = () => {}
  const wait = new Promise<void>((resolve) => {
    open = resolve
  })
  return { wait, open }
}

let server: FakeLLMServer | undefined
afterEach(async () => {
  vi.restoreAllMocks()
  await server?.close()
  server = undefined
})

/** A host over a memory store whose model's requests arrive at `arrived` and never get an answer. */
async function hangingHost(arrived: () => void, toolkit?: Awaited<ReturnType<typeof createToolkit>>) {
  server ??= await createFakeLLMServer({
    fallback: () => {
      arrived()
      return { hang: true }
    },
  })
  return hostOn(server, toolkit)
}

/** A store host over a memory store, its agent `a` asking `llm`. */
function hostOn(llm: FakeLLMServer, toolkit?: Awaited<ReturnType<typeof createToolkit>>) {
  const store = createMemoryStore()
  const client = createClient({
    baseUrl: `${llm.url}/v1`,
    style: "openai",
    model: "m",
    apiKey: "k",
    store,
  })
  const agent = hostAgent({ name: "a", client, ...(toolkit ? { toolkit } : {}) })
  return createStoreHost({ store, agents: [agent], sweepEveryMs: false })
}

it("cancel aborts a run's in-flight LLM request, with no AbortSignal made for the run", async () => {
  const made = vi.spyOn(RunAbort.prototype, "signal", "get")
  const arrived = gate()
  const host = await hangingHost(arrived.open)
  try {
    await host.start("a", "r-1", "hi")
    await arrived.wait
    // Resolves only once the execution ended: its request was aborted (the model never answers).
    await host.cancel("r-1", "not wanted")
    expect(made).not.toHaveBeenCalled()
    // The run's record is the cancel's, as with an AbortController.
    await expect(host.result("r-1")).rejects.toThrow(/run "r-1" was cancelled: not wanted/)
  } finally {
    await host.close()
  }
})

it("a turn's caller signal aborts its in-flight request; the turn rejects with the signal's reason", async () => {
  const made = vi.spyOn(RunAbort.prototype, "signal", "get")
  let arrivals = 0
  const second = gate()
  server = await createFakeLLMServer({
    replies: [{ text: "first" }],
    fallback: () => {
      arrivals++
      second.open()
      return { hang: true }
    },
  })
  const host = hostOn(server)
  try {
    await host.start("a", "r-2", "hi")
    await host.result("r-2")
    const caller = new AbortController()
    const turn = host.send("r-2", "again", { signal: caller.signal })
    await second.wait
    const reason = new AbortError("the caller left")
    caller.abort(reason)
    await expect(turn).rejects.toBe(reason)
    expect(arrivals).toBe(1)
    expect(made).not.toHaveBeenCalled()
  } finally {
    await host.close()
  }
})

it("a tool reading ctx.signal gets a real AbortSignal, aborted by cancel", async () => {
  const started = gate()
  let seen: AbortSignal | undefined
  const wait = defineTool({
    name: "wait",
    description: "waits for the run's abort",
    inputSchema: { type: "object", properties: {} },
    run: async (_args, ctx) => {
      seen = ctx.signal
      started.open()
      await new Promise<void>((resolve) => ctx.signal?.addEventListener("abort", () => resolve()))
      return "stopped"
    },
  })
  server = await createFakeLLMServer({ replies: [{ toolCalls: [{ name: "wait", arguments: {} }] }] })
  const host = await hangingHost(() => {}, await createToolkit({ extraTools: [wait] }))
  try {
    await host.start("a", "r-3", "hi")
    await started.wait
    expect(seen).toBeInstanceOf(AbortSignal)
    expect(seen?.aborted).toBe(false)
    await host.cancel("r-3", "not wanted")
    expect(seen?.aborted).toBe(true)
    expect((seen?.reason as Error | undefined)?.message).toMatch(/run r-3 was cancelled: not wanted/)
  } finally {
    await host.close()
  }
})

it("close aborts every in-flight run's request", async () => {
  const made = vi.spyOn(RunAbort.prototype, "signal", "get")
  let arrivals = 0
  const both = gate()
  const host = await hangingHost(() => {
    if (++arrivals === 2) both.open()
  })
  await host.start("a", "r-4", "hi")
  await host.start("a", "r-5", "hi")
  await both.wait
  // Resolves only once both executions ended: both requests were aborted.
  await host.close()
  expect(made).not.toHaveBeenCalled()
})
