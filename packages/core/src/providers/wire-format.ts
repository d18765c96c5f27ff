import type { Toolkit } from "../tools/toolkit.js"
import type { JSONSchema, Message, Tool } from "../types.js"
import type { Dialect, ModelTurn, TurnListener } from "./model-turn.js"
import type { SSEEvent } from "./sse.js"

/** @internal A structured-output request: the schema the final answer must match. */
export interface OutputFormat {
  name: string
  schema: JSONSchema
}

/** @internal What goes into one request body. */
export interface BodyInput {
  model: string
  system?: string
  messages: readonly Message[]
  /** The toolkit (its cached rendering is used) or a tool list chosen by a `beforeLLM` hook. */
  tools: Toolkit | Tool[] | undefined
  stream: boolean
  params?: Record<string, unknown>
  output?: OutputFormat
}

/** @internal Assembles a streamed reply event by event, reporting deltas to its listener. */
export interface StreamAccumulator {
  /**
   * Consumes one SSE event.
   *
   * @throws LLMStreamError for an error event; LLMResponseError for a malformed one.
   */
  accept(event: SSEEvent): void
  finish(): ModelTurn
}

/** @internal One HTTP endpoint style: URL, headers, body, and reply parsing. */
export interface WireFormat {
  style: "openai" | "anthropic" | "openai-responses"
  dialect: Dialect
  /** The environment variables a key is read from, in order. */
  keyEnv: readonly string[]
  endpoint(baseUrl: string): string
  headers(apiKey: string | undefined): Record<string, string>
  body(input: BodyInput): Record<string, unknown>
  parse(json: unknown): ModelTurn
  streamAccumulator(listener: TurnListener): StreamAccumulator
}
