import { type Tool, defineTool } from "@toolnexus/core"
import { type DurableStore, createMemoryStore, createStoreHost } from "@toolnexus/durable"
import { afterEach, describe, expect, it, vi } from "vitest"
import { createMcpServer, hostedToolAgents } from "../src/server/index.js"

// What one call answered through one `input_required` round costs the host's store (§7's MCP
// row): counted with a proxy around the memory store, the requests sent raw to `fetch` as a
// 2026-07-28 client sends them. Deterministic: the counts are the regression check.
const KEY = "s".repeat(32)
const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "test", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": { elicitation: { form: {} } },
}
const pay = defineTool({
  name: "pay",
  description: "Pays, with approval",
  inputSchema: { type: "object", properties: { amount: { type: "number" } }, required: ["amount"] },
  needsApproval: true,
  run: ({ amount }) => `paid ${String(amount)}`,
}) as Tool

const closing: { close(): Promise<void> }[] = []
afterEach(async () => {
  for (const c of closing.splice(0).reverse()) await c.close()
})

/**
 * A memory store whose method calls are counted by name while `on`; with `hold`, every call of
 * that method first waits for the promise (its entry is `entered`).
 */
function countingStore(hold?: { method: string; until: Promise<void>; entered(): void }): {
  store: DurableStore
  calls: Map<string, number>
  counting(on: boolean): void
} {
  const raw = createMemoryStore()
  const calls = new Map<string, number>()
  let on = false
  const store = new Proxy(raw, {
    get(target, key) {
      const value = Reflect.get(target, key)
      if (typeof value !== "function") return value
      return (...args: unknown[]) => {
        if (on) calls.set(String(key), (calls.get(String(key)) ?? 0) + 1)
        if (hold?.method === key) {
          hold.entered()
          return hold.until.then(() => value.apply(target, args))
        }
        return value.apply(target, args)
      }
    },
  })
  const counting = (next: boolean) => {
    on = next
  }
  return { store, calls, counting }
}

let nextId = 1
async function call(fetch: (req: Request) => Promise<Response>, params: Record<string, unknown>) {
  const res = await fetch(
    new Request("http://127.0.0.1/mcp", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "pay",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: nextId++,
        method: "tools/call",
        params: { ...params, _meta: META },
      }),
    }),
  )
  const text = await res.text()
  const json = text.startsWith("{") ? text : /^data: (.*)$/m.exec(text)?.[1]
  return JSON.parse(json ?? "{}") as { result?: Record<string, unknown>; error?: unknown }
}

/**
 * A first call's store calls: the run record created, the conversation read (and its pending),
 * the grant looked up, the park saved with the run's record in one `commitResume`, then the
 * request it parked on looked up.
 */
const FIRST_CALL = {
  createSnapshot: 1,
  get: 1,
  getPending: 1,
  findApprovalGrant: 1,
  commitResume: 1,
  findRequest: 1,
}

/** An MCP server of `pay` over a store host on `store`, closed after the test. */
async function serve(store: DurableStore) {
  const host = createStoreHost({
    store,
    agents: await hostedToolAgents([pay], { store }),
    sweepEveryMs: false,
  })
  const mcp = createMcpServer({ host, tools: [pay], name: "t", version: "1.0.0", stateKeys: [KEY] })
  closing.push(host, mcp)
  return mcp
}

describe("MCP server over a store host: store calls per call through one input_required round", () => {
  it("a plain tool's retry answers from its resumed run's end, reading no record or transcript back", async () => {
    const { store, calls, counting } = countingStore()
    const mcp = await serve(store)

    counting(true)
    const first = await call(mcp.fetch, { name: "pay", arguments: { amount: 5 } })
    expect(first.result?.resultType).toBe("input_required")
    const asked = Object.fromEntries(calls)
    calls.clear()
    const [key] = Object.keys(first.result?.inputRequests as object)
    const done = await call(mcp.fetch, {
      name: "pay",
      arguments: { amount: 5 },
      requestState: first.result?.requestState,
      inputResponses: { [key as string]: { action: "accept", content: { approved: true } } },
    })
    counting(false)
    expect(done.result?.content).toEqual([{ type: "text", text: "paid 5" }])
    // The call: the run record created, the conversation read (and its pending), the grant
    // looked up, the park saved with the run's record in one store call (`commitResume`); then
    // the request it parked on looked up (a plain tool's run holds one at a time: no listing of
    // the run's requests). Before the one-write commit: `save` and `putSnapshot`, 7 calls.
    expect(asked).toEqual(FIRST_CALL)
    // The retry: the request found once (the delivery goes to that entry), the run's record
    // read once (its route reuses it), the claim, the resumed run's read and checkpoint, and its
    // commit: the final save consuming the claim with the run's record, in one store call. No
    // decision read (the claim says what it applied), no record or transcript read after the run
    // ended: its `done` event is the answer. Before: a second `save`, `putSnapshot` and
    // `getDecision`, 8 calls.
    expect(Object.fromEntries(calls)).toEqual({
      findRequest: 1,
      getSnapshot: 1,
      claimAnswer: 1,
      get: 1,
      save: 1,
      commitResume: 1,
    })
  })

  it("a run slower than the first look to park is not listed while it runs (the store host's result settles at the park)", async () => {
    // Only setTimeout is faked: the requests' watch looks first at 25 ms, by a timer.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] })
    try {
      let release!: () => void
      let entered!: () => void
      const inGet = new Promise<void>((resolve) => {
        entered = resolve
      })
      const until = new Promise<void>((resolve) => {
        release = resolve
      })
      const { store, calls, counting } = countingStore({ method: "get", until, entered })
      const mcp = await serve(store)

      counting(true)
      const first = call(mcp.fetch, { name: "pay", arguments: { amount: 7 } })
      // The run reads its conversation, and waits there while a second passes: before, the
      // watch listed the run's requests at 25, 50, 100, 200 and 400 ms (a record, a pending and
      // a request read each time) while it had not parked yet.
      await inGet
      await vi.advanceTimersByTimeAsync(1000)
      release()
      const answered = await first
      expect(answered.result?.resultType).toBe("input_required")
      expect(Object.fromEntries(calls)).toEqual(FIRST_CALL)
    } finally {
      vi.useRealTimers()
    }
  })
})
