/** A JSON Schema object describing a tool's arguments. */
export type JSONSchema = Record<string, unknown>

/**
 * A request for something outside the process: an approval, a login, input, or a relayed
 * tool call. Plain JSON; keys are part of the wire contract.
 */
export interface Request {
  id: string
  kind: string
  prompt: string
  url?: string
  data?: Record<string, unknown>
  /** RFC 3339 timestamp after which an `ok: true` answer is refused. */
  expiresAt?: string
}

/** The answer to a {@link Request}; `id` echoes the request id. */
export interface Answer {
  id: string
  ok: boolean
  data?: Record<string, unknown>
  /** Only when `ok === false`: "declined" | "cancelled" | "expired" | other. */
  reason?: string
}

/** What a tool returns to the model. */
export interface ToolResult {
  output: string
  isError: boolean
  metadata?: Record<string, unknown>
}

/** Per-call context handed to {@link Tool.execute}. */
export interface ToolContext {
  signal?: AbortSignal
  /** Set when the call is retried after its suspension was answered. */
  answer?: Answer
  /** The provider's tool-call id. */
  callId?: string
  /** Stable across the retry-with-answer, a resume and a restart: use it to deduplicate side effects. */
  idempotencyKey?: string
  /**
   * While tracing is on: the OpenTelemetry `Context` of this call's `execute_tool` span, to
   * parent the spans (or runs, via `telemetry.parentContext`) the tool starts.
   */
  traceContext?: unknown
}

/** Where a tool comes from. */
export type ToolSource = "native" | "http" | "relay" | "custom" | "agent"

/** A tool the model can call. */
export interface Tool {
  name: string
  description: string
  inputSchema: JSONSchema
  source: ToolSource
  execute(args: Record<string, unknown>, ctx?: ToolContext): ToolResult | Promise<ToolResult>
}

/** Token usage, summed over turns. */
export interface Usage {
  promptTokens: number
  completionTokens: number
  totalTokens: number
}

// ---- OpenAI chat messages -------------------------------------------------------------

/** A tool call on an OpenAI assistant message. */
export interface OpenAIToolCall {
  id: string
  type: "function"
  function: { name: string; arguments: string }
}

/** An OpenAI chat-completions message. */
export type OpenAIMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: OpenAIToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string }

// ---- Anthropic messages ---------------------------------------------------------------

/** A content block of an Anthropic message. */
export type AnthropicContentBlock =
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> }
  | { type: "tool_result"; tool_use_id: string; content: string; is_error?: boolean }

/** An Anthropic messages-API message. */
export interface AnthropicMessage {
  role: "user" | "assistant"
  content: string | AnthropicContentBlock[]
}

/** A transcript message in the endpoint style's own shape. */
export type Message = OpenAIMessage | AnthropicMessage

/** The endpoint wire style. */
export type EndpointStyle = "openai" | "anthropic"
