import { readFileSync, writeFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import {
  RequestStateSealer,
  type SealedHandlerState,
  type SealedRunState,
  type SealedTask,
  StateRefusedError,
} from "../src/server/request-state.js"

// The sealed `requestState` and task id are a wire contract between server versions: during a
// rolling deploy a state sealed by one instance comes back to another (DESIGN §17 "formats are
// contracts", §18). fixtures/request-state/tnx1.json was sealed once (TOOLNEXUS_WRITE_GOLDEN=1)
// by this code under the fixed key and clock below; it is read forever, never regenerated.

const FIXTURE = new URL("./fixtures/request-state/tnx1.json", import.meta.url)
const KEY = "toolnexus-golden-request-state-key-v1"
/** The fixed clock the states were sealed at: 2026-01-01T00:00:00Z. */
const SEALED_AT = Date.UTC(2026, 0, 1)
const TTL = 5 * 60_000

const RUN: SealedRunState = {
  tool: "deploy",
  runId: "mcp-golden-1",
  requests: [
    { id: "mcp-golden-1.approve", kind: "approval" },
    { id: "mcp-golden-1.ask", kind: "input" },
  ],
  principal: "alice",
  expiresAt: SEALED_AT + TTL,
}
const HANDLER: SealedHandlerState = { state: "step-2", principal: "alice", expiresAt: SEALED_AT + TTL }
const TASK: SealedTask = {
  task: true,
  tool: "deploy",
  runId: "mcp-golden-2",
  principal: "alice",
  createdAt: SEALED_AT,
  expiresAt: SEALED_AT + TTL,
}

interface Golden {
  run: string
  handler: string
  task: string
}

describe("the sealed requestState, format tnx1", () => {
  it.runIf(process.env.TOOLNEXUS_WRITE_GOLDEN === "1")("seals the golden states (once)", () => {
    const sealer = new RequestStateSealer([KEY], () => SEALED_AT)
    const golden: Golden = { run: sealer.seal(RUN), handler: sealer.seal(HANDLER), task: sealer.seal(TASK) }
    writeFileSync(FIXTURE, `${JSON.stringify(golden, null, 2)}\n`, { flag: "wx" })
  })

  const golden = () => JSON.parse(readFileSync(FIXTURE, "utf8")) as Golden

  it("opens under today's code: a run's state, a handler's state and a task id, each with its meaning", () => {
    const sealer = new RequestStateSealer([KEY], () => SEALED_AT + 1_000)
    const { run, handler, task } = golden()
    for (const wire of [run, handler, task]) expect(wire.startsWith("tnx1.")).toBe(true)
    expect(sealer.open(run, { principal: "alice" })).toEqual(RUN)
    expect(sealer.open(handler, { principal: "alice" })).toEqual(HANDLER)
    expect(sealer.open(task, { principal: "alice" })).toEqual(TASK)
  })

  it("is honoured as sealed: a rotated-in key still opens it; its principal and expiry still bind", () => {
    const { run, task } = golden()
    const rotated = new RequestStateSealer(["n".repeat(32), KEY], () => SEALED_AT + TTL - 1)
    expect(rotated.open(run, { principal: "alice" })).toEqual(RUN)
    expect(() => rotated.open(run, { principal: "mallory" })).toThrow(/principal/)
    const later = new RequestStateSealer([KEY], () => SEALED_AT + TTL)
    expect(() => later.open(task, { principal: "alice" })).toThrow(/expired/)
    expect(() => new RequestStateSealer(["n".repeat(32)]).open(run, { principal: "alice" })).toThrow(/sealed/)
  })

  it("refuses an unknown future format with a typed error naming it, never misreading it", () => {
    const sealer = new RequestStateSealer([KEY], () => SEALED_AT)
    const future = golden().run.replace(/^tnx1\./, "tnx2.")
    const refused = (() => {
      try {
        sealer.open(future, { principal: "alice" })
      } catch (error) {
        return error
      }
    })()
    expect(refused).toBeInstanceOf(StateRefusedError)
    expect(refused).toMatchObject({ reason: "version", version: "tnx2" })
    expect((refused as Error).message).toContain('"tnx2"')
  })
})
