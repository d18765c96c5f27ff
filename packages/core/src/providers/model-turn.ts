import type { Message } from "../types.js"

/** One tool call the model made, with its arguments parsed when they are valid JSON. */
export interface ModelToolCall {
  id: string
  name: string
  /** The raw JSON string the model produced. */
  arguments: string
  /** Parsed arguments; undefined when `argumentsError` is set. */
  args?: Record<string, unknown>
  argumentsError?: string
}

/** The normalised reply of one LLM turn, whatever the wire style. */
export interface ModelTurn {
  /** The assistant message, in the endpoint style's own shape, appended to the transcript. */
  message: Message
  text: string
  toolCalls: ModelToolCall[]
  usage: { promptTokens: number; completionTokens: number }
  /** The provider's normalised finish reason, when the wire format reports one. */
  finishReason?: string
  /** The model's refusal text, when it refused. */
  refusal?: string
}

/** @internal A tool result to be written into the transcript. */
export interface TranscriptToolResult {
  id: string
  output: string
  isError: boolean
}

/**
 * @internal How one endpoint style shapes its transcript: user turns, tool results, and
 * reading tool calls and results back from recorded messages (used to resume halted turns).
 */
export interface Dialect {
  userMessage(text: string): Message
  /** Messages carrying the results of one assistant turn, in call order. */
  toolResultMessages(results: TranscriptToolResult[]): Message[]
  /** The tool calls of an assistant message, or `undefined` when `message` is not an assistant turn. */
  toolCallsOf(message: Message): ModelToolCall[] | undefined
  /** The text of an assistant message, or `undefined` when `message` is not an assistant turn. */
  assistantText(message: Message): string | undefined
  /** Tool results recorded in `messages` (the messages after an assistant turn), by call id. */
  recordedResults(messages: readonly Message[]): Map<string, TranscriptToolResult>
}

/** @internal Parses a tool call's raw argument string; "" means no arguments. */
export function parseToolArguments(id: string, name: string, raw: string): ModelToolCall {
  if (raw.trim() === "") return { id, name, arguments: raw, args: {} }
  try {
    const args = JSON.parse(raw) as unknown
    if (typeof args === "object" && args !== null && !Array.isArray(args)) {
      return { id, name, arguments: raw, args: args as Record<string, unknown> }
    }
    return { id, name, arguments: raw, argumentsError: "the arguments must be a JSON object" }
  } catch (error) {
    return {
      id,
      name,
      arguments: raw,
      argumentsError: `the arguments are not valid JSON (${(error as Error).message})`,
    }
  }
}
