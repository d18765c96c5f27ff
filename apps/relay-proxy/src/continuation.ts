import { type Answer, type Request, relayAnswer, relayCallsOf } from "@toolnexus/core"
import type { DurableStore } from "@toolnexus/durable"
import type { ChatMessage, ChatToolDeclaration } from "./openai-shapes.js"
import { ProxyError, badRequest } from "./proxy-error.js"

/*
 * How a follow-up request finds its conversation.
 *
 * The caller only ever sees the tool-call ids (they are the model's own, passed through
 * unchanged), and an OpenAI caller must echo them as `tool_call_id`. So when a run halts on
 * relay calls, every call id is indexed in the store's snapshot table:
 *   relay-proxy/call/<tool_call_id>        → { conversation, request }
 *   relay-proxy/conversation/<conversation> → { tools }   (the declarations, for follow-ups without `tools`)
 * A request ending in `role: "tool"` messages is looked up by their ids. The index lives in the
 * same durable store as the transcript, so any proxy process on that store can continue it.
 */

const callKey = (callId: string) => `relay-proxy/call/${callId}`
const conversationKey = (conversation: string) => `relay-proxy/conversation/${conversation}`

interface CallEntry {
  conversation: string
  /** The relay request the call rides; a later halt of the same conversation has another id. */
  request: string
  /** Epoch ms after which the caller's results are refused; absent = never. */
  expiresAt?: number
}

interface ConversationEntry {
  tools: ChatToolDeclaration[]
}

/** A follow-up request matched to its halted conversation, with the answer built from its tool messages. */
export interface Continuation {
  conversation: string
  pending: Request
  answer: Answer
  /** The tool declarations stored with the conversation. */
  tools: ChatToolDeclaration[]
}

/** Indexes a conversation's halt so that the caller's tool results can find it again. */
export async function rememberHalt(
  store: DurableStore,
  conversation: string,
  pending: Request,
  tools: ChatToolDeclaration[],
  ttlMs?: number,
): Promise<void> {
  await store.putSnapshot(conversationKey(conversation), { tools } satisfies ConversationEntry)
  const expiresAt = ttlMs === undefined ? undefined : Date.now() + ttlMs
  for (const call of relayCallsOf(pending)) {
    const entry: CallEntry = { conversation, request: pending.id, ...(expiresAt ? { expiresAt } : {}) }
    await store.putSnapshot(callKey(call.id), entry)
  }
}

/** Drops the index entries of an answered request; a redelivery then gets a clear 409. */
export async function forgetHalt(store: DurableStore, pending: Request): Promise<void> {
  for (const call of relayCallsOf(pending)) await store.deleteSnapshot(callKey(call.id))
}

/**
 * Finds the halted conversation the trailing tool messages answer and builds the relay answer.
 *
 * @throws ProxyError 409 when no id answers a pending request (unknown, expired or already
 *   answered); 400 when the messages mix conversations, repeat an id, or answer calls that are
 *   not part of the pending request.
 */
export async function findContinuation(
  store: DurableStore,
  toolMessages: Extract<ChatMessage, { role: "tool" }>[],
): Promise<Continuation> {
  const ids = toolMessages.map((m) => m.toolCallId)
  const repeated = ids.find((id, i) => ids.indexOf(id) !== i)
  if (repeated !== undefined) {
    throw badRequest(`two tool messages answer tool_call_id ${JSON.stringify(repeated)}`, "messages")
  }
  const entries = await Promise.all(ids.map((id) => store.getSnapshot(callKey(id))))
  const known = entries.filter(isCallEntry)
  if (known.length === 0) {
    throw new ProxyError(
      409,
      "conflict_error",
      `no pending tool call with id ${quoted(ids)} is known to this proxy (unknown or already answered); ` +
        "start a new conversation by ending the messages with a user message",
      "messages",
    )
  }
  const first = known[0]!
  const conversation = first.conversation
  if (known.some((e) => e.conversation !== conversation || e.request !== first.request)) {
    throw badRequest("the tool messages answer tool calls of different turns or conversations", "messages")
  }
  if (first.expiresAt !== undefined && Date.now() > first.expiresAt) {
    throw new ProxyError(
      409,
      "conflict_error",
      `the tool calls these results answer expired at ${new Date(first.expiresAt).toISOString()}; ` +
        "start a new conversation by ending the messages with a user message",
      "messages",
    )
  }
  const pending = await store.getPending(conversation)
  if (pending === undefined || pending.id !== first.request) {
    throw new ProxyError(
      409,
      "conflict_error",
      "these tool results were already answered; the conversation has moved on",
      "messages",
    )
  }
  const calls = relayCallsOf(pending)
  const stray = ids.filter((id) => !calls.some((c) => c.id === id))
  if (stray.length > 0) {
    const expected = quoted(calls.map((c) => c.id))
    throw badRequest(
      `tool_call_id ${quoted(stray)} is not one of the pending tool calls (${expected})`,
      "messages",
    )
  }
  // OpenAI tool messages carry no error flag, so every result is a plain output. Calls the caller
  // left unanswered get an explicit error result from the loop, never a silent gap.
  const answer = relayAnswer(
    pending.id,
    toolMessages.map((m) => ({ id: m.toolCallId, output: m.content })),
  )
  const stored = await store.getSnapshot(conversationKey(conversation))
  const tools = isConversationEntry(stored) ? stored.tools : []
  return { conversation, pending, answer, tools }
}

function quoted(ids: string[]): string {
  return ids.map((id) => JSON.stringify(id)).join(", ")
}

function isCallEntry(value: unknown): value is CallEntry {
  const entry = value as Partial<CallEntry> | undefined
  return typeof entry?.conversation === "string" && typeof entry.request === "string"
}

function isConversationEntry(value: unknown): value is ConversationEntry {
  return Array.isArray((value as Partial<ConversationEntry> | undefined)?.tools)
}
