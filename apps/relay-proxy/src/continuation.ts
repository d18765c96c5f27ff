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
 *   relay-proxy/delivery/<conversation>/<request> → { digest }  (results given to the host)
 *   relay-proxy/replay/<conversation>/<request> → { digest, turn, halt? }   (once answered)
 * The caller echoes its ids as `tool_call_id` (chat) or `call_id` (Responses); the proxy maps
 * them back to the model's ids. A redelivery of the very same results after the run moved on (an
 * SDK retrying a request whose response it lost) gets the same turn again from the replay
 * record, without a model call. When the delivery that applied them never answered (its process
 * died mid-resume and another host's sweep finished the run), the delivery record tells that
 * these results were the ones applied, and the redelivery settles the turn from the run's result
 * as that delivery would have. The replay record is written once (the first settler wins), so
 * every settler of one request gives the caller the same turn and indexes the same next halt.
 * The index lives in the proxy's store (the shorthand's: the one
 * the transcripts live in), so any proxy process on that store and host can continue the
 * conversation; the run itself, its open request and its decisions are the host's.
 */

const callKey = (callerCallId: string) => `relay-proxy/call/${callerCallId}`
const conversationKey = (conversation: string) => `relay-proxy/conversation/${conversation}`
const replayKey = (conversation: string, request: string) => `relay-proxy/replay/${conversation}/${request}`
const deliveryKey = (conversation: string, request: string) =>
  `relay-proxy/delivery/${conversation}/${request}`

interface CallEntry {
  conversation: string
  caller?: string
  /** The replay record's key, once the request the call rode was answered. */
  answered?: string
}

/** What the index keeps of a conversation's halt: what the caller's results are matched against. */
export interface ConversationEntry {
  /** The tool declarations of the request that halted (a follow-up without `tools` uses them). */
  tools: ChatToolDeclaration[]
  /** The open relay request. */
  request: string
  /** The halt's relay calls: the caller's id (`id`) and the model's (`callId`) of each. */
  calls: { id: string; callId: string }[]
  /** The caller's key fingerprint; absent without caller authentication. */
  caller?: string
  /** The open request's `expiresAt`, named by the 410 once it was declined as expired. */
  expiresAt?: string
}

interface ReplayEntry {
  digest: string
  turn: RelayTurn
  /** The conversation entry of the halt `turn` ends on; absent when the run ended (or in older records). */
  halt?: ConversationEntry
}

/** Which results were given to the host for a request, before it was asked to apply them. */
interface DeliveryEntry {
  digest: string
}

/** A caller's result for one tool call it was given. */
export interface CallerResult {
  id: string
  output: string
}

/** A follow-up request matched to its halted conversation, with the answer built from its results. */
export interface Continuation {
  conversation: string
  /** The id of the relay request the results answer. */
  request: string
  answer: Answer
  /** The tool declarations stored with the conversation. */
  tools: ChatToolDeclaration[]
  /** The caller ids of the pending request's calls, and the digest of the caller's results. */
  settle: { callIds: string[]; digest: string; caller?: string }
  /**
   * True when these very results were already applied by a delivery that never answered (its
   * process died; a sweep finished the run): the turn is the run's result, nothing is delivered.
   */
  applied: boolean
}

/** A halted run's next turn as one settler proposes it: the turn, and the halt to index with it. */
export interface ProposedTurn {
  /** The turn the caller gets. */
  turn: RelayTurn
  /** The halt the turn ends on, indexed with it; absent when the run ended. */
  halt?: ConversationEntry
}

/** What a follow-up's results lead to: a halted run to resume, or the turn they already produced. */
export type Followed = { continuation: Continuation } | { replay: RelayTurn; conversation: string }

/** A fresh caller-facing tool-call id: unguessable, and in OpenAI's own `call_…` form. */
function callerCallId(): string {
  return `call_${randomBytes(16).toString("base64url")}`
}

/**
 * The caller's view of a halt: its relay calls under fresh caller ids, and the conversation
 * entry that indexes them. Nothing is written.
 */
export function haltOf(
  pending: Request,
  tools: ChatToolDeclaration[],
  opts: { caller?: string },
): { calls: CallerCall[]; entry: ConversationEntry } {
  const calls = relayCallsOf(pending).map((call) => ({ ...call, callId: call.id, id: callerCallId() }))
  const entry: ConversationEntry = {
    tools,
    request: pending.id,
    calls: calls.map(({ id, callId }) => ({ id, callId })),
    ...owner(opts.caller),
    ...(pending.expiresAt !== undefined ? { expiresAt: pending.expiresAt } : {}),
  }
  return { calls, entry }
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
  const { calls, entry } = haltOf(pending, tools, opts)
  await indexHalt(store, conversation, entry)
  return calls
}

/** Writes a halt's conversation entry, then its call entries. */
async function indexHalt(store: DurableStore, conversation: string, entry: ConversationEntry): Promise<void> {
  // The conversation entry first: an index entry must never point at a stale one.
  await store.putSnapshot(conversationKey(conversation), entry)
  for (const call of entry.calls) {
    await store.putSnapshot(callKey(call.id), { conversation, ...owner(entry.caller) } satisfies CallEntry)
  }
}

