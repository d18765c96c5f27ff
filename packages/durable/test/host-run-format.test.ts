import { readFileSync, writeFileSync } from "node:fs"
import {
  type RunResult,
  SchemaVersionError,
  createToolkit,
  hostAgent,
  isRelayRequest,
  relayAnswer,
} from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import { type DurableStore, createMemoryStore, createStoreHost } from "../src/index.js"
import { modelClient, useFakeModel } from "./host-fixture.js"

// The store host's run record (snapshot `host-run/<runId>`, DESIGN §17 "formats are
// contracts"): what another host over the same store reads to route answers and refuse a second
// start. fixtures/host-run/v1.json was written once (TOOLNEXUS_WRITE_GOLDEN=1, which never overwrites one) by a host of
// this code finishing a run started for a principal. It is read forever, never regenerated.
// fixtures/host-run/v2.json (v1 plus `relay`: the caller's tool declarations, output schema and
// stream flag, written only for a relay run) was written the same way by a host parking a relay run.

const V1 = new URL("./fixtures/host-run/v1.json", import.meta.url)
const V2 = new URL("./fixtures/host-run/v2.json", import.meta.url)
const RELAY_RUN = "host-run-relay-golden"
const show = { name: "show", description: "shows a value", parameters: { type: "object", properties: {} } }
const output = { type: "object", properties: { shown: { type: "string" } }, required: ["shown"] }
const RUN = "host-run-golden"

interface Golden {
  /** The snapshots under `host-run/`, by key, as the store holds them. */
  snapshots: Record<string, unknown>
}

const model = useFakeModel()

async function agentFor(store: DurableStore) {
  const client = modelClient(model(), store)
  return hostAgent({ name: "writer", client, toolkit: await createToolkit({}) })
}

async function storeWith(golden: Golden): Promise<DurableStore> {
  const store = createMemoryStore()
  for (const [key, value] of Object.entries(golden.snapshots)) await store.putSnapshot(key, value)
  return store
}

describe("the host run record, format v1", () => {
  it.runIf(process.env.TOOLNEXUS_WRITE_GOLDEN === "1")("writes the golden record (once)", async () => {
    const store = createMemoryStore()
    model().reset()
    model().enqueue({ text: "done writing" })
    const host = createStoreHost({ store, agents: [await agentFor(store)], sweepEveryMs: false })
    try {
      await host.start("writer", RUN, "write", { principal: "alice" })
      await host.result(RUN, { timeoutMs: 10_000 })
    } finally {
      await host.close()
    }
    const key = `host-run/${RUN}`
    const golden: Golden = { snapshots: { [key]: await store.getSnapshot(key) } }
    writeFileSync(V1, `${JSON.stringify(golden, null, 2)}\n`, { flag: "wx" })
  })

  it("is read by today's host: the run's agent, state, result and principal", async () => {
    const golden = JSON.parse(readFileSync(V1, "utf8")) as Golden
    const record = golden.snapshots[`host-run/${RUN}`] as Record<string, unknown>
    expect(record).toMatchObject({ v: 1, agent: "writer", state: "done", principal: "alice" })
    const store = await storeWith(golden)
    model().reset()
    const host = createStoreHost({ store, agents: [await agentFor(store)], sweepEveryMs: false })
    try {
      const result = (await host.result(RUN, { timeoutMs: 10_000 })) as RunResult
      expect(result).toMatchObject({ status: "done", text: "done writing" })
      // The record is honoured: the run exists, so a second start starts nothing.
      expect(await host.start("writer", RUN, "again")).toEqual({ runId: RUN, started: false })
      expect(model().requests).toHaveLength(0)
    } finally {
      await host.close()
    }
  })

  it("refuses a record of an unknown version with SchemaVersionError naming it, never as 'not started'", async () => {
    const golden = JSON.parse(readFileSync(V1, "utf8")) as Golden
    const key = `host-run/${RUN}`
    const future = { ...(golden.snapshots[key] as object), v: 3 }
    const store = await storeWith({ snapshots: { [key]: future } })
    const host = createStoreHost({ store, agents: [await agentFor(store)], sweepEveryMs: false })
    try {
      const refused = await host.result(RUN).catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(SchemaVersionError)
      expect(refused).toMatchObject({ found: 3, supported: [1, 2] })
      expect((refused as Error).message).toContain("schema version 3")
      // A start finds the id taken and starts nothing over the newer record.
      expect(await host.start("writer", RUN, "again")).toEqual({ runId: RUN, started: false })
      expect(await store.getSnapshot(key)).toEqual(future)
    } finally {
      await host.close()
    }
  })
})

describe("the host run record, format v2 (a relay run)", () => {
  it.runIf(process.env.TOOLNEXUS_WRITE_GOLDEN === "1")("writes the golden record (once)", async () => {
    const store = createMemoryStore()
    model().reset()
    model().enqueue({ toolCalls: [{ id: "c1", name: "show", arguments: {} }] })
    const host = createStoreHost({ store, agents: [await agentFor(store)], sweepEveryMs: false })
    try {
      await host.start("writer", RELAY_RUN, "show", { relay: { tools: [show], output, stream: false } })
      await host.result(RELAY_RUN, { timeoutMs: 10_000 })
    } finally {
      await host.close()
    }
    const snapshots: Record<string, unknown> = {}
    for (const key of [`host-run/${RELAY_RUN}`]) snapshots[key] = await store.getSnapshot(key)
    const golden = {
      snapshots,
      conversation: await store.get(RELAY_RUN),
      pending: await store.getPending(RELAY_RUN),
    }
    writeFileSync(V2, `${JSON.stringify(golden, null, 2)}\n`, { flag: "wx" })
  })

  it("is read by today's host: an answer with no relay resumes with the kept tools, output and stream flag", async () => {
    const golden = JSON.parse(readFileSync(V2, "utf8")) as Golden & {
      conversation: Parameters<DurableStore["save"]>[1]
      pending: NonNullable<Parameters<DurableStore["save"]>[2]>["pending"]
    }
    const record = golden.snapshots[`host-run/${RELAY_RUN}`] as Record<string, unknown>
    expect(record).toMatchObject({
      v: 2,
      agent: "writer",
      state: "pending",
      relay: { tools: [show], output, stream: false },
    })
    const store = await storeWith(golden)
    await store.save(RELAY_RUN, golden.conversation, { pending: golden.pending })
    model().reset()
    model().enqueue({ text: '{"shown":"X"}' })
    const host = createStoreHost({ store, agents: [await agentFor(store)], sweepEveryMs: false })
    try {
      const parked = (await host.result(RELAY_RUN)) as RunResult
      expect(isRelayRequest(parked.pending!)).toBe(true)
      await host.deliverAnswer(relayAnswer(parked.pending!.id, [{ id: "c1", output: "X" }]))
      expect(await host.result(RELAY_RUN)).toMatchObject({ status: "done", output: { shown: "X" } })
      const sent = model().requests[0]
      expect([sent?.toolNames, sent?.stream, sent?.body.response_format?.type]).toEqual([
        ["show"],
        false,
        "json_schema",
      ])
    } finally {
      await host.close()
    }
  })
})
