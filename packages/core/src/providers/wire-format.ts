import type { Tool } from "../types.js"
import type { Toolkit } from "../tools/toolkit.js"
import type { Message } from "../types.js"
import type { Dialect, ModelTurn } from "./model-turn.js"
import type { SSEEvent } from "./sse.js"

/** @internal What goes into one request body. */
export interface BodyInput {
  model: string
  system?: string
  messages: readonly Message[]
  /** The toolkit (its cached rendering is used) or a tool list chosen by a `beforeLLM` hook. */
  tools: Toolkit | Tool[] | undefined
  stream: boolean
  params?: Record<string, unknown>
}

/** @internal Assembles a streamed reply event by event. */
export interface StreamAccumulator {
  /** Consumes one SSE event; returns a text delta when the event carried one. */
  accept(event: SSEEvent): string | undefined
  finish(): ModelTurn
}

/** @internal One HTTP endpoint style: URL, headers, body, and reply parsing. */
export interface WireFormat {
  style: "openai" | "anthropic"
  dialect: Dialect
  endpoint(baseUrl: string): string
  headers(apiKey: string | undefined): Record<string, string>
  body(input: BodyInput): Record<string, unknown>
  parse(json: unknown): ModelTurn
  streamAccumulator(): StreamAccumulator
}
