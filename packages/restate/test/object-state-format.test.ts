import { readFileSync, writeFileSync } from "node:fs"
import type * as Restate from "@restatedev/restate-sdk"
import { type Message, type Request, SchemaVersionError, type StreamEvent } from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import { type RunState, runStateOf } from "../src/protocol.js"
import { buildServices } from "../src/services.js"

// The state the `<namespace>_runs` and `<namespace>_events` objects keep in Restate outlives
// the workers that wrote it (DESIGN §17 "formats are contracts"). The fixtures were written
// once (TOOLNEXUS_WRITE_GOLDEN=1) by the handlers of this package driving one run: started,
// parked on a request with its conversation, then its turn done, two events logged.
// fixtures/object-state/unversioned.json is the shape before the run state carried `v` (read as
// v1); v1.json is today's. Both are read forever, never regenerated.

const UNVERSIONED = new URL("./fixtures/object-state/unversioned.json", import.meta.url)
const V1 = new URL("./fixtures/object-state/v1.json", import.meta.url)
const RUN_ID = "restate-golden-1"

interface Golden {
  /** The runs object's state for key `restate-golden-1`. */
  runs: Record<string, unknown>
  /** The events object's state for key `restate-golden-1` (the first turn's workflow id). */
  events: Record<string, unknown>
}

type Handler = (ctx: unknown, input?: unknown) => Promise<unknown>

class FakeTerminalError extends Error {}

// Only what `buildServices` calls: a definition's handlers are the functions themselves.
const sdk = {
  object: (def: unknown) => def,
  workflow: (def: unknown) => def,
  handlers: {
    object: { exclusive: (a: unknown, b?: unknown) => b ?? a, shared: (a: unknown, b?: unknown) => b ?? a },
    workflow: { shared: (a: unknown, b?: unknown) => b ?? a },
  },
  rpc: { sendOpts: (opts: unknown) => opts },
  TerminalError: FakeTerminalError,
} as unknown as typeof Restate

const services = buildServices(sdk, [], "tnxgolden") as unknown as Record<
  "runs" | "events",
  { handlers: Record<string, Handler> }
>

/** An object's context over `state`, as Restate hands it to a handler (JSON values, copied). */
function contextOver(key: string, state: Map<string, unknown>) {
  const copy = (value: unknown) => JSON.parse(JSON.stringify(value))
  const send = () => new Proxy({}, { get: () => () => undefined })
  return {
    key,
    get: async (name: string) => (state.has(name) ? copy(state.get(name)) : null),
    set: (name: string, value: unknown) => state.set(name, copy(value)),
    clear: (name: string) => state.delete(name),
    workflowSendClient: send,
    objectSendClient: send,
    date: { now: async () => Date.UTC(2026, 0, 1) },
  }
}

const call = (object: "runs" | "events", handler: string, state: Map<string, unknown>, input?: unknown) =>
  (services[object].handlers[handler] as Handler)(contextOver(RUN_ID, state), input)

const REQUEST: Request = { id: "restate-golden-1.approve", kind: "approval", prompt: "Ship it?" }
const PARKED: Message[] = [
  { role: "user", content: "ship order 7" },
  { role: "assistant", content: "", toolCalls: [{ id: "c1", name: "ship", arguments: "{}" }] },
] as Message[]
const TRANSCRIPT: Message[] = [
  ...PARKED,
  { role: "tool", toolCallId: "c1", content: "shipped" },
  { role: "assistant", content: "Shipped." },
] as Message[]
const EVENTS: StreamEvent[] = [
  { type: "text", delta: "Ship" },
  { type: "text", delta: "ped." },
]

const read = (url: URL) => JSON.parse(readFileSync(url, "utf8")) as Golden
const mapOf = (record: Record<string, unknown>) => new Map(Object.entries(record))

describe("the Restate objects' state", () => {
  it.runIf(process.env.TOOLNEXUS_WRITE_GOLDEN === "1")("writes the golden state (once)", async () => {
    const runs = new Map<string, unknown>()
    const events = new Map<string, unknown>()
    await call("runs", "start", runs, { agent: "shipper", prompt: "ship order 7" })
    await call("runs", "update", runs, { turn: 1, kind: "client", waitingOn: REQUEST, parked: PARKED })
    await call("events", "append", events, EVENTS)
    await call("runs", "update", runs, { turn: 1, state: "done", transcript: TRANSCRIPT })
    const golden: Golden = { runs: Object.fromEntries(runs), events: Object.fromEntries(events) }
    writeFileSync(
      process.env.TOOLNEXUS_GOLDEN_FILE === "unversioned" ? UNVERSIONED : V1,
      `${JSON.stringify(golden, null, 2)}\n`,
      { flag: "wx" },
    )
  })

  for (const [name, url] of [
    ["unversioned (read as v1)", UNVERSIONED],
    ["v1", V1],
  ] as const)
    it(`${name}: today's handlers read the run, its conversation and its events, and take its next turn`, async () => {
      const golden = read(url)
      const runs = mapOf(golden.runs)
      const events = mapOf(golden.events)
      const current = runStateOf(await call("runs", "current", runs), RUN_ID)
      expect(current).toMatchObject({
        agent: "shipper",
        turn: 1,
        kind: "client",
        state: "done",
        waitingOn: null,
      })
      expect(await call("runs", "conversation", runs)).toEqual(TRANSCRIPT)
      expect(await call("runs", "transcript", runs)).toEqual(TRANSCRIPT)
      expect(await call("events", "read", events, { after: 0 })).toEqual({ events: EVENTS, next: 2 })
      expect(await call("events", "end", events)).toBe(2)
      // The run is honoured: its next turn is turn 2, and what is written now is v1.
      expect(await call("runs", "next", runs, { prompt: "and order 8" })).toEqual({
        workflowId: `${RUN_ID}~2`,
      })
      expect(runs.get("run")).toEqual({ v: 1, agent: "shipper", turn: 2, state: "running", kind: "client" })
      await call("events", "append", events, [{ type: "text", delta: "!" }])
      expect(await call("events", "read", events, { after: 2 })).toEqual({
        events: [{ type: "text", delta: "!" }],
        next: 3,
      })
    })

  it("refuses a run state or an event log of an unknown version, naming it", async () => {
    const golden = read(V1)
    const run = { ...(golden.runs.run as RunState), v: 2 }
    const refused = (() => {
      try {
        runStateOf(run, RUN_ID)
      } catch (error) {
        return error
      }
    })()
    expect(refused).toBeInstanceOf(SchemaVersionError)
    expect(refused).toMatchObject({ found: 2, supported: [1] })
    const runs = mapOf({ ...golden.runs, run })
    // In a handler the refusal is terminal (a retry would not read it either); nothing is written.
    await expect(call("runs", "next", runs, { prompt: "again" })).rejects.toThrow(/schema version 2/)
    await expect(call("runs", "next", runs, { prompt: "again" })).rejects.toBeInstanceOf(FakeTerminalError)
    expect(runs.get("run")).toEqual(run)
    const events = mapOf({ ...golden.events, v: 2 })
    await expect(call("events", "read", events, { after: 0 })).rejects.toThrow(/schema version 2/)
    await expect(call("events", "append", events, [])).rejects.toBeInstanceOf(FakeTerminalError)
  })
})
