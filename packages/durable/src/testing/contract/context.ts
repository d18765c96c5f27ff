/*
 * What every topic of the store contract shares: the context describeStoreContract hands each
 * topic, and the deterministic data the tests build.
 */
import { randomUUID } from "node:crypto"
import type { Message, Request } from "@toolnexus/core"
import { expect, type it } from "vitest"
import type { DurableStore } from "../../durable-store.js"
import type { DurableStoreOptions } from "../../store-engine/store-base.js"
import type { WriteStats } from "../../store-engine/write-stats.js"
import type { StoreContractInit } from "../store-contract.js"

/** @internal What each topic of the contract gets from {@link describeStoreContract}. */
export interface ContractContext {
  /** The backend's plug-in, as given. */
  init: StoreContractInit
  /** A new store on the backend, closed after the test. */
  open(extra?: Pick<DurableStoreOptions, "opTimeoutMs">): Promise<DurableStore>
  /** Closes `store` after the test too (a store the test made with `init.create` itself). */
  adopt(store: DurableStore): void
  /** `it` for the write-cost tests: they run only when the backend counts its writes. */
  costIt: ReturnType<typeof it.runIf>
  /** What `store` wrote so far (only inside `costIt`). */
  writeStats(store: DurableStore): WriteStats
}

/**
 * How a test extends a transcript: `warm` keeps the objects already saved (the store may
 * append on its fast path), `cold` hands over new, equal objects (the store must compare).
 */
export const PATHS = ["warm path", "cold path"] as const
export const grow: Record<(typeof PATHS)[number], (transcript: Message[], length: number) => Message[]> = {
  "warm path": (transcript, length) => [...transcript, ...turns(length).slice(transcript.length)],
  "cold path": (_transcript, length) => turns(length),
}

/** @internal A unique id, so tests sharing a backend never see each other's rows. */
export function uid(label: string): string {
  return `${label}-${randomUUID()}`
}

/** @internal Message `i` of a deterministic conversation: equal JSON for equal `i`. */
export function message(i: number): Message {
  return i % 2 === 0
    ? { role: "user", content: `question ${i}: ${"lorem ipsum ".repeat(8)}` }
    : { role: "assistant", content: `answer ${i}: ${"dolor sit amet ".repeat(8)}` }
}

/** @internal The first `n` messages of the deterministic conversation, as new objects. */
export function turns(n: number): Message[] {
  return Array.from({ length: n }, (_, i) => message(i))
}

/**
 * @internal Parks a run on `writer`, then resumes it on `reader` the way `deliverAnswer` does (claim,
 * load, checkpoint of the repaired transcript, final save releasing the claim) and checks the
 * stored result. `calls` is the caller's log of round trips: it is cleared after the reader's
 * first load, and what the resume itself added is returned.
 */
export async function parkAndResume(
  writer: DurableStore,
  reader: DurableStore,
  id: string,
  calls: string[],
): Promise<string[]> {
  const req = request("approval")
  await writer.save(id, turns(3), { pending: req })
  await reader.get(id) // prepares the schema or key layout
  calls.length = 0
  const claim = await reader.claimAnswer(id, { id: req.id, ok: true })
  const loaded = (await reader.get(id)) as Message[]
  const repaired = [...loaded.slice(0, 2), { role: "tool", content: "paid" } as Message]
  await reader.save(id, repaired, { claim: claim.token, checkpoint: true })
  await reader.save(id, [...repaired, message(3)], { pending: null, claim: claim.token })
  const sent = [...calls]
  expect(await writer.get(id)).toEqual([...repaired, message(3)])
  expect(await writer.getDecision(req.id)).toEqual({ ok: true })
  return sent
}

/** @internal A request with a unique id. */
export function request(kind: string): Request {
  return { id: uid("req"), kind, prompt: `please ${kind}`, data: { amount: 42, tags: ["a", "b"] } }
}

export function delta(before: WriteStats, after: WriteStats): WriteStats {
  return {
    saves: after.saves - before.saves,
    messageRowsWritten: after.messageRowsWritten - before.messageRowsWritten,
    messageBytesWritten: after.messageBytesWritten - before.messageBytesWritten,
    messageRowsDeleted: after.messageRowsDeleted - before.messageRowsDeleted,
    messageRowsRead: after.messageRowsRead - before.messageRowsRead,
  }
}

export const OPENAI_MESSAGES: Message[] = [
  { role: "system", content: "You are terse." },
  { role: "user", content: 'Book a table for 2 🍝 "tonight" — ok?\n\\ tab\there, nul \u0000 end' },
  {
    role: "assistant",
    content: null,
    tool_calls: [
      {
        id: "call_1",
        type: "function",
        function: { name: "book", arguments: '{"people":2,"time":"20:00"}' },
      },
      { id: "call_2", type: "function", function: { name: "notify", arguments: "{}" } },
    ],
  },
  { role: "tool", tool_call_id: "call_1", content: '{"ok":true}' },
  { role: "tool", tool_call_id: "call_2", content: "" },
  { role: "assistant", content: "Booked. Ünïcödé ✓ 日本語" },
]

export const ANTHROPIC_MESSAGES: Message[] = [
  { role: "user", content: "Look up order 7." },
  {
    role: "assistant",
    content: [
      { type: "text", text: "Checking." },
      {
        type: "tool_use",
        id: "toolu_01",
        name: "lookup",
        input: { order: 7, filters: { status: ["open", "held"], limit: 2.5, exact: true, note: null } },
      },
    ],
  },
  {
    role: "user",
    content: [{ type: "tool_result", tool_use_id: "toolu_01", content: "order 7: shipped", is_error: false }],
  },
  { role: "assistant", content: [{ type: "text", text: "It shipped." }] },
]
