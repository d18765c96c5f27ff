import type { Answer, ContentPart, Prompt, Request } from "@toolnexus/core"
import { isRelayRequest, relayAnswer, relayCallsOf } from "@toolnexus/core"
import { type Refusal, badRequest } from "../internal/http-error.js"

/** The parts of a posted `UIMessage` the handler reads; everything else in it is ignored. */
export interface PostedPart {
  type: string
  text?: unknown
  toolCallId?: unknown
  state?: unknown
  output?: unknown
  errorText?: unknown
  approval?: unknown
  mediaType?: unknown
  url?: unknown
  filename?: unknown
}

/** A posted `UIMessage`: `{id, role, parts}`. */
export interface PostedMessage {
  id: string
  role: string
  parts: PostedPart[]
}

/** `DefaultChatTransport`'s body, checked. */
export interface ChatPost {
  id: string
  messages: PostedMessage[]
  trigger: "submit-message"
  messageId?: string
  answer?: unknown
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v)

/** @internal Checks a POST body's shape; a `Refusal` (400) names the first problem. */
export function readChatPost(body: unknown): ChatPost | Refusal {
  if (!isObject(body)) return badRequest("the body must be a JSON object")
  if (typeof body.id !== "string") return badRequest("`id` (the chat id) must be a string")
  if (!Array.isArray(body.messages)) return badRequest("`messages` must be an array of UI messages")
  const messages: unknown[] = body.messages
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]
    if (!isObject(m) || typeof m.id !== "string" || typeof m.role !== "string" || !Array.isArray(m.parts))
      return badRequest(`messages[${i}] must be a UI message {id, role, parts}`)
    for (const p of m.parts as unknown[])
      if (!isObject(p) || typeof p.type !== "string")
        return badRequest(`messages[${i}].parts must be objects with a string type`)
  }
  if (body.trigger === "regenerate-message")
    return badRequest("trigger regenerate-message is not supported: the stored transcript is never rewritten")
  if (body.trigger !== "submit-message")
    return badRequest(`unknown trigger ${JSON.stringify(body.trigger)} (expected "submit-message")`)
  if (body.messageId !== undefined && typeof body.messageId !== "string")
    return badRequest("`messageId` must be a string when given")
  const post: ChatPost = {
    id: body.id,
    messages: body.messages as PostedMessage[],
    trigger: "submit-message",
  }
  if (typeof body.messageId === "string") post.messageId = body.messageId
  if (body.answer !== undefined) post.answer = body.answer
  return post
}

/** True for a tool part (`tool-<name>` or `dynamic-tool`). */
export function isToolPart(part: PostedPart): boolean {
  return part.type === "dynamic-tool" || part.type.startsWith("tool-")
}

/** The tool-call ids an assistant message shows. */
export function shownCallsOf(message: PostedMessage | undefined): Set<string> {
  const ids = new Set<string>()
  if (message?.role !== "assistant") return ids
  for (const part of message.parts)
    if (isToolPart(part) && typeof part.toolCallId === "string") ids.add(part.toolCallId)
  return ids
}

/**
 * The answer an `approval-responded` tool part gives (`addToolApprovalResponse`): the one for
 * `pendingId` when several are responded, else the first. `undefined` when there is none.
 */
export function approvalAnswerOf(message: PostedMessage, pendingId: string | undefined): Answer | undefined {
  const responded: { id: string; approved: boolean; reason?: string }[] = []
  for (const part of message.parts) {
    if (!isToolPart(part) || part.state !== "approval-responded" || !isObject(part.approval)) continue
    const { id, approved, reason } = part.approval
    if (typeof id !== "string") continue
    responded.push({ id, approved: approved === true, ...(typeof reason === "string" ? { reason } : {}) })
  }
  const chosen = responded.find((r) => r.id === pendingId) ?? responded[0]
  if (chosen === undefined) return undefined
  if (chosen.approved) return { id: chosen.id, ok: true }
  return { id: chosen.id, ok: false, reason: chosen.reason ?? "declined" }
}

/**
 * The relay answer of `addToolOutput` parts for the calls of the open relay request (parts of
 * other calls are ignored: the stored transcript decides which calls exist).
 */
export function relayAnswerOf(message: PostedMessage, pending: Request | undefined): Answer | undefined {
  if (pending === undefined || !isRelayRequest(pending)) return undefined
  const calls = new Set(relayCallsOf(pending).map((c) => c.id))
  const results: { id: string; output: string; isError?: boolean }[] = []
  for (const part of message.parts) {
    if (!isToolPart(part) || typeof part.toolCallId !== "string" || !calls.has(part.toolCallId)) continue
    if (part.state === "output-available")
      results.push({
        id: part.toolCallId,
        output: typeof part.output === "string" ? part.output : (JSON.stringify(part.output) ?? ""),
      })
    else if (part.state === "output-error")
      results.push({ id: part.toolCallId, output: String(part.errorText ?? ""), isError: true })
  }
  return results.length === 0 ? undefined : relayAnswer(pending.id, results)
}

/** The prompt of a user message: text parts joined by newlines, file parts as content parts. */
export function promptOf(message: PostedMessage): Prompt | Refusal {
  const texts: string[] = []
  const files: ContentPart[] = []
  for (const part of message.parts) {
    if (part.type === "text" && typeof part.text === "string") texts.push(part.text)
    else if (part.type === "file") {
      const file = filePart(part)
      if (typeof file === "string") return badRequest(file)
      files.push(file)
    }
  }
  const text = texts.join("\n")
  if (files.length === 0)
    return text.trim() === "" ? badRequest("the user message has no text or file part") : text
  return text === "" ? files : [{ type: "text", text }, ...files]
}

function filePart(part: PostedPart): ContentPart | string {
  const { url, mediaType, filename } = part
  if (typeof url !== "string" || typeof mediaType !== "string")
    return "a file part needs a string url and mediaType"
  const data = /^data:[^;,]*(?:;[^,]*)?;base64,(.*)$/s.exec(url)?.[1]
  if (mediaType.startsWith("image/")) {
    if (data !== undefined) return { type: "image", data, mediaType }
    if (/^https?:\/\//.test(url)) return { type: "image", url }
    return "an image part's url must be a base64 data URL or an http(s) URL"
  }
  if (data === undefined) return "a file part's url must be a base64 data URL"
  return { type: "file", data, mediaType, ...(typeof filename === "string" ? { filename } : {}) }
}
