import type { Message, Prompt } from "../types.js"
import { emptyArgs } from "../internal/empty-args.js"

/** One tool call the model made, with its arguments parsed when they are valid JSON. */
export interface ModelToolCall {
  /** The call's id from the provider (or generated); tool results answer it by this id. */
  id: string
  /** The name of the tool the model called. */
  name: string
  /** The raw JSON string the model produced. */
  arguments: string
  /** Parsed arguments; undefined when `argumentsError` is set. */
  args?: Record<string, unknown>
  /**
   * Why the arguments are unusable (not valid JSON, or not a JSON object); the call then runs
   * no tool and the model gets an error result with this text.
   */
  argumentsError?: string
}

/**
 * Why a model turn ended, normalised across styles: `stop` (a final answer), `tool_calls`,
 * `length` (cut by the output-token limit), `content_filter`, `refusal`, `pause` (Anthropic
 * `pause_turn`: the turn is sent back to be continued), or the provider's own word.
 */
export type FinishReason =
  | "stop"
  | "tool_calls"
  | "length"
  | "content_filter"
  | "refusal"
  | "pause"
  | (string & {})

/** The normalised reply of one LLM turn, whatever the wire style. */
export interface ModelTurn {
  /**
   * What the turn appends to the transcript, in the endpoint style's own shape: one
   * assistant message (OpenAI chat, Anthropic) or the output items (Responses).
   */
  messages: Message[]
  /** The turn's assistant text; "" when it has none (e.g. it only called tools). */
  text: string
  /** The tool calls the turn made, in order; empty for a final answer. */
  toolCalls: ModelToolCall[]
  /** The token counts the provider reported for this turn (0 when it reported none). */
  usage: {
    /** Input tokens of the request. */
    promptTokens: number
    /** Output tokens of the reply. */
    completionTokens: number
  }
  /** Why the turn ended, normalised. */
  finishReason: FinishReason
  /** The refusal text when the model refused ("" when the provider gives none). */
  refusal?: string
}

/** @internal Receives the deltas of a streamed turn as they arrive. */
export interface TurnListener {
  onText: ((delta: string) => void) | undefined
  onRefusal: ((delta: string) => void) | undefined
  /** Reasoning deltas: Anthropic thinking, Responses reasoning summaries, `reasoning_content`. */
  onReasoning?: ((delta: string) => void) | undefined
}

/** @internal The last assistant turn of a transcript: `messages[start..end]` and its calls. */
export interface AssistantTurn {
  start: number
  end: number
  calls: ModelToolCall[]
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
  /** The user turn of a prompt; multimodal parts in the style's own shape. */
  userMessage(prompt: Prompt): Message
  /** Messages carrying the results of one assistant turn, in call order. */
  toolResultMessages(results: TranscriptToolResult[]): Message[]
  /** The text of an assistant message, or `undefined` when `message` is not an assistant turn. */
  assistantText(message: Message): string | undefined
  /** The last assistant turn of `messages`, or `undefined` when there is none. */
  lastAssistantTurn(messages: readonly Message[]): AssistantTurn | undefined
  /** Tool results recorded in `messages` (the messages after an assistant turn), by call id. */
  recordedResults(messages: readonly Message[]): Map<string, TranscriptToolResult>
}

/** @internal Parses a tool call's raw argument string; "" means no arguments. */
export function parseToolArguments(id: string, name: string, raw: string): ModelToolCall {
  if (raw === "{}" || raw.trim() === "") return { id, name, arguments: raw, args: emptyArgs() }
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

/** @internal The index of the last message with role "assistant", or -1. */
export function lastAssistantIndex(messages: readonly Message[]): number {
  let index = messages.length - 1
  while (index >= 0 && (messages[index] as { role?: string }).role !== "assistant") index--
  return index
}
