/**
 * The members of the `ai` package's `UIMessageChunk` (UI message stream protocol v1, `ai`
 * 7.x) that the handler writes: a structural copy, so that no published declaration needs
 * `ai` (which declares Node ≥ 22) installed. A value of this type is a valid `ai` chunk.
 */
export type UIMessageChunk =
  | {
      /** `"start"`: opens the assistant message the following chunks build. */
      type: "start"
      /**
       * The assistant message's id (new, or the posted message's when it is continued); absent when none
       * was given.
       */
      messageId?: string
      /** Metadata for the message, as `ai` takes it; the handler never sets it. */
      messageMetadata?: unknown
    }
  | {
      /** `"start-step"`: opens a step (one model turn, or a resumed turn's tool results). */
      type: "start-step"
    }
  | {
      /** `"finish-step"`: closes the open step. */
      type: "finish-step"
    }
  | {
      /** `"text-start"`: opens a text part (the model's text or refusal). */
      type: "text-start"
      /** The text part's id within the message (`text-<n>`), repeated by its deltas and its end. */
      id: string
    }
  | {
      /** `"text-delta"`: more text for an open text part. */
      type: "text-delta"
      /** The id of the text part the delta belongs to. */
      id: string
      /** The text to append (never empty). */
      delta: string
    }
  | {
      /** `"text-end"`: closes a text part. */
      type: "text-end"
      /** The id of the text part it closes. */
      id: string
    }
  | {
      /** `"reasoning-start"`: opens a reasoning part. */
      type: "reasoning-start"
      /** The reasoning part's id within the message (`reasoning-<n>`), repeated by its deltas and its end. */
      id: string
    }
  | {
      /** `"reasoning-delta"`: more reasoning text for an open reasoning part. */
      type: "reasoning-delta"
      /** The id of the reasoning part the delta belongs to. */
      id: string
      /** The reasoning text to append (never empty). */
      delta: string
    }
  | {
      /** `"reasoning-end"`: closes a reasoning part. */
      type: "reasoning-end"
      /** The id of the reasoning part it closes. */
      id: string
    }
  | {
      /** `"tool-input-available"`: a tool call with its complete arguments (a tool part). */
      type: "tool-input-available"
      /** The tool call's id, as the model gave it. */
      toolCallId: string
      /** The name of the called tool. */
      toolName: string
      /** The call's arguments, parsed from the model's JSON. */
      input: unknown
    }
  | {
      /** `"tool-output-available"`: a call's successful result. */
      type: "tool-output-available"
      /** The id of the call the result belongs to. */
      toolCallId: string
      /** The tool's output text, as the model sees it. */
      output: unknown
    }
  | {
      /** `"tool-output-error"`: a call's result that is an error. */
      type: "tool-output-error"
      /** The id of the call the result belongs to. */
      toolCallId: string
      /** The tool's error output, as the model sees it. */
      errorText: string
    }
  | {
      /** `"tool-output-denied"`: the call whose approval the post declined. */
      type: "tool-output-denied"
      /** The id of the declined call. */
      toolCallId: string
    }
  | {
      /**
       * `"tool-approval-request"`: a call of this chat waits for approval (answered by a posted approval
       * response).
       */
      type: "tool-approval-request"
      /** The id of the toolnexus approval request: the answer's `id`. */
      approvalId: string
      /** The id of the call awaiting approval, shown earlier in the message. */
      toolCallId: string
    }
  | {
      /**
       * `data-<name>`: a data part; the handler writes `data-toolnexus-request` for a request with no tool
       * part to land on.
       */
      type: `data-${string}`
      /**
       * The part's id (for `data-toolnexus-request`, the request's id); a later part of the same type and
       * id replaces it.
       */
      id?: string
      /** The part's payload (for `data-toolnexus-request`, the toolnexus `Request` itself). */
      data: unknown
      /**
       * When `true`, `ai` passes the part to `onData` without keeping it in the message; the handler never
       * sets it.
       */
      transient?: boolean
    }
  | {
      /** `"error"`: the run failed; `finish` follows. */
      type: "error"
      /**
       * What the client is told: the handler's `onError` text (default `<code>: <message>`, keys redacted).
       */
      errorText: string
    }
  | {
      /** `"finish"`: closes the message; nothing follows but the stream's end. */
      type: "finish"
      /**
       * Why the run ended (the handler always sets it): `tool-calls` when it waits on a request,
       * `length`, `content-filter` or `other` for a run cut short, `error` after a failure.
       */
      finishReason?: UIFinishReason
      /** Metadata for the message, as `ai` takes it; the handler never sets it. */
      messageMetadata?: unknown
    }

/** The `ai` package's `FinishReason` values the handler reports. */
export type UIFinishReason = "stop" | "length" | "content-filter" | "tool-calls" | "error" | "other"
