import { createHash, randomBytes } from "node:crypto"
import { type Answer, type Request, type RunHost, relayAnswer, relayCallsOf } from "@toolnexus/core"
import type { DurableStore } from "@toolnexus/durable"
import type { ChatToolDeclaration } from "./openai-shapes.js"
import { badRequest, conflict, expiredError, failedTooOften } from "./proxy-error.js"
import type { CallerCall, RelayTurn } from "./relay-turn.js"

/*
 * How a follow-up request finds its conversation.
 *
 * The caller never sees the model's tool-call ids: a model may reuse one (some always say
 * `call_0`), and an id that is a global key would let one caller's results resume another
 * caller's conversation and read its reply. When a run halts on relay calls, each call gets a
 * fresh random id, scoped to that conversation and to the caller's key:
 *   relay-proxy/call/<caller id>             → { conversation, caller?, answered? }
 *   relay-proxy/conversation/<conversation>  → { tools, request, calls: [{id, callId}], caller? }
 *   relay-proxy/replay/<conversation>/<request> → { digest, turn }   (once answered)
 * The caller echoes its ids as `tool_call_id` (chat) or `call_id` (Responses); the proxy maps
 * them back to the model's ids. A redelivery of the very same results after the run moved on (an
 * SDK retrying a request whose response it lost) gets the same turn again from the replay
 * record, without a model call. The index lives in the proxy's store (the shorthand's: the one
 * the transcripts live in), so any proxy process on that store and host can continue the
 * conversation; the run itself, its open request and its decisions are the host's.
 */

const callKey = (callerCallId: string) => `relay-proxy/call/${callerCallId}`
const conversationKey = (conversation: string) => `relay-proxy/conversation/${conversation}`
const replayKey = (conversation: string, request: string) => `relay-proxy/replay/${conversation}/${request}`

interface CallEntry {
  conversation: string
  caller?: string
  /** The replay record's key, once the request the call rode was answered. */
  answered?: string
}

interface ConversationEntry {
  tools: ChatToolDeclaration[]
  /** The open relay request. */
  request: string
  calls: { id: string; callId: string }[]
  /** The caller's key fingerprint; absent without caller authentication. */
  caller?: string
  /** The open request's `expiresAt`, named by the 410 once it was declined as expired. */
  expiresAt?: string
}

interface ReplayEntry {
  digest: string
  turn: RelayTurn
}

/** A caller's result for one tool call it was given. */
export interface CallerResult {
  id: string
  output: string
}

/** A follow-up request matched to its halted conversation, with the answer built from its results. */
export interface Continuation {
  conversation: string
  pending: Request
  answer: Answer
  /** The tool declarations stored with the conversation. */
  tools: ChatToolDeclaration[]
  /** The caller ids of the pending request's calls, and the digest of the caller's results. */
  settle: { callIds: string[]; digest: string; caller?: string }
}

/** What a follow-up's results lead to: a halted run to resume, or the turn they already produced. */
export type Followed = { continuation: Continuation } | { replay: RelayTurn; conversation: string }

/** A fresh caller-facing tool-call id: unguessable, and in OpenAI's own `call_…` form. */
function callerCallId(): string {
  return `call_${randomBytes(16).toString("base64url")}`
}

/**
 * Indexes a conversation's halt so that the caller's tool results can find it again, and returns
 * the relay calls with the ids the caller is given.
 */
export async function rememberHalt(
  store: DurableStore,
  conversation: string,
  pending: Request,
  tools: ChatToolDeclaration[],
  opts: { caller?: string },
): Promise<CallerCall[]> {
  const calls = relayCallsOf(pending).map((call) => ({ ...call, callId: call.id, id: callerCallId() }))
  const entry: ConversationEntry = {
    tools,
    request: pending.id,
    calls: calls.map(({ id, callId }) => ({ id, callId })),
    ...owner(opts.caller),
    ...(pending.expiresAt !== undefined ? { expiresAt: pending.expiresAt } : {}),
  }
  // The conversation entry first: an index entry must never point at a stale one.
  await store.putSnapshot(conversationKey(conversation), entry)
  for (const call of calls) {
    await store.putSnapshot(callKey(call.id), { conversation, ...owner(opts.caller) } satisfies CallEntry)
  }
  return calls
}

/**
 * Records that a continuation was applied and produced `turn`: its calls then lead to the replay
 * record instead of the conversation. Call after the resumed run was saved (and after
 * {@link rememberHalt} when it halted again).
 */
export async function settleHalt(
  store: DurableStore,
  continuation: Continuation,
  turn: RelayTurn,
  haltedAgain: boolean,
): Promise<void> {
  const { conversation, pending, settle } = continuation
  const key = replayKey(conversation, pending.id)
  await store.putSnapshot(key, { digest: settle.digest, turn } satisfies ReplayEntry)
  for (const id of settle.callIds) {
    await store.putSnapshot(callKey(id), {
      conversation,
      ...owner(settle.caller),
      answered: key,
    } satisfies CallEntry)
  }
  if (!haltedAgain) await store.deleteSnapshot(conversationKey(conversation))
}

