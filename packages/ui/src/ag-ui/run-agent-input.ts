import {
  type Answer,
  type ContentPart,
  type Prompt,
  type Request as PendingRequest,
  isRelayRequest,
  relayAnswer,
  relayCallsOf,
} from "@toolnexus/core"
import { type Refusal, badRequest } from "../internal/http-error.js"

/** The parts of a `RunAgentInput` the handler reads. */
export interface AgUiInput {
  threadId: string
  runId: string
  messages: AgUiMessage[]
  tools: { name: string; description: string; parameters?: unknown }[]
  resume?: { interruptId: string; status: "resolved" | "cancelled"; payload?: unknown }[]
}

/** A posted AG-UI message. */
export interface AgUiMessage {
  id: string
  role: string
  content?: unknown
  toolCallId?: unknown
  error?: unknown
  toolCalls?: unknown
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v)

/** @internal Checks a `RunAgentInput`; a `Refusal` (400) names the first problem. */
export function readRunAgentInput(body: unknown): AgUiInput | Refusal {
  if (!isObject(body)) return badRequest("the body must be a JSON RunAgentInput object")
  if (typeof body.threadId !== "string") return badRequest("`threadId` must be a string")
  if (typeof body.runId !== "string") return badRequest("`runId` must be a string")
  if (!Array.isArray(body.messages)) return badRequest("`messages` must be an array")
  for (const [i, m] of body.messages.entries())
    if (!isObject(m) || typeof m.id !== "string" || typeof m.role !== "string")
      return badRequest(`messages[${i}] must be a message {id, role, …}`)
  const tools = body.tools ?? []
  if (!Array.isArray(tools)) return badRequest("`tools` must be an array")
  for (const [i, t] of tools.entries())
    if (!isObject(t) || typeof t.name !== "string" || typeof t.description !== "string")
      return badRequest(`tools[${i}] must be a tool {name, description, parameters?}`)
  if (body.resume !== undefined) {
    if (!Array.isArray(body.resume)) return badRequest("`resume` must be an array")
    for (const [i, r] of body.resume.entries())
      if (
        !isObject(r) ||
        typeof r.interruptId !== "string" ||
        (r.status !== "resolved" && r.status !== "cancelled")
      )
        return badRequest(`resume[${i}] must be {interruptId, status: "resolved" | "cancelled", payload?}`)
  }
  const input: AgUiInput = {
    threadId: body.threadId,
    runId: body.runId,
    messages: body.messages as AgUiMessage[],
    tools: tools as AgUiInput["tools"],
  }
  if (body.resume !== undefined && body.resume.length > 0) input.resume = body.resume as AgUiInput["resume"]
  return input
}

/**
 * The Answer of `input.resume[]`: the entry for the open request when there is one, else the
 * first. `cancelled` ⇒ `{ok:false, reason:"cancelled"}`; `resolved` ⇒ `ok:true` with the
 * payload as `data` (a non-object as `{value}`), except `{approved:false}` ⇒ declined.
 */
export function resumeAnswerOf(input: AgUiInput, pendingId: string | undefined): Answer | undefined {
  const entries = input.resume ?? []
  const entry = entries.find((e) => e.interruptId === pendingId) ?? entries[0]
  if (entry === undefined) return undefined
  if (entry.status === "cancelled") return { id: entry.interruptId, ok: false, reason: "cancelled" }
  const payload = entry.payload
  if (isObject(payload) && payload.approved === false)
    return {
      id: entry.interruptId,
      ok: false,
      reason: typeof payload.reason === "string" ? payload.reason : "declined",
    }
  if (payload === undefined) return { id: entry.interruptId, ok: true }
  return { id: entry.interruptId, ok: true, data: isObject(payload) ? payload : { value: payload } }
}

/** The relay answer of the tool messages for the open relay request's calls (others are ignored). */
export function toolMessagesAnswerOf(
  input: AgUiInput,
  pending: PendingRequest | undefined,
): Answer | undefined {
  if (pending === undefined || !isRelayRequest(pending)) return undefined
  const calls = new Set(relayCallsOf(pending).map((c) => c.id))
  const results: { id: string; output: string; isError?: boolean }[] = []
  for (const m of input.messages) {
    if (m.role !== "tool" || typeof m.toolCallId !== "string" || !calls.has(m.toolCallId)) continue
    const output = typeof m.content === "string" ? m.content : textOfParts(m.content)
    if (typeof m.error === "string" && m.error !== "")
      results.push({ id: m.toolCallId, output: output || m.error, isError: true })
    else results.push({ id: m.toolCallId, output })
  }
  return results.length === 0 ? undefined : relayAnswer(pending.id, results)
}

/** The tool-call ids the posted assistant messages show. */
export function knownCallsOf(input: AgUiInput): Set<string> {
  const ids = new Set<string>()
  for (const m of input.messages)
    if (m.role === "assistant" && Array.isArray(m.toolCalls))
      for (const call of m.toolCalls) if (isObject(call) && typeof call.id === "string") ids.add(call.id)
  return ids
}

/** The prompt of a user message: text, or text and image/document parts. */
export function promptOfUser(message: AgUiMessage): Prompt | Refusal {
  if (typeof message.content === "string")
    return message.content.trim() === "" ? badRequest("the user message is empty") : message.content
  if (!Array.isArray(message.content)) return badRequest("the user message has no content")
  const parts: ContentPart[] = []
  for (const part of message.content) {
    if (!isObject(part)) continue
    if (part.type === "text" && typeof part.text === "string") parts.push({ type: "text", text: part.text })
    else if ((part.type === "image" || part.type === "document") && isObject(part.source)) {
      const { type, value, mimeType } = part.source
      if (typeof value !== "string") return badRequest("a content part's source needs a string value")
      if (part.type === "image" && type === "url") parts.push({ type: "image", url: value })
      else if (type === "data" && typeof mimeType === "string")
        parts.push(
          part.type === "image"
            ? { type: "image", data: value, mediaType: mimeType }
            : { type: "file", data: value, mediaType: mimeType },
        )
      else
        return badRequest(
          `a ${part.type} part needs a data source with a mimeType${part.type === "image" ? " or a url source" : ""}`,
        )
    }
  }
  if (parts.length === 0) return badRequest("the user message has no text, image or document part")
  if (parts.every((p) => p.type === "text")) return parts.map((p) => (p as { text: string }).text).join("\n")
  return parts
}

function textOfParts(content: unknown): string {
  if (!Array.isArray(content)) return ""
  return content
    .filter(
      (p): p is { type: "text"; text: string } =>
        isObject(p) && p.type === "text" && typeof p.text === "string",
    )
    .map((p) => p.text)
    .join("\n")
}
