import { afterEach, describe, expect, it, vi } from "vitest"
import { AbortError, createClient, createToolkit, defineTool } from "../src/index.js"
import { RunAbort, withRunAbort } from "../src/engine/index.js"
import { type FakeLLMServer, createFakeLLMServer } from "../src/testing/index.js"

// A host's run abort (`RunAbort`, given by `withRunAbort`): the run obeys it as it obeys
// `signal`, and no `AbortSignal` is made until something needs a real one (a tool's
// `ctx.signal`, a `fetch` seam). The "made" checks spy on its `signal` getter, the one place it
// makes an `AbortController`.

/** Resolves when `open()` is called. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open: () => void = () => {}
  const wait = new Promise<void>((resolve) => {
    open = resolve
  })
  return { wait, open }
}

afterEach(() => {
  vi.restoreAllMocks()
})

describe("RunAbort", () => {
  it("calls each listener once on abort, with the reason kept; removed or late listeners are not called", () => {
    const abort = new RunAbort()
    const calls: string[] = []
    const a = () => calls.push("a")
    const b = () => calls.push("b")
    const c = () => calls.push("c")
    abort.addEventListener("abort", a, { once: true })
    abort.addEventListener("abort", a, { once: true })
    abort.addEventListener("abort", b)
    abort.addEventListener("abort", c)
    abort.removeEventListener("abort", b)
    expect(abort.aborted).toBe(false)
    expect(abort.reason).toBeUndefined()
    const reason = new Error("stop")
    abort.abort(reason)
    abort.abort(new Error("again"))
    abort.addEventListener("abort", () => calls.push("late"))
    expect(calls).toEqual(["a", "c"])
    expect(abort.aborted).toBe(true)
    expect(abort.reason).toBe(reason)
  })

  it("a signal read before the abort aborts with it; one read after is already aborted; the same one each read", () => {
    const before = new RunAbort()
    const signal = before.signal
    expect(signal).toBeInstanceOf(AbortSignal)
    expect(signal.aborted).toBe(false)
    const heard = vi.fn()
    signal.addEventListener("abort", heard)
    const reason = new Error("stop")
    before.abort(reason)
    expect(heard).toHaveBeenCalledTimes(1)
    expect(signal.reason).toBe(reason)
    expect(before.signal).toBe(signal)

    const after = new RunAbort()
    after.abort(reason)
    expect(after.signal.aborted).toBe(true)
    expect(after.signal.reason).toBe(reason)
  })

  it("an abort without a reason gives AbortController's: a DOMException named AbortError", () => {
    const abort = new RunAbort()
    abort.abort()
    expect(abort.reason).toBeInstanceOf(DOMException)
    expect((abort.reason as DOMException).name).toBe("AbortError")
    expect(abort.signal.reason).toBe(abort.reason)
  })
})

describe("a client run given a RunAbort", () => {
  let server: FakeLLMServer | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it("aborts its in-flight LLM request (undici) with the reason, and makes no AbortSignal", async () => {
    const made = vi.spyOn(RunAbort.prototype, "signal", "get")
    const arrived = gate()
    server = await createFakeLLMServer({
      fallback: () => {
        arrived.open()
        return { hang: true }
      },
    })
    const client = createClient({ baseUrl: `${server.url}/v1`, style: "openai", model: "m", apiKey: "k" })
    const abort = new RunAbort()
    const run = client.ask("hi", withRunAbort({}, abort))
    await arrived.wait
    const reason = new AbortError("stopped by the host")
    abort.abort(reason)
    await expect(run).rejects.toBe(reason)
    expect(made).not.toHaveBeenCalled()
  })

  it("a turn that runs to its end makes no AbortSignal", async () => {
    const made = vi.spyOn(RunAbort.prototype, "signal", "get")
    server = await createFakeLLMServer({ fallback: { text: "hello" } })
    const client = createClient({ baseUrl: `${server.url}/v1`, style: "openai", model: "m", apiKey: "k" })
    const result = await client.ask("hi", withRunAbort({ onEvent: () => {} }, new RunAbort()))
    expect(result.text).toBe("hello")
    expect(made).not.toHaveBeenCalled()
  })

  it("a tool's ctx.signal is a real AbortSignal that aborts with the run's RunAbort", async () => {
    server = await createFakeLLMServer({ replies: [{ toolCalls: [{ name: "wait", arguments: {} }] }] })
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
    const client = createClient({ baseUrl: `${server.url}/v1`, style: "openai", model: "m", apiKey: "k" })
    const abort = new RunAbort()
    const run = client.ask(
      "hi",
      withRunAbort({ toolkit: await createToolkit({ extraTools: [wait] }) }, abort),
    )
    await started.wait
    expect(seen).toBeInstanceOf(AbortSignal)
    expect(seen?.aborted).toBe(false)
    const reason = new AbortError("cancelled")
    abort.abort(reason)
    await expect(run).rejects.toBe(reason)
    expect(seen?.aborted).toBe(true)
    expect(seen?.reason).toBe(reason)
  })

  it("a fetch seam gets a real AbortSignal that aborts with the RunAbort", async () => {
    const arrived = gate()
    let given: AbortSignal | null | undefined
    const fetchSeam: typeof fetch = (_url, init) => {
      given = init?.signal
      arrived.open()
      return new Promise<Response>((_resolve, reject) =>
        init?.signal?.addEventListener("abort", () => reject(init.signal?.reason)),
      )
    }
    const client = createClient({
      baseUrl: "http://x/v1",
      style: "openai",
      model: "m",
      apiKey: "k",
      fetch: fetchSeam,
    })
    const abort = new RunAbort()
    const run = client.ask("hi", withRunAbort({}, abort))
    await arrived.wait
    expect(given).toBeInstanceOf(AbortSignal)
    const reason = new AbortError("stopped")
    abort.abort(reason)
    await expect(run).rejects.toBe(reason)
  })
})
