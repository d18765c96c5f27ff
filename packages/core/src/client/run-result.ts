import type { FinishReason } from "../providers/model-turn.js"
import type { Message, Request, Usage } from "../types.js"

/** One tool call of a run and what the model saw for it. */
export interface ToolCallRecord {
  id: string
  name: string
  args: Record<string, unknown>
  output: string
  isError: boolean
  metadata?: Record<string, unknown>
}

/**
 * The outcome of a run. Plain JSON: it survives `JSON.stringify`/`JSON.parse`. `Output` is
 * the type of `output` when the run asked for structured output with a Zod schema.
 */
export interface RunResult<Output = unknown> {
  /** `pending`: halted on `pending`; `incomplete`: stopped by `limit`. */
  status: "done" | "pending" | "incomplete"
  /**
   * Set only when incomplete: "maxTurns", "maxOutputTokens" (the reply was cut by the token
   * limit), "contentFilter", "invalidOutput" (structured output still invalid after one
   * corrective turn), "budget", …
   */
  limit?: string
  /** Why the last model turn ended, normalised; absent when no model turn ran. */
  finishReason?: FinishReason
  /** Set when the model refused: its refusal text ("" when the provider gives none). */
  refusal?: string
  /** With `output` requested: the parsed, validated final answer. */
  output?: Output
  text: string
  messages: Message[]
  pending?: Request
  toolCalls: ToolCallRecord[]
  toolCallCount: number
  turns: number
  model: string
  usage: Usage
}

/**
 * What `Client.stream` yields and `onEvent` receives, in order: per model turn its `text` (and
 * `refusal`, `reasoning`) deltas as they arrive, `usage` (the run's running total), `turn` (the model turn
 * ended, with its finish reason), then each `tool_call`, each `tool_result` in call order, and
 * `pending` when the run halts; `done` last. A suspension is only ever a `pending` event, never
 * an `isError` tool result.
 */
export type StreamEvent =
  | { type: "text"; delta: string }
  | { type: "refusal"; delta: string }
  /** Reasoning text as it arrives: Anthropic thinking, Responses reasoning summaries, `reasoning_content`. */
  | { type: "reasoning"; delta: string }
  | { type: "turn"; turn: number; finishReason: FinishReason }
  | { type: "tool_call"; id: string; name: string; args: Record<string, unknown> }
  | { type: "tool_result"; id: string; name: string; output: string; isError: boolean }
  | { type: "pending"; request: Request }
  | { type: "usage"; usage: Usage }
  | { type: "done"; result: RunResult }
