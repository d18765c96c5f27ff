import {
  type RunResult,
  createInProcessClient,
  createToolkit,
  defineTool,
  hostAgent,
  pending,
} from "@toolnexus/core"
import { expect, it } from "vitest"
import { type DurableStore, createMemoryStore, createStoreHost } from "../src/index.js"
import { countingReads } from "./host-fixture.js"

// `cancel` of a run executing in this process (issue 34's CancelTask flake on PostgreSQL): the
// run is stopped before the cancel reads anything, so a run whose model answers while the cancel
// waits on the store never ends `done`; and the run's record, once cancelled, is written by the
// cancel alone (no `failed` from the stopped start lands after it). The store holds the cancel's
// reads of the run record until the run's execution has ended (a slow database).

/** Resolves when `resolve()` is called; the pair of a gate. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open: () => void = () => {}
  const wait = new Promise<void>((resolve) => {
    open = resolve
  })
  return { wait, open }
}

it.each([
  { model: "answers after the cancel", throws: false },
  { model: "throws on the abort", throws: true },
])(
  "cancel stops a run executing here before it reads the store; its model $model: never `done` or `failed` after, its record only `cancelled`",
  async ({ throws }) => {
    const inner = createMemoryStore()
    const entered = gate()
    const answer = gate()
    const reads = gate()
    let holdReads = false
    /** The states written to the run's record, in order. */
    const written: string[] = []
    const store = new Proxy(inner, {
      get(target, prop, receiver) {
        if (prop === "getSnapshot")
          return async (key: string) => {
            if (holdReads && key.startsWith("host-run/")) await reads.wait
            return target.getSnapshot(key)
          }
        if (prop === "putSnapshot")
          return (key: string, value: unknown) => {
            if (key.startsWith("host-run/")) written.push(String((value as { state?: unknown }).state))
            return target.putSnapshot(key, value)
          }
        const value = Reflect.get(target, prop, receiver)
        return typeof value === "function" ? value.bind(target) : value
      },
    }) as DurableStore
    const client = createInProcessClient({
      model: "scripted",
      store,
      async generate({ signal }) {
        entered.open()
        await answer.wait
        if (throws) {
          signal?.throwIfAborted()
          throw new Error("the model was not stopped")
        }
        return { content: "answered after the cancel" }
      },
    })
    const host = createStoreHost({ store, agents: [hostAgent({ name: "a", client })], sweepEveryMs: false })
    try {
      await host.start("a", "cancel-1", "go")
      await entered.wait
      const execution = host.events("cancel-1")[Symbol.asyncIterator]()
      holdReads = true
      const cancelled = host.cancel("cancel-1", "not wanted")
      // The model answers while the cancel waits on the store; the execution then ends.
      answer.open()
      while (!(await execution.next()).done) {}
      holdReads = false
      reads.open()
      await cancelled
      await expect(host.result("cancel-1")).rejects.toThrow(/was cancelled: not wanted/)
      expect(written).toEqual(["cancelled"])
    } finally {
      answer.open()
      reads.open()
      await host.close()
    }
  },
)

it("cancel of a parked run reads its record once: the record it rewrites is the one it found the requests with", async () => {
  const { store, reads } = countingReads(createMemoryStore())
  const ask = defineTool({
    name: "ask",
    description: "asks first",
    inputSchema: { type: "object", properties: {} },
    run: (_args, ctx) => (ctx.answer ? "asked" : pending({ kind: "approval", prompt: "Go on?" })),
  })
  const client = createInProcessClient({
    model: "scripted",
    store,
    generate: async ({ messages }) =>
      (messages.at(-1) as { role?: string } | undefined)?.role === "tool"
        ? { content: "done" }
        : { toolCalls: [{ name: "ask", arguments: {} }] },
  })
  const toolkit = await createToolkit({ extraTools: [ask] })
  const host = createStoreHost({
    store,
    agents: [hostAgent({ name: "a", client, toolkit })],
    sweepEveryMs: false,
  })
  try {
    await host.start("a", "parked-1", "go")
    const parked = (await host.result("parked-1")) as RunResult
    const requestId = parked.pending?.id as string
    reads.length = 0
    await host.cancel("parked-1", "not wanted")
    expect(reads.filter((read) => read.startsWith("getSnapshot"))).toEqual(["getSnapshot host-run/parked-1"])
    // As before: the request withdrawn with the decline, the run cancelled.
    expect(await host.findRequest(requestId)).toBeUndefined()
    expect(await host.getDecision(requestId)).toEqual({ ok: false, reason: "not wanted" })
    await expect(host.result("parked-1")).rejects.toThrow(/was cancelled: not wanted/)
  } finally {
    await host.close()
  }
})
