import { describe, expect, it } from "vitest"
import { RuntimeError } from "./errors.js"
import { HandleRecord } from "./handle-record.js"
import { HANDLE_TRANSITIONS, applyTransition } from "./handle-state.js"
import { Trace } from "./trace.js"
import type { HandleState } from "./types.js"

const def = { name: "worker", does: "works" }
const recordIn = (state: HandleState) => {
  const r = new HandleRecord({ id: "root/worker.1", def, parent: undefined, budget: {}, spawnedAt: 0 })
  r.state = state
  return r
}

describe("the handle transition table", () => {
  it("names every allowed move, and only the moves of the design's state machine", () => {
    const moves = Object.entries(HANDLE_TRANSITIONS).flatMap(([name, t]) =>
      t.from.map((from) => `${name}: ${from}→${t.to}`),
    )
    expect(moves).toEqual([
      "start: idle→running",
      "settle: running→idle",
      "park: running→suspended",
      "escalate: running→suspended",
      "answerInline: suspended→running",
      "unpark: suspended→idle",
      "cancel: suspended→idle",
      "close: idle→closed",
      "close: suspended→closed",
      "restoreInterrupted: running→idle",
    ])
    // Closed is final: no transition starts from it.
    expect(moves.some((m) => m.includes("closed→"))).toBe(false)
  })

  it("keeps every step of a long history, in order (short histories are stored compactly)", () => {
    const r = recordIn("idle")
    const trace = new Trace()
    for (let i = 0; i < 6; i++) {
      applyTransition(r, "start", trace)
      applyTransition(r, "settle", trace)
    }
    expect(r.transitions).toHaveLength(12)
    expect(r.transitions.slice(6, 10)).toEqual([
      "idle→running",
      "running→idle",
      "idle→running",
      "running→idle",
    ])
    expect(trace.lines().at(-1)).toBe("root/worker.1: running→idle")
  })

  it("shares a short history between handles that took the same steps, never mixing them", () => {
    const a = recordIn("idle")
    const b = recordIn("idle")
    const trace = new Trace()
    for (const r of [a, b]) {
      applyTransition(r, "start", trace)
      applyTransition(r, "park", trace)
    }
    expect(a.transitions).toBe(b.transitions)
    applyTransition(b, "unpark", trace)
    expect(a.transitions).toEqual(["idle→running", "running→suspended"])
    expect(b.transitions).toEqual(["idle→running", "running→suspended", "suspended→idle"])
    // A restored history is the handle's own and grows in place.
    const restored = recordIn("idle")
    restored.transitions = ["running→idle"]
    applyTransition(restored, "start", trace)
    expect(restored.transitions).toEqual(["running→idle", "idle→running"])
    expect(a.transitions).toHaveLength(2)
  })

  it("applies a transition, recording it on the handle and in the runtime trace", () => {
    const r = recordIn("idle")
    const trace = new Trace()
    applyTransition(r, "start", trace)
    applyTransition(r, "park", trace)
    expect(r.state).toBe("suspended")
    expect(r.transitions).toEqual(["idle→running", "running→suspended"])
    expect(trace.lines()).toEqual(["root/worker.1: idle→running", "root/worker.1: running→suspended"])
  })

  it.each([
    ["start", "running"],
    ["settle", "idle"],
    ["unpark", "running"],
    ["close", "closed"],
    ["close", "running"],
  ] as const)("refuses %s from %s, changing nothing", (name, state) => {
    const r = recordIn(state)
    const trace = new Trace()
    let thrown: unknown
    try {
      applyTransition(r, name, trace)
    } catch (error) {
      thrown = error
    }
    expect(RuntimeError.isInstance(thrown)).toBe(true)
    expect((thrown as Error).message).toContain(`transition ${name} starts from`)
    expect(r.state).toBe(state)
    expect(r.transitions).toEqual([])
    expect(trace.lines()).toEqual([])
  })
})
