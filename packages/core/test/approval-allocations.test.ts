// What an approval run allocates that it does not use. The shared bench's S2 row makes a client
// per run and answers in process; each object below was made on every run there, and the
// garbage collector's share of that row is most of what it counts over the floor after compiling.
import { afterEach, describe, expect, it, vi } from "vitest"
import { createToolkit } from "../src/tools/toolkit.js"
import { approve, clientFor, lookup, useFakeServer } from "./helpers.js"

const ctx = useFakeServer()

afterEach(() => {
  vi.restoreAllMocks()
})

/** How many `Map`s `make` constructs (module code reads the global `Map` at each `new`). */
function mapsMadeBy<T>(make: () => T): { value: T; maps: number } {
  const Original = globalThis.Map
  let maps = 0
  globalThis.Map = class extends Original<unknown, unknown> {
    constructor(entries?: Iterable<readonly [unknown, unknown]> | null) {
      super(entries)
      maps++
    }
  } as MapConstructor
  try {
    return { value: make(), maps }
  } finally {
    globalThis.Map = Original
  }
}

describe("an approval run's allocations", () => {
  it("a new client makes no Map for conversations it never saved or runs that never failed", async () => {
    const { server } = ctx
    // Its metrics registry's LLM, tool and tool-duration series are all that a run fills.
    const { value: client, maps } = mapsMadeBy(() => clientFor("openai", server))
    expect(maps).toBe(3)
    // Both are made when first needed: a failed run's metric, a saved conversation.
    server.enqueue({ status: 400, text: "bad" })
    await expect(client.run("x")).rejects.toThrow()
    expect(client.metrics()).toContain('toolnexus_run_errors_total{model="test-model"} 1')
    server.enqueue({ text: "hi" })
    await client.ask("x", { id: "c1" })
    expect(await client.conversationStore().get("c1")).toHaveLength(2)
  })

  it("a turn of one suspended call awaits it without Promise.all; two calls keep their order", async () => {
    const { server } = ctx
    const toolkit = await createToolkit({ extraTools: [approve, lookup] })
    const client = clientFor("openai", server, { waitFor: (req) => ({ id: req.id, ok: true }) })
    server.enqueue({ toolCalls: [{ name: "approve", arguments: { what: "a" } }] }, (req) => ({
      text: `one: ${req.toolResults[0]?.content}`,
    }))
    const all = vi.spyOn(Promise, "all")
    const one = await client.run("go", { toolkit })
    expect(one.text).toBe("one: approved a")
    expect(all).not.toHaveBeenCalled()

    server.enqueue(
      {
        toolCalls: [
          { name: "approve", arguments: { what: "b" } },
          { name: "approve", arguments: { what: "c" } },
        ],
      },
      (req) => ({ text: req.toolResults.map((r) => r.content).join(", ") }),
    )
    const two = await client.run("go", { toolkit })
    expect(two.text).toBe("approved b, approved c")
    expect(all).toHaveBeenCalledTimes(1)
  })
})
