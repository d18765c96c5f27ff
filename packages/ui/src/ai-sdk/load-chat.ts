import {
  ConfigError,
  type ConversationStore,
  type Message,
  type Request as PendingRequest,
  type RunHost,
  isRelayRequest,
  pendingOfRun,
  relayCallsOf,
} from "@toolnexus/core"
import { isConversationId } from "../internal/conversation-id.js"
import { type TranscriptEntry, transcriptEntries } from "../internal/transcript-turns.js"
import { UIChunkWriter } from "./ui-chunk-writer.js"
import { type UIMessage, UIMessageBuilder } from "./ui-message.js"

/** Options of {@link loadChat}: the chat, and the host (or the handler's store) that keeps it. */
export type LoadChatOptions = {
  /** The chat's id: `useChat`'s `id`, the id the handler was posted. */
  chatId: string
  /**
   * The conversation the handler's `conversationId` option maps this chat to (its result for
   * this chat and request); default `chatId`, the handler's own default.
   */
  conversationId?: string
} & (
  | {
      /** The host whose run (the conversation's id) keeps the chat. */
      host: Pick<RunHost, "transcript" | "listPending">
      /** Not with `host`: one source of the chat. */
      store?: never
    }
  | {
      /** The chat handler's store (`client.conversationStore()`, its `store` option). */
      store: ConversationStore
      /** Not with `store`: one source of the chat. */
      host?: never
    }
)

/**
 * The stored conversation of a chat as the AI SDK's `UIMessage[]`, for
 * `useChat({ id: chatId, messages })` after a page reload: each user prompt, and after it one
 * assistant message with what the model did, built by the same writer as the handler's stream.
 * When the conversation waits on a request, its card is on the last message exactly as the
 * stream left it (a `tool-approval-request` on the call's tool part, a `data-toolnexus-request`
 * part for a question or input), so answering it posts through the handler as before. `[]` for
 * a chat with no stored conversation. Ids are stable across loads (`tnx-<index>`).
 *
 * @throws ConfigError when neither `host` nor `store` is given, or the conversation id is not
 *   1–200 characters.
 * @example
 * // GET /api/chat/:id/messages
 * const messages = await loadChat({ host, chatId })
 * return Response.json(messages)
 * // page: useChat({ id: chatId, messages })
 */
export async function loadChat(opts: LoadChatOptions): Promise<UIMessage[]> {
  const id = opts.conversationId ?? opts.chatId
  if (!isConversationId(id))
    throw new ConfigError("loadChat: the chat id must be a string of 1 to 200 characters")
  let transcript: Message[] | undefined
  let pending: PendingRequest | undefined
  if (opts.host !== undefined && typeof opts.host.transcript === "function") {
    const { host } = opts
    ;[transcript, pending] = await Promise.all([
      host.transcript(id),
      // The run that holds a request: a runtime's key, else its conversation (as the host's cancel reads it).
      pendingOfRun(host, id).then((entries) => entries[0]?.request),
    ])
  } else if (opts.store !== undefined && typeof opts.store.get === "function") {
    const { store } = opts
    ;[transcript, pending] = await Promise.all([store.get(id), store.getPending?.(id)])
  } else throw new ConfigError("loadChat: give `host` (a RunHost) or `store` (the chat handler's store)")
  return uiMessagesOf(transcriptEntries(transcript ?? []), pending)
}

/** The UI messages of a transcript's entries; `pending` is replayed on the last assistant message. */
function uiMessagesOf(entries: TranscriptEntry[], pending: PendingRequest | undefined): UIMessage[] {
  const messages: UIMessage[] = []
  // A parked turn stores a placeholder result for each call it halted on (the request's
  // prompt); the live stream showed those calls waiting, so the replay leaves them out.
  const held = new Set<unknown>(
    pending === undefined
      ? []
      : isRelayRequest(pending)
        ? relayCallsOf(pending).map((c) => c.id)
        : [pending.data?.callId],
  )
  const lastEvents = entries.findLastIndex((e) => e.kind === "events")
  let last: { builder: UIMessageBuilder; writer: UIChunkWriter } | undefined
  for (const [i, entry] of entries.entries()) {
    if (entry.kind === "user") {
      messages.push({ id: `tnx-${entry.index}`, role: "user", parts: entry.parts })
      last = undefined
      continue
    }
    const builder = new UIMessageBuilder(`tnx-${entry.index}`)
    const writer = new UIChunkWriter(builder)
    for (const ev of entry.events)
      if (i !== lastEvents || ev.type !== "tool_result" || !held.has(ev.id)) writer.event(ev)
    messages.push(builder.message)
    last = { builder, writer }
  }
  if (pending !== undefined) {
    if (last === undefined) {
      const builder = new UIMessageBuilder("tnx-pending")
      last = { builder, writer: new UIChunkWriter(builder) }
      messages.push(builder.message)
    }
    last.writer.event({ type: "pending", request: pending })
  }
  last?.writer.end(pending ? { status: "pending" } : undefined)
  return messages
}
