/**
 * The members of the `ai` package's `UIMessageChunk` (UI message stream protocol v1, `ai`
 * 7.x) that the handler writes: a structural copy, so that no published declaration needs
 * `ai` (which declares Node ≥ 22) installed. A value of this type is a valid `ai` chunk.
 */
export type UIMessageChunk =
  | { type: "start"; messageId?: string; messageMetadata?: unknown }
  | { type: "start-step" }
  | { type: "finish-step" }
  | { type: "text-start"; id: string }
  | { type: "text-delta"; id: string; delta: string }
  | { type: "text-end"; id: string }
  | { type: "reasoning-start"; id: string }
  | { type: "reasoning-delta"; id: string; delta: string }
  | { type: "reasoning-end"; id: string }
  | { type: "tool-input-available"; toolCallId: string; toolName: string; input: unknown }
  | { type: "tool-output-available"; toolCallId: string; output: unknown }
  | { type: "tool-output-error"; toolCallId: string; errorText: string }
  | { type: "tool-output-denied"; toolCallId: string }
  | { type: "tool-approval-request"; approvalId: string; toolCallId: string }
  | { type: `data-${string}`; id?: string; data: unknown; transient?: boolean }
  | { type: "error"; errorText: string }
  | { type: "finish"; finishReason?: UIFinishReason; messageMetadata?: unknown }

/** The `ai` package's `FinishReason` values the handler reports. */
export type UIFinishReason = "stop" | "length" | "content-filter" | "tool-calls" | "error" | "other"
