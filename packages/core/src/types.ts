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

/**
 * A durable-execution engine as the client loop sees it: a run of it is one workflow whose LLM
 * turns and tool calls are journaled steps. An engine package (`@toolnexus/restate`,
 * `@toolnexus/dbos`) implements it; `client.run`, `client.continueRun` and the agents runtime
 * take it as `executor`.
 *
 * Step names are stable across replay: `llm:<n>` (the n-th LLM request), `tool:<n>:<call id>`
 * (a call's first execution, hooks included), `…:answer` (its retry with the answer),
 * `answer:<request id>` (the client's own inline `waitFor`), `relay:<n>` (the turn's relay
 * request), `compact:<n>` (the `compaction` option's edit before the n-th request); under a
 * runtime each is prefixed by `<handle id>/`. Step values are plain JSON.
 */
export interface DurableExecutor {
  /** The run id (the workflow id). `ctx.idempotencyKey` is `<id>:<call id>`. */
  readonly id: string
  /** The largest step value, in bytes of its JSON; default 1 MiB. */
  readonly maxStepBytes?: number
  /** Runs `fn` at most once per `name` in this run; afterwards returns its journaled value. */
  step<T>(name: string, fn: () => Promise<T>): Promise<T>
  /** The engine's own wait for the decision on `request` (a suspension never halts the run). */
  wait(request: Request): Promise<Answer>
}

/** Per-call context handed to {@link Tool.execute}. */
export interface ToolContext {
  signal?: AbortSignal
  /** Set when the call is retried after its suspension was answered. */
  answer?: Answer
  /**
   * With `answer`: the request the call suspended on, as the run stored it (its `data` too), so
   * a tool can pick its work up from what it put there — e.g. an agent tool run outside a
   * runtime keeps its sub-agent's state in it, and that survives a restart with the store.
   */
  request?: Request
  /** The provider's tool-call id. */
  callId?: string
  /** Stable across the retry-with-answer, a resume and a restart: use it to deduplicate side effects. */
  idempotencyKey?: string
  /**
   * Present when a `waitFor` on the chain can answer right now (the client's, or in the agents
   * runtime the nearest def's up the ancestor chain). A tool that needs an answer in the middle
   * of its own work (an MCP elicitation) asks it; when absent, the tool suspends as usual.
   */
  resolve?: (req: Request) => Promise<Answer>
  /**
   * While tracing is on: the OpenTelemetry `Context` of this call's `execute_tool` span, to
   * parent the spans (or runs, via `telemetry.parentContext`) the tool starts.
   */
  traceContext?: unknown
  /**
   * The client's `fetch` option (its one transport seam), when it was given one: a tool that
   * makes HTTP requests (the `webfetch` builtin) sends them through it, so mocks, proxies and
   * record/replay cover the tool's traffic as they do the model's. Absent ⇒ the global `fetch`.
   */
  fetch?: typeof fetch
  /**
   * Under a durable executor, for an agent-source call (`asTool` outside a runtime): the run's
   * executor scoped to this call (steps `tool:<n>:<call id>/…`), so the sub-agent's own
   * runtime journals its turns and calls as steps of the same workflow.
   */
  executor?: DurableExecutor
}

/** Where a tool comes from. */
export type ToolSource =
  | "native"
  | "http"
  | "relay"
  | "custom"
  | "agent"
  | "mcp"
  | "a2a"
  | "builtin"
  | "skill"

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

// ---- Prompts --------------------------------------------------------------------------

/** One part of a multimodal prompt; each style writes it in its own shape. */
export type ContentPart =
  | { type: "text"; text: string }
  | { type: "image"; url: string }
  | { type: "image"; data: string /* base64 */; mediaType: string }
  | { type: "file"; data: string /* base64 */; mediaType: string; filename?: string }

/** A user prompt: plain text or a list of parts. */
export type Prompt = string | ContentPart[]

// ---- OpenAI chat messages -------------------------------------------------------------

/** A tool call on an OpenAI assistant message. */
export interface OpenAIToolCall {
  id: string
  type: "function"
  function: { name: string; arguments: string }
}

/** A content part of an OpenAI chat user message. */
export type OpenAIContentPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string } }
  | { type: "file"; file: { file_data: string; filename?: string } }

/** An OpenAI chat-completions message. */
export type OpenAIMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string | OpenAIContentPart[] }
  | { role: "assistant"; content: string | null; tool_calls?: OpenAIToolCall[]; refusal?: string | null }
  | { role: "tool"; tool_call_id: string; content: string }

// ---- Anthropic messages ---------------------------------------------------------------

/** A media source of an Anthropic image or document block. */
export type AnthropicSource =
  | { type: "base64"; media_type: string; data: string }
  | { type: "url"; url: string }

/**
 * A content block of an Anthropic message. Server-tool blocks (`server_tool_use`, and their
 * `…_tool_result` blocks) and thinking blocks are kept exactly as the provider sent them.
 */
export type AnthropicContentBlock =
  | { type: "text"; text: string; citations?: unknown[] }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> }
  | { type: "tool_result"; tool_use_id: string; content: string; is_error?: boolean }
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "redacted_thinking"; data: string }
  | { type: "server_tool_use"; id: string; name: string; input: Record<string, unknown> }
  | { type: `${string}_tool_result`; tool_use_id: string; content: unknown; [key: string]: unknown }
  | { type: "image"; source: AnthropicSource }
  | { type: "document"; source: AnthropicSource; title?: string }

/** An Anthropic messages-API message. */
export interface AnthropicMessage {
  role: "user" | "assistant"
  content: string | AnthropicContentBlock[]
}

// ---- OpenAI Responses items -----------------------------------------------------------

/** A content part of a Responses message item. */
export type ResponsesContentPart =
  | { type: "input_text"; text: string }
  | { type: "input_image"; image_url: string; detail?: string }
  | { type: "input_file"; file_data: string; filename?: string }
  | { type: "output_text"; text: string; annotations?: unknown[] }
  | { type: "refusal"; refusal: string }

/**
 * An item of the OpenAI Responses `input`/`output` list. The transcript of the
 * `openai-responses` style is a list of these; a model turn may add several (reasoning,
 * a message, function calls). Items are kept as the provider sent them.
 */
export type ResponsesItem =
  | { role: "user" | "system" | "developer"; content: string | ResponsesContentPart[]; type?: "message" }
  | { type: "message"; role: "assistant"; content: ResponsesContentPart[]; id?: string; status?: string }
  | { type: "function_call"; call_id: string; name: string; arguments: string; id?: string; status?: string }
  | { type: "function_call_output"; call_id: string; output: string }
  | {
      type: "reasoning"
      id?: string
      summary: unknown[]
      encrypted_content?: string | null
      [key: string]: unknown
    }

/** A transcript message in the endpoint style's own shape. */
export type Message = OpenAIMessage | AnthropicMessage | ResponsesItem

/** The endpoint wire style. */
export type EndpointStyle = "openai" | "anthropic" | "openai-responses"
