import type { Message } from "@a2a-js/sdk"
import {
  ContentTypeNotSupportedError,
  RequestMalformedError,
  UnsupportedOperationError,
} from "@a2a-js/sdk/errors"
import type { ServerCallContext } from "@a2a-js/sdk/server"
import type { Answer } from "@toolnexus/core"
import { stateName } from "../task-view.js"
import type { TaskRecord } from "./task-record.js"

/** @internal The owner key a token's tasks are filed under (set by the fetch handler). */
export const OWNER_STATE_KEY = "toolnexus.a2a.owner"

/** @internal The owner of the call (a hash of its bearer token), if any. */
export function ownerOf(context: ServerCallContext): string | undefined {
  const owner = context.state.get(OWNER_STATE_KEY)
  return typeof owner === "string" ? owner : undefined
}

/** @internal `-32004` for a message on a task that waits for nothing. */
export function notWaiting(record: TaskRecord, resuming: boolean): UnsupportedOperationError {
  const state = resuming ? "working (its answer is being applied)" : stateName(record.state)
  return new UnsupportedOperationError({ message: `task ${record.id} is ${state}, not waiting for input` })
}

/** @internal `-32004` for an approval given after its request's `expiresAt`. */
export function expired(record: TaskRecord, expiresAt: string | undefined): UnsupportedOperationError {
  return new UnsupportedOperationError({
    message: `task ${record.id}: its request expired${expiresAt ? ` at ${expiresAt}` : ""}; it can be declined, no longer approved`,
  })
}

/** @internal Text parts by line, data parts as JSON objects; a file part or neither kind is refused. */
export function readParts(message: Message): { text: string; said: string; data: Record<string, unknown>[] } {
  const lines: string[] = []
  const said: string[] = []
  const data: Record<string, unknown>[] = []
  let parts = 0
  for (const part of message.parts) {
    const content = part.content
    if (content?.$case === "text") {
      lines.push(content.value)
      said.push(content.value)
      parts++
    } else if (content?.$case === "data") {
      if (content.value && typeof content.value === "object" && !Array.isArray(content.value))
        data.push(content.value)
      lines.push(JSON.stringify(content.value))
      parts++
    } else if (content?.$case === "url" || content?.$case === "raw") {
      throw new ContentTypeNotSupportedError({ message: "file parts are not accepted" })
    }
  }
  if (parts === 0) throw new RequestMalformedError({ message: "the message has no text or data part" })
  return { text: lines.join("\n"), said: said.join("\n"), data }
}

/**
 * @internal The Answer a message on a halted task carries: a data part `{answer: {ok, data?,
 * reason?}}` as it is, else `ok: true` with the text and the keys of the object data parts —
 * except for an approval, where free text cannot say yes ("no, do not book it" would approve),
 * so only the data part answers it.
 */
export function answerOf(
  requestId: string,
  kind: string | undefined,
  said: string,
  data: Record<string, unknown>[],
): Answer {
  const explicit = data.find((d) => d.answer && typeof d.answer === "object")?.answer as
    | { id?: unknown; ok?: unknown; data?: unknown; reason?: unknown }
    | undefined
  if (explicit) {
    if (explicit.id !== undefined && explicit.id !== requestId)
      throw new RequestMalformedError({ message: "answer.id is not the open request's id" })
    if (typeof explicit.ok !== "boolean")
      throw new RequestMalformedError({ message: "answer.ok must be a boolean" })
    const answer: Answer = { id: requestId, ok: explicit.ok }
    if (explicit.data && typeof explicit.data === "object")
      answer.data = explicit.data as Record<string, unknown>
    if (!explicit.ok && typeof explicit.reason === "string") answer.reason = explicit.reason
    return answer
  }
  if (kind === "approval")
    throw new RequestMalformedError({
      message:
        'an approval is answered only by a data part {"answer": {"ok": true}} (approve) or {"answer": {"ok": false, "reason"?: string}} (decline); text alone neither approves nor declines',
    })
  return { id: requestId, ok: true, data: Object.assign({ text: said }, ...data) }
}
