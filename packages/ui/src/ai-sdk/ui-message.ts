import type { UIMessageChunk } from "./ui-message-chunk.js"

/**
 * A tool part of a {@link UIMessage} (`tool-<name>`), in the states the handler's stream leaves
 * it in for a load. A structural copy of the `ai` package's, like {@link UIMessageChunk}.
 */
export type UIToolPart = {
  /** `tool-<name>`: the called tool's name. */
  type: `tool-${string}`
  /** The tool call's id, as the model gave it. */
  toolCallId: string
} & (
  | {
      /** The call is made; no result yet (a relay tool's call waits on `addToolOutput`). */
      state: "input-available"
      /** The call's arguments. */
      input: unknown
    }
  | {
      /** The call waits for approval: answered by `addToolApprovalResponse({ id: approval.id })`. */
      state: "approval-requested"
      /** The call's arguments. */
      input: unknown
      /** The approval asked. */
      approval: {
        /** The toolnexus request's id: the approval response's `id`. */
        id: string
      }
    }
  | {
      /** The call's result. */
      state: "output-available"
      /** The call's arguments. */
      input: unknown
      /** The tool's output text, as the model saw it. */
      output: unknown
    }
  | {
      /** The call's result, an error. */
      state: "output-error"
      /** The call's arguments. */
      input: unknown
      /** The tool's error output, as the model saw it. */
      errorText: string
    }
)

/** A part of a {@link UIMessage}: the members of the `ai` package's `UIMessagePart` that toolnexus writes. */
export type UIMessagePart =
  | {
      /** `"step-start"`: a step (one model turn, or a resumed turn's results) begins. */
      type: "step-start"
    }
  | {
      /** `"text"`: text of the user's prompt or of the model's answer. */
      type: "text"
      /** The text. */
      text: string
      /** `"done"` on the model's text; absent on a user's. */
      state?: "done"
    }
  | {
      /** `"reasoning"`: the model's reasoning text. */
      type: "reasoning"
      /** The reasoning part's id within the message. */
      id?: string
      /** The reasoning text. */
      text: string
      /** Always `"done"` for a stored message. */
      state?: "done"
    }
  | {
      /** `"file"`: an image or file of a user's prompt. */
      type: "file"
      /** Its MIME type (`image/*` when the stored prompt names none). */
      mediaType: string
      /** A `data:` URL, or the image's http(s) URL. */
      url: string
      /** The file's name, when the prompt gave one. */
      filename?: string
    }
  | UIToolPart
  | {
      /** `data-<name>`: `data-toolnexus-request` for a request with no tool part to land on. */
      type: `data-${string}`
      /** The part's id (the request's id). */
      id?: string
      /** The payload (the toolnexus `Request`). */
      data: unknown
    }

/**
 * A message of the AI SDK's `useChat` (`UIMessage` of `ai` 6 and 7, structurally): what
 * `loadChat` returns for `useChat({ messages })`.
 */
export interface UIMessage {
  /** The message's id (a stored message's is stable across loads). */
  id: string
  /** `"user"` for a prompt, `"assistant"` for the model's work on it. */
  role: "user" | "assistant"
  /** The message's parts, in order. */
  parts: UIMessagePart[]
}

/**
 * @internal Builds an assistant message from the chunks the handler's writer emits, part for
 * part as `ai`'s `readUIMessageStream` does on the client: what a page would hold once the
 * stream ended. Only the chunks the writer writes are read.
 */
export class UIMessageBuilder {
  readonly message: UIMessage
  readonly #open = new Map<string, { text: string }>()

  constructor(id: string) {
    this.message = { id, role: "assistant", parts: [] }
  }

  readonly push = (chunk: UIMessageChunk): void => {
    const parts = this.message.parts
    switch (chunk.type) {
      case "start-step":
        parts.push({ type: "step-start" })
        return
      case "text-start": {
        const part: UIMessagePart = { type: "text", text: "", state: "done" }
        this.#open.set(chunk.id, part)
        parts.push(part)
        return
      }
      case "reasoning-start": {
        const part: UIMessagePart = { type: "reasoning", id: chunk.id, text: "", state: "done" }
        this.#open.set(chunk.id, part)
        parts.push(part)
        return
      }
      case "text-delta":
      case "reasoning-delta": {
        const part = this.#open.get(chunk.id)
        if (part) part.text += chunk.delta
        return
      }
      case "tool-input-available":
        parts.push({
          type: `tool-${chunk.toolName}`,
          toolCallId: chunk.toolCallId,
          state: "input-available",
          input: chunk.input,
        })
        return
      case "tool-approval-request":
        this.#tool(chunk.toolCallId, { state: "approval-requested", approval: { id: chunk.approvalId } })
        return
      case "tool-output-available":
        this.#tool(chunk.toolCallId, { state: "output-available", output: chunk.output })
        return
      case "tool-output-error":
        this.#tool(chunk.toolCallId, { state: "output-error", errorText: chunk.errorText })
        return
      // `tool-output-denied` is written only for the decline a post carries, never for a load.
      default:
        if (chunk.type.startsWith("data-") && "data" in chunk) {
          const { type, id, data } = chunk as { type: `data-${string}`; id?: string; data: unknown }
          const same =
            id === undefined ? -1 : parts.findIndex((p) => p.type === type && "id" in p && p.id === id)
          const part: UIMessagePart = id === undefined ? { type, data } : { type, id, data }
          if (same >= 0) parts[same] = part
          else parts.push(part)
        }
    }
  }

  #tool(callId: string, change: Record<string, unknown>): void {
    const parts = this.message.parts
    const index = parts.findIndex((p) => "toolCallId" in p && p.toolCallId === callId)
    if (index < 0) return
    parts[index] = { ...parts[index], ...change } as UIMessagePart
  }
}