/**
 * Records which results a continuation gives the host, before it is asked to apply them: a
 * redelivery of the same results after the run moved on without an answer (its delivery's
 * process died) is then known to be the one applied. The first record stays.
 *
 * @throws ProxyError 409 when other results for the same calls were given first (the host keeps
 *   and applies the first ones).
 */
export async function recordDelivery(store: DurableStore, continuation: Continuation): Promise<void> {
  const { conversation, request, settle } = continuation
  const key = deliveryKey(conversation, request)
  if (await store.createSnapshot(key, { digest: settle.digest } satisfies DeliveryEntry)) return
  const recorded = (await store.getSnapshot(key)) as Partial<DeliveryEntry> | undefined
  if (recorded?.digest !== settle.digest) throw otherResults()
}

/**
 * Records that a continuation was applied and what it produced, and returns the turn the caller
 * gets. The first settler of a request writes the replay record with its proposed turn; any
 * other (a redelivery racing the delivery that applied the results) gets that turn instead of its
 * own. Each then indexes the turn's halt (unless the conversation already moved past it) and
 * points the answered calls at the replay record. Call after the resumed run was saved.
 */
export async function settleHalt(
  store: DurableStore,
  continuation: Continuation,
  proposed: ProposedTurn,
): Promise<RelayTurn> {
  const { conversation, request, settle } = continuation
  const key = replayKey(conversation, request)
  const mine: ReplayEntry = {
    digest: settle.digest,
    turn: proposed.turn,
    ...(proposed.halt !== undefined ? { halt: proposed.halt } : {}),
  }
  let settled = mine
  if (!(await store.createSnapshot(key, mine))) {
    const stored = (await store.getSnapshot(key)) as Partial<ReplayEntry> | undefined
    if (stored?.digest !== settle.digest || stored.turn === undefined) throw otherResults()
    settled = stored as ReplayEntry
  }
  const current = await store.getSnapshot(conversationKey(conversation))
  // A later halt's entry stays: the caller already continued past this one.
  const here = !isConversationEntry(current) || current.request === request
  if (settled.halt !== undefined) {
    if (here || current.request === settled.halt.request) await indexHalt(store, conversation, settled.halt)
  } else if (
    settled.turn.toolCalls.length === 0 &&
    isConversationEntry(current) &&
    current.request === request
  ) {
    await store.deleteSnapshot(conversationKey(conversation))
  }
  for (const id of settle.callIds) {
    await store.putSnapshot(callKey(id), {
      conversation,
      ...owner(settle.caller),
      answered: key,
    } satisfies CallEntry)
  }
  await store.deleteSnapshot(deliveryKey(conversation, request))
  return settled.turn
}

/**
 * Finds what the caller's results answer: the halted conversation (with the relay answer built),
 * or, for a redelivery of results already applied, the turn they produced. When the very results
 * given for the request were applied but never settled (the delivery's process died and a sweep
 * finished the run), the continuation is `applied`: its turn is the run's result.
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
  let applied = false
  if (open === undefined || open.conversationId !== conversation) {
    // A sweep declined it as expired: the same 410 as an answer the claim finds too late.
    const decision = open === undefined ? await host.getDecision(entry.request) : undefined
    if (decision?.ok === false && decision.reason === "expired")
      throw expiredError(entry.request, entry.expiresAt ?? "(unknown)")
    if (open === undefined && (await failedForGood(host, entry.request))) throw failedTooOften()
    // Applied, and nobody settled it: these results, if they are the ones given, get its turn.
    if (decision?.ok !== true || !(await deliveredBefore(store, conversation, entry.request, digest)))
      throw conflict("these tool results were already answered; the conversation has moved on", "messages")
    applied = true
  }
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
    entry.request,
    results.map((r) => ({ id: modelIds.get(r.id)!, output: r.output })),
  )
  const settle = { callIds: entry.calls.map((c) => c.id), digest, ...owner(caller) }
  return {
    continuation: { conversation, request: entry.request, answer, tools: entry.tools, settle, applied },
  }
}

/**
 * Whether results with `digest` were the ones given for request `request` (the delivery record,
 * or a replay record a settler died before indexing).
 *
 * @throws ProxyError 409 when other results were.
 */
async function deliveredBefore(
  store: DurableStore,
  conversation: string,
  request: string,
  digest: string,
): Promise<boolean> {
  const records = await Promise.all([
    store.getSnapshot(replayKey(conversation, request)),
    store.getSnapshot(deliveryKey(conversation, request)),
  ])
  const given = records.find((r) => typeof (r as Partial<DeliveryEntry> | undefined)?.digest === "string")
  if (given === undefined) return false
  if ((given as DeliveryEntry).digest !== digest) throw otherResults()
  return true
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
  if (stored?.digest !== digest || stored.turn === undefined) throw otherResults()
  return { replay: stored.turn, conversation: entries[0]!.conversation }
}

/** The refusal of results for calls that other results answered. */
function otherResults() {
  return conflict(
    "these tool calls were already answered with other results; the conversation has moved on",
    "messages",
  )
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
