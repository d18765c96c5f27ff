import type { Answer, Request as PendingRequest } from "@toolnexus/core"
import type { ChatHandlerOptions } from "../internal/chat-options.js"
import { type AcceptedRun, ConversationGate } from "../internal/conversation-gate.js"
import { logRefusal, logRunFailure } from "../internal/door-log.js"
import { Refusal, badRequest } from "../internal/http-error.js"
import { LiveRun, SSE_HEADERS } from "../internal/live-run.js"
import { type HandlerInput, type Reply, fetchHandler } from "../internal/reply.js"
import { startRun } from "../internal/start-run.js"
import {
  type ChatPost,
  type PostedMessage,
  approvalAnswerOf,
  promptOf,
  readChatPost,
  relayAnswerOf,
  shownCallsOf,
} from "./posted-message.js"
import { uiChunkFrame } from "./ui-chunk-json.js"
import { type ChunkWriterOptions, type ShownCall, UIChunkWriter } from "./ui-chunk-writer.js"
import type { UIMessageChunk } from "./ui-message-chunk.js"

/** The headers of a UI message stream response (protocol v1). */
const UI_STREAM_HEADERS = { ...SSE_HEADERS, "x-vercel-ai-ui-message-stream": "v1" }

/** The stream's last frame, after the `finish` chunk. */
const DONE = "data: [DONE]\n\n"

/** The chat id of a post: its conversation unless `conversationId` maps it. */
const chatIdOf = (chat: ChatPost): string => chat.id

/** What a post asks for, once read. */
interface Ask {
  accepted: AcceptedRun
  messageId: string | undefined
  writer: ChunkWriterOptions
}

/**
 * A fetch-style handler (Next.js route, Hono, `toNodeListener`) serving the AI SDK's
 * `DefaultChatTransport`: POST runs a turn or applies an answer and streams the UI message
 * stream; GET `…/<id>/stream` resumes a run of that chat still streaming in this process —
 * this handler's from its first frame, any other the host runs here from its first event
 * (`host.events(runId, { fromStart: true })`) — else 204. The transcript is the one the host keeps (run id = the chat's conversation): the
 * posted messages give only the newest user message and the answers on the last message.
 *
 * @throws ConfigError for options that are neither `{ host, agent }` nor the shorthand, or a
 *   shorthand `store` that is not `client.conversationStore()`.
 * @example
 * const handler = createChatHandler({ host, agent: "support" })
 * export const POST = handler // app/api/chat/route.ts
 */
