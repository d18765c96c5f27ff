import { type AgentDef, createRuntime, createVirtualClock } from "@toolnexus/agents"
import { createClient, createToolkit, defineTool, type Message, pending } from "@toolnexus/core"
import type { FakeLLMServer, FakeRequestView } from "@toolnexus/core/testing"
import { expect } from "vitest"
import type { DurableStore } from "../src/durable-store.js"
import { askWithAnswer } from "../src/resume/ask-with-answer.js"
import { resumeRuntime, saveRuntime } from "../src/resume/runtime-persistence.js"

// The scenario each backend's golden rows hold (the *-rows-format tests): what the rows are
// read back as, and the normalisation that lets two runs of the writer compare equal.

/** A backend's stored rows: per table (or key kind), its rows in key order. */
export interface GoldenRows {
  schemaVersion: number
  tables: Record<string, Record<string, unknown>[]>
}

/** A message with no compact form (content parts), stored as its JSON object. */
export const RAW: Message = {
  role: "user",
  content: [{ type: "text", text: "a picture of a cat" }],
} as Message

/**
 * The agent: its `lookup` tool needs approval, on requests `req-golden-1`, `-2`, … (fixed ids,
 * so that key names and row order are the same every run); `runs` records the answers it ran with.
 */
export async function rowsAgent(server: FakeLLMServer, store: DurableStore) {
  const runs: boolean[] = []
  let asked = 0
  const lookup = defineTool({
    name: "lookup",
    description: "Look up the data.",
    inputSchema: { type: "object", properties: {} },
    run: (_args, ctx) => {
      if (!ctx.answer)
        return pending({ id: `req-golden-${++asked}`, kind: "approval", prompt: "approve lookup?" })
      runs.push(ctx.answer.ok)
      return "data"
    },
  })
  const client = createClient({
    baseUrl: `${server.url}/v1`,
    style: "openai",
    model: "m",
    apiKey: "k",
    store,
  })
  return { client, runs, toolkit: await createToolkit({ extraTools: [lookup] }) }
}

/**
 * @internal A tree for runtime persistence: "lead" delegates to "payer", whose `transfer` needs approval
 * on request `req-golden-tree`; `moves` records the answers it ran with. A virtual clock keeps
 * the saved snapshot the same every run.
 */
export function tree(server: FakeLLMServer, store: DurableStore) {
  const moves: boolean[] = []
  const transfer = defineTool({
    name: "transfer",
    description: "move money",
    inputSchema: { type: "object" },
    run: (_args, ctx) => {
      if (!ctx.answer) return pending({ id: "req-golden-tree", kind: "approval", prompt: "Move?" })
      moves.push(ctx.answer.ok)
      return "moved"
    },
  })
  const registry: Record<string, AgentDef> = {
    lead: { name: "lead", does: "delegates", soul: "lead", team: ["payer"] },
    payer: { name: "payer", does: "pays", soul: "payer", tools: [transfer] },
  }
  const fresh = (soul: string) => (r: FakeRequestView) => r.system === soul && r.toolResults.length === 0
  server.addRule({
    match: fresh("lead"),
    reply: { toolCalls: [{ id: "call_task", name: "task", arguments: { agent: "payer", prompt: "pay" } }] },
  })
  server.addRule({
    match: fresh("payer"),
    reply: { toolCalls: [{ id: "call_transfer", name: "transfer", arguments: {} }] },
  })
  server.addRule({
    match: (r) => r.system === "payer",
    reply: (r) => ({ text: `payer: ${r.toolResults[0]?.content}` }),
  })
  server.addRule({
    match: (r) => r.system === "lead",
    reply: (r) => ({ text: `lead: ${r.toolResults[0]?.content}` }),
  })
  const opts = {
    registry,
    llm: { baseUrl: `${server.url}/v1`, model: "m", apiKey: "k" },
    store,
    clock: createVirtualClock(0),
  }
  return { moves, opts }
}

/**
 * The fixed scenario: "parked" waits on the approval of a `lookup` call; "answered" was
 * approved and finished; "raw" holds a message with no compact form; "snap-1" is a snapshot;
 * the runtime "order-1" (namespace "order-1") is saved parked: lead → payer on `req-golden-tree`.
 */