/**
 * Finds what the caller's results answer: the halted conversation (with the relay answer built),
 * or, for a redelivery of results already applied, the turn they produced.
 *
 * @throws ProxyError 409 when no id answers an open request of this caller (unknown, another
 *   caller's, or already answered with other results); 410 when the request they answer was
 *   declined as expired; 400 when the results mix conversations, repeat an id, or answer
 *   calls that are not part of the pending request.
 */
export async function findContinuation(
  { index: store, host }: { index: DurableStore; host: RunHost },
  results: CallerResult[],
  caller: string | undefined,
): Promise<Followed> {
  const ids = results.map((r) => r.id)
  const repeated = ids.find((id, i) => ids.indexOf(id) !== i)
  if (repeated !== undefined) {
    throw badRequest(`two tool results answer the tool call ${JSON.stringify(repeated)}`, "messages")
  }
  const indexed = await Promise.all(ids.map((id) => store.getSnapshot(callKey(id))))
  // Another caller's ids count as unknown: nothing in the answer tells that they exist.
  const own = indexed.filter((e): e is CallEntry => isCallEntry(e) && e.caller === caller)
  const digest = digestOf(results)
  if (own.length > 0 && own.every((e) => e.answered !== undefined)) return replay(store, own, digest)

  const conversations = new Set(own.filter((e) => e.answered === undefined).map((e) => e.conversation))
  const [conversation] = conversations
  const entry =
    conversation === undefined ? undefined : await store.getSnapshot(conversationKey(conversation))
  if (conversation === undefined || !isConversationEntry(entry)) {
    throw conflict(
      `no pending tool call with id ${quoted(ids)} is known to this proxy (unknown or already answered); ` +
        "start a new conversation by ending the messages with a user message",
      "messages",
    )
  }
  if (conversations.size > 1) {
    throw badRequest("the tool results answer tool calls of different conversations", "messages")
  }
  const open = await host.findRequest(entry.request)
  if (open === undefined || open.conversationId !== conversation) {
    // A sweep declined it as expired: the same 410 as an answer the claim finds too late.
    const decision = open === undefined ? await host.getDecision(entry.request) : undefined
    if (decision?.ok === false && decision.reason === "expired")
      throw expiredError(entry.request, entry.expiresAt ?? "(unknown)")
    if (open === undefined && (await failedForGood(host, entry.request))) throw failedTooOften()
    throw conflict("these tool results were already answered; the conversation has moved on", "messages")
  }
  const pending = open.request
  const modelIds = new Map(entry.calls.map((c) => [c.id, c.callId]))
  const stray = ids.filter((id) => !modelIds.has(id))
  if (stray.length > 0) {
    const expected = quoted(entry.calls.map((c) => c.id))
    throw badRequest(
      `tool call id ${quoted(stray)} is not one of the pending tool calls (${expected})`,
      "messages",
    )
  }
  // Caller results carry no error flag, so every result is a plain output. Calls the caller
  // left unanswered get an explicit error result from the loop, never a silent gap.
  const answer = relayAnswer(
    pending.id,
    results.map((r) => ({ id: modelIds.get(r.id)!, output: r.output })),
  )
  const settle = { callIds: entry.calls.map((c) => c.id), digest, ...owner(caller) }
  return { continuation: { conversation, pending, answer, tools: entry.tools, settle } }
}

/**
 * Whether request `requestId`'s resumes failed for good (`maxAttempts`): a store host lists
 * those (`listFailed`); another host's refusal says it in its message only, so this is false.
 */
export async function failedForGood(host: RunHost, requestId: string): Promise<boolean> {
  const listFailed = (host as { listFailed?: () => Promise<{ request: Request }[]> }).listFailed
  if (typeof listFailed !== "function") return false
  const failed = await listFailed.call(host).catch(() => [])
  return failed.some((entry) => entry.request.id === requestId)
}

/** The turn an identical earlier delivery produced; other results for answered calls are a conflict. */
async function replay(store: DurableStore, entries: CallEntry[], digest: string): Promise<Followed> {
  const keys = new Set(entries.map((e) => e.answered))
  const record = keys.size === 1 ? await store.getSnapshot([...keys][0]!) : undefined
  const stored = record as Partial<ReplayEntry> | undefined
  if (stored?.digest !== digest || stored.turn === undefined) {
    throw conflict(
      "these tool calls were already answered with other results; the conversation has moved on",
      "messages",
    )
  }
  return { replay: stored.turn, conversation: entries[0]!.conversation }
}

/** Identifies a set of results independently of their order. */
function digestOf(results: CallerResult[]): string {
  const sorted = [...results].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  return createHash("sha256")
    .update(JSON.stringify(sorted.map((r) => [r.id, r.output])))
    .digest("hex")
}

function owner(caller: string | undefined): { caller?: string } {
  return caller === undefined ? {} : { caller }
}

function quoted(ids: string[]): string {
  return ids.map((id) => JSON.stringify(id)).join(", ")
}

function isCallEntry(value: unknown): value is CallEntry {
  return typeof (value as Partial<CallEntry> | undefined)?.conversation === "string"
}

function isConversationEntry(value: unknown): value is ConversationEntry {
  const entry = value as Partial<ConversationEntry> | undefined
  return Array.isArray(entry?.tools) && Array.isArray(entry.calls) && typeof entry.request === "string"
}
