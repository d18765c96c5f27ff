import { describe, expect, it } from "vitest"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { parseToolArguments } from "../src/providers/model-turn.js"
import { pending } from "../src/suspension/pending.js"
import { defineTool } from "../src/tools/define-tool.js"
import { createToolkit } from "../src/tools/toolkit.js"
import { clientFor, useFakeServer } from "./helpers.js"

// The shared bench's S4 keeps 10,000 runs parked at an approval, each as `{ messages, pending }`
// of a bare `client.run`; its tool takes no arguments, so the model sends `{}`. The stamped
// request keeps the call's args (§8): `{}` and `JSON.parse("{}")` are 56 B objects on 64-bit V8
// (four preallocated property slots), 32 B more per parked run than the empty object needs.

const ctx = useFakeServer()

setFlagsFromString("--expose-gc")
const gc = runInNewContext("gc") as () => void

/** Heap bytes each of `n` kept results of `make` holds. */
function heldPerItem(n: number, make: () => unknown): number {
  make()
  const kept: unknown[] = new Array(n)
  gc()
  gc()
  const before = process.memoryUsage().heapUsed
  for (let i = 0; i < n; i++) kept[i] = make()
  gc()
  gc()
  return (process.memoryUsage().heapUsed - before) / kept.length
}

describe("a no-argument call's args", () => {
  it("are a fresh, plain, mutable empty object, for `{}` and for no text", () => {
    for (const raw of ["{}", "", "  "]) {
      const { args } = parseToolArguments("call_1", "lookup", raw)
      expect(Object.getPrototypeOf(args)).toBe(Object.prototype)
      expect(args?.constructor).toBe(Object)
      expect(args).toStrictEqual({})
      expect(JSON.stringify(args)).toBe("{}")
      ;(args as Record<string, unknown>).added = 1
      expect(args).toEqual({ added: 1 })
      expect(parseToolArguments("call_2", "lookup", raw).args).toStrictEqual({})
    }
    expect(parseToolArguments("call_3", "lookup", "{ }").args).toStrictEqual({})
  })

  it("are held at their exact size: an empty object without preallocated property slots", () => {
    // 24 B each; `JSON.parse("{}")` and `{}` hold 56 B.
    expect(heldPerItem(100_000, () => parseToolArguments("call_1", "lookup", "{}").args)).toBeLessThan(40)
  })
})

describe("a parked run holds each piece once", () => {
  let given: unknown
  const lookup = defineTool({
    name: "lookup",
    description: "Look up the data.",
    inputSchema: { type: "object", properties: {} },
    run: (args, tc) => {
      given = args
      return tc?.answer?.ok ? "data" : pending({ kind: "approval", prompt: "approve lookup?" })
    },
  })

  it("the request's stamped args are the args the tool got and the call's record holds", async () => {
    const { server } = ctx
    const toolkit = await createToolkit({ extraTools: [lookup] })
    server.enqueue({ toolCalls: [{ id: "call_a", name: "lookup", arguments: {} }] })
    const halted = await clientFor("openai", server).run("go", { toolkit })
    expect(halted.status).toBe("pending")
    expect(halted.pending?.data?.args).toBe(given)
    expect(halted.toolCalls[0]?.args).toBe(given)
  })
})
