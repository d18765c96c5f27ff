// A resume from a transcript (`continueRun` with `messages`, what `runWithAnswer` calls) is
// DESIGN §7's resume-throughput row: every promise the run makes is an allocation, a reaction
// and a tick on each of 10,000 resumes. `continueRun`, `finished` and the final answer hand back
// promises rather than wrap them in async frames; the resumed turn settles synchronously when its
// tools do (`resumeHaltedTurn`, `settleTurn`), the run's metric and body share one frame
// (`resumed`), and a plain turn measures its request in the loop (`LoopConfig.meter`); these
// tests hold that, and what it must keep.
import { createHook } from "node:async_hooks"
import { describe, expect, it } from "vitest"
import { createInProcessClient } from "../src/client/in-process-client.js"
import type { StreamEvent } from "../src/client/run-result.js"
import { ConfigError } from "../src/errors.js"
import { pending } from "../src/suspension/pending.js"
import { defineTool } from "../src/tools/define-tool.js"
import { createToolkit } from "../src/tools/toolkit.js"

const lookup = defineTool({
  name: "lookup",
  description: "Look up the data.",
  inputSchema: { type: "object", properties: {} },
  run: (_args, ctx) => (ctx?.answer?.ok ? "data" : pending({ kind: "approval", prompt: "approve lookup?" })),
})

/** A client whose model calls `lookup` once, then answers "done". */
async function parkedRun() {
  const toolkit = await createToolkit({ extraTools: [lookup] })
  const client = createInProcessClient({
    model: "m",
    generate: async (req) =>
      (req.messages.at(-1) as { role?: string } | undefined)?.role === "tool"
        ? { content: "done" }
        : { toolCalls: [{ id: "c1", name: "lookup", arguments: {} }] },
  })
  const parked = await client.run("go", { toolkit })
  if (parked.pending === undefined) throw new Error("did not park")
  return { client, toolkit, parked, answer: { id: parked.pending.id, ok: true } }
}

describe("a resume from a transcript", () => {
  it("makes at most 8 promises, the model's own among them (21, then 15 before)", async () => {
    const { client, toolkit, parked, answer } = await parkedRun()
    let made = 0
    const hook = createHook({
      init(_id, type) {
        if (type === "PROMISE") made++
      },
    })
    hook.enable()
    let result: Awaited<ReturnType<typeof client.continueRun>>
    try {
      result = await client.continueRun({
        toolkit,
        messages: parked.messages,
        pending: parked.pending,
        answer,
      })
    } finally {
      hook.disable()
    }
    expect(result.text).toBe("done")
    expect(made).toBeLessThanOrEqual(8)
  })

  it("still rejects, not throws, on a bad option", async () => {
    const { client, toolkit, parked } = await parkedRun()
    let returned: Promise<unknown> | undefined
    expect(() => {
      returned = client.continueRun({ toolkit, messages: parked.messages, pending: parked.pending })
    }).not.toThrow()
    await expect(returned).rejects.toBeInstanceOf(ConfigError)
    let stored: Promise<unknown> | undefined
    expect(() => {
      stored = client.continueRun({ toolkit, id: "" })
    }).not.toThrow()
    await expect(stored).rejects.toBeInstanceOf(ConfigError)
  })

  it("still ends its events with `done`, carrying the result", async () => {
    const { client, toolkit, parked, answer } = await parkedRun()
    const events: StreamEvent[] = []
    const result = await client.continueRun({
      toolkit,
      messages: parked.messages,
      pending: parked.pending,
      answer,
      onEvent: (ev) => events.push(ev),
    })
    const last = events.at(-1)
    expect(last?.type).toBe("done")
    expect(last?.type === "done" && last.result).toBe(result)
  })
})