export async function writeRowsScenario(server: FakeLLMServer, store: DurableStore): Promise<void> {
  server.reset()
  const { client, toolkit } = await rowsAgent(server, store)
  server.enqueue(
    { toolCalls: [{ id: "call_parked", name: "lookup", arguments: {} }] },
    { toolCalls: [{ id: "call_answered", name: "lookup", arguments: {} }] },
    { text: "done: data" },
  )
  expect((await client.ask("look up parked", { id: "parked", toolkit })).status).toBe("pending")
  const first = await client.ask("look up answered", { id: "answered", toolkit })
  const answer = { id: first.pending?.id as string, ok: true }
  expect((await askWithAnswer(client, { toolkit, id: "answered", answer })).status).toBe("done")
  await store.save("raw", [RAW])
  await store.putSnapshot("snap-1", { kind: "golden", n: 1 })

  const { opts } = tree(server, store)
  const rt = createRuntime({ ...opts, namespace: "order-1" })
  const lead = rt.spawn(rt.root, "lead")
  rt.wake(lead, "go")
  expect(await rt.wait(lead)).toMatchObject({ status: "pending", pending: { id: "req-golden-tree" } })
  await saveRuntime(store, "order-1", rt)
}

/**
 * Reads the scenario back from a store holding golden rows, then resumes "parked" and the
 * runtime "order-1": each approved call runs once. `answeredId` is the request "answered" was approved on.
 */
export async function readRowsScenario(server: FakeLLMServer, store: DurableStore, answeredId: string) {
  server.reset()
  const roles = (messages: Message[] | undefined) =>
    (messages ?? []).map((m) => (m as { role?: string }).role)
  expect(await store.get("raw")).toEqual([RAW])
  expect(roles(await store.get("answered"))).toEqual(["user", "assistant", "tool", "assistant"])
  const request = await store.getPending("parked")
  expect(request).toMatchObject({ kind: "approval", prompt: "approve lookup?", data: { tool: "lookup" } })
  const id = request?.id as string
  expect(await store.findRequest(id)).toMatchObject({ state: "open", conversationId: "parked" })
  expect(await store.getDecision(answeredId)).toEqual({ ok: true })
  expect(await store.getSnapshot("snap-1")).toEqual({ kind: "golden", n: 1 })

  const { client, toolkit, runs } = await rowsAgent(server, store)
  server.enqueue({ text: "resumed" })
  const done = await askWithAnswer(client, { toolkit, id: "parked", answer: { id, ok: true } })
  expect(done.text).toBe("resumed")
  expect(runs).toEqual([true])
  expect(await store.getDecision(id)).toEqual({ ok: true })

  // The saved runtime: its request is routed to it, and the answer resumes the tree once.
  expect(await store.findRequest("req-golden-tree")).toMatchObject({ state: "open", runtimeKey: "order-1" })
  const { moves, opts } = tree(server, store)
  const rt = await resumeRuntime(store, "order-1", { id: "req-golden-tree", ok: true }, opts)
  expect(await rt.wait(rt.handle("root/lead.1")!)).toMatchObject({
    status: "done",
    text: "lead: payer: moved",
  })
  expect(moves).toEqual([true])
}

/**
 * The rows with what differs between runs (times; generated ids such as claim tokens)
 * replaced by placeholders, numbered in order of first appearance (key names included), and
 * a runtime snapshot's body as one placeholder: a new snapshot version is the agents
 * package's (with its own fixture), not a new store schema.
 */
export function normalizedRows(value: unknown): unknown {
  const names = new Map<string, string>()
  const named = (text: string) =>
    text.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|pnd-[\w-]+/g, (id) => {
      if (!names.has(id)) names.set(id, `<id-${names.size + 1}>`)
      return names.get(id) as string
    })
  const walk = (v: unknown, key = ""): unknown => {
    if (v !== null && /(_at|_since|At|Since|^since)$/.test(key)) return "<time>"
    // A runtime snapshot's body is @toolnexus/agents' format, versioned and pinned there.
    if (typeof v === "string" && v.startsWith('{"schemaVersion":')) return "<runtime snapshot>"
    if (typeof v === "string") return named(v)
    if (Array.isArray(v)) return v.map((x) => walk(x))
    if (typeof v === "object" && v !== null)
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [named(k), walk(x, k)]))
    return v
  }
  return walk(value)
}