export function createChatHandler(opts: ChatHandlerOptions): (req: globalThis.Request) => Promise<Response> {
  const gate = new ConversationGate(opts)
  const live = new Map<string, LiveRun<UIMessageChunk>>()
  /** Every refusal goes out through here, so each one is logged once. */
  const refuse = (refusal: Refusal, conversation?: string): Reply => {
    logRefusal(opts.logger, "chat", refusal, conversation)
    return refusal.toReply()
  }

  async function post(req: HandlerInput): Promise<Reply> {
    const opened = await gate.openPost(req, readChatPost, chatIdOf)
    if (opened instanceof Refusal) return refuse(opened)
    if (opened instanceof Response) return opened
    const { post: chat, conversation } = opened
    const ask = await read(chat, conversation)
    if (ask instanceof Refusal) return refuse(ask, conversation)

    const run = new LiveRun<UIMessageChunk>(DONE, uiChunkFrame)
    const options = ask.writer // made for this post
    // A new assistant message gets its id here, once: the posting tab and a resumed stream agree on it.
    options.messageId = ask.messageId ?? `msg-${crypto.randomUUID()}`
    options.onError = opts.onError
    const writer = new UIChunkWriter(run, options)
    writer.start()
    // Reconnectable from the moment the run starts, before its first event.
    const previous = live.get(conversation)
    live.set(conversation, run)
    const started = await startRun(ask.accepted, (ev) => writer.event(ev))
    if ("refusal" in started) {
      // A refused post (a second tab) leaves the run that is streaming reconnectable.
      if (live.get(conversation) === run) {
        if (previous && !previous.ended) live.set(conversation, previous)
        else live.delete(conversation)
      }
      return refuse(started.refusal, conversation)
    }
    void started.settled.then((settled) => {
      if (settled.ok) writer.end(settled.result)
      else {
        logRunFailure(opts.logger, "chat", settled.error, conversation)
        writer.fail(settled.error)
      }
      run.end()
      if (live.get(conversation) === run) live.delete(conversation)
    })
    return { status: 200, headers: UI_STREAM_HEADERS, live: run }
  }

  /** Reads a post in the contract's order: `answer`, approval responses, relay outputs, a user message. */
  async function read(chat: ChatPost, conversation: string): Promise<Ask | Refusal> {
    const last: PostedMessage | undefined = chat.messages.at(-1)
    const continued = last?.role === "assistant" ? last.id : undefined
    if (chat.answer !== undefined)
      return answering(conversation, chat.answer, continued, shownCallsOf(last), undefined)
    if (last === undefined) return badRequest("the post asks nothing: no messages and no answer")
    if (last.role === "assistant") {
      const shownCalls = shownCallsOf(last)
      // The host's open requests are scanned only when the post's parts need the chat's own:
      // to pick among several responded approvals, or to read relay outputs.
      const responded = last.parts.filter((p) => p.state === "approval-responded").length
      const outputs = last.parts.some((p) => p.state === "output-available" || p.state === "output-error")
      const pending =
        responded > 1 || (responded === 0 && outputs) ? await gate.pendingOf(conversation) : undefined
      const approval = approvalAnswerOf(last, pending?.id)
      if (approval) return answering(conversation, approval, continued, shownCalls, undefined)
      const relay = relayAnswerOf(last, pending)
      if (relay) {
        const supplied = new Set(((relay.data?.results ?? []) as { id: string }[]).map((r) => r.id))
        return answering(conversation, relay, continued, shownCalls, supplied)
      }
      return badRequest(
        "the post asks nothing: the last message is the assistant's and answers no open request of this chat",
      )
    }
    if (last.role !== "user")
      return badRequest(`the last message must be the user's or the assistant's, not ${last.role}`)
    const prompt = promptOf(last)
    if (prompt instanceof Refusal) return prompt
    // A post of one message is a new chat's first turn (`useChat` posts the whole history):
    // the host is asked to start the run first (a hint only; see `ConversationGate.turn`).
    const firstTurn = chat.messages.length === 1
    return {
      accepted: gate.turn(conversation, prompt, undefined, firstTurn),
      messageId: undefined,
      writer: {},
    }
  }

  async function answering(
    conversation: string,
    answer: unknown,
    messageId: string | undefined,
    shownCalls: Set<string>,
    skipResults: Set<string> | undefined,
  ): Promise<Ask | Refusal> {
    const accepted = await gate.answer(conversation, answer)
    if (accepted instanceof Refusal) return accepted
    const request = accepted.request
    const writer: ChunkWriterOptions = { shownCalls, skipResults }
    const halted = request ? haltedCallOf(request) : undefined
    if (halted) {
      writer.haltedCall = halted
      if (!(answer as Answer).ok) writer.deniedCall = halted.id
    }
    return { accepted, messageId, writer }
  }

  async function resume(req: HandlerInput, chatId: string): Promise<Reply> {
    const conversation = await gate.conversationOf(chatId, req)
    if (conversation instanceof Response) return conversation
    if (conversation instanceof Refusal) return refuse(conversation)
    const run = live.get(conversation)
    if (run !== undefined && !run.ended) return { status: 200, headers: UI_STREAM_HEADERS, live: run }
    // Not streaming through this handler: a run of the chat the host has in flight here (started
    // by another door or by the app) is replayed from the host's events.
    const events = await gate.replay(conversation)
    if (events === undefined) return { status: 204, headers: {}, body: null }
    const replayed = new LiveRun<UIMessageChunk>(DONE, uiChunkFrame)
    const writer = new UIChunkWriter(replayed, {
      messageId: `msg-${crypto.randomUUID()}`,
      onError: opts.onError,
    })
    writer.start()
    void (async () => {
      try {
        for (let next = await events.next(); !next.done; next = await events.next()) writer.event(next.value)
      } catch (error) {
        writer.fail(error)
      }
      // Ended or parked without a `done` of its own: the message closes as the run left it.
      writer.end(undefined)
      replayed.end()
    })()
    return { status: 200, headers: UI_STREAM_HEADERS, live: replayed }
  }

  return fetchHandler(async (req) => {
    if (req.method === "POST") return post(req)
    if (req.method === "GET") {
      const chatId = streamChatId(req.url)
      if (chatId !== undefined) return resume(req, chatId)
    }
    const refusal = new Refusal(
      405,
      "TNX_BAD_REQUEST",
      `${req.method} is not served here (POST a chat, or GET …/<id>/stream)`,
    )
    logRefusal(opts.logger, "chat", refusal)
    return refusal.toReply({ allow: "POST, GET" })
  })
}

/** The chat id of a `…/<id>/stream` URL (`reconnectToStream`), else `undefined`. */
function streamChatId(url: string): string | undefined {
  const segments = new URL(url).pathname.split("/")
  if (segments.length < 3 || segments.at(-1) !== "stream") return undefined
  try {
    const id = decodeURIComponent(segments.at(-2) ?? "")
    return id === "" ? undefined : id
  } catch {
    return undefined
  }
}

/** The tool call a non-relay request halted, as the loop stamped it on `data`. */
function haltedCallOf(request: PendingRequest): ShownCall | undefined {
  const data = request.data
  if (request.kind === "tool_call" || typeof data?.callId !== "string" || Array.isArray(data.path))
    return undefined
  return { id: data.callId, name: typeof data.tool === "string" ? data.tool : "tool", input: data.args ?? {} }
}
