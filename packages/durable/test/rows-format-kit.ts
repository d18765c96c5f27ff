import { createClient, createToolkit, defineTool, type Message, pending } from "@toolnexus/core"
import type { FakeLLMServer } from "@toolnexus/core/testing"
import { expect } from "vitest"
import type { DurableStore } from "../src/durable-store.js"
import { askWithAnswer } from "../src/resume/ask-with-answer.js"

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
 * The fixed scenario: "parked" waits on the approval of a `lookup` call; "answered" was
 * approved and finished; "raw" holds a message with no compact form; "snap-1" is a snapshot.
 */
export async function writeRowsScenario(server: FakeLLMServer, store: DurableStore): Promise<void> {
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
}

/**
 * Reads the scenario back from a store holding golden rows, then resumes "parked": the
 * approved call runs once. `answeredId` is the request "answered" was approved on.
 */
export async function readRowsScenario(server: FakeLLMServer, store: DurableStore, answeredId: string) {
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
}

/**
 * The rows with what differs between runs (times; generated ids such as claim tokens)
 * replaced by placeholders, numbered in order of first appearance (key names included).
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
    if (typeof v === "string") return named(v)
    if (Array.isArray(v)) return v.map((x) => walk(x))
    if (typeof v === "object" && v !== null)
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [named(k), walk(x, k)]))
    return v
  }
  return walk(value)
}
