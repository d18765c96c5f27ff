/**
 * The AG-UI 1.0 events the handler writes (`@ag-ui/core`'s `EventType` members, as string
 * literals): a structural copy, so that no published declaration needs `@ag-ui/*` installed.
 */
export type AgUiEvent =
  | { type: "RUN_STARTED"; threadId: string; runId: string }
  | { type: "TEXT_MESSAGE_START"; messageId: string; role: "assistant" }
  | { type: "TEXT_MESSAGE_CONTENT"; messageId: string; delta: string }
  | { type: "TEXT_MESSAGE_END"; messageId: string }
  | { type: "REASONING_START"; messageId: string }
  | { type: "REASONING_MESSAGE_START"; messageId: string; role: "reasoning" }
  | { type: "REASONING_MESSAGE_CONTENT"; messageId: string; delta: string }
  | { type: "REASONING_MESSAGE_END"; messageId: string }
  | { type: "REASONING_END"; messageId: string }
  | { type: "TOOL_CALL_START"; toolCallId: string; toolCallName: string; parentMessageId?: string }
  | { type: "TOOL_CALL_ARGS"; toolCallId: string; delta: string }
  | { type: "TOOL_CALL_END"; toolCallId: string }
  | { type: "TOOL_CALL_RESULT"; messageId: string; toolCallId: string; content: string; role: "tool" }
  | {
      type: "RUN_FINISHED"
      threadId: string
      runId: string
      result?: { status: string; finishReason?: string; limit?: string }
      outcome?: AgUiOutcome
      usage?: { inputTokens: number; outputTokens: number; totalTokens: number }[]
    }
  | { type: "RUN_ERROR"; message: string; code: string }

/** How a run ended: `success` (with the relay calls the client must run), or interrupts to resume. */
export type AgUiOutcome =
  | { type: "success"; pendingToolCallIds?: string[] }
  | { type: "interrupt"; interrupts: AgUiInterrupt[] }

/** An AG-UI interrupt standing for a toolnexus request (`metadata.toolnexus` is the Request itself). */
export interface AgUiInterrupt {
  id: string
  reason: string
  message?: string
  toolCallId?: string
  responseSchema?: Record<string, unknown>
  expiresAt?: string
  metadata: { toolnexus: unknown }
}
