/** A JSON Schema object describing a tool's arguments. */
export type JSONSchema = Record<string, unknown>

/**
 * A request for something outside the process: an approval, a login, input, or a relayed
 * tool call. Plain JSON; keys are part of the wire contract.
 */
export interface Request {
  /**
   * The request's id, `^[A-Za-z0-9._:-]{1,200}$`; `pending()` makes a unique one (`pnd-` and 22
   * random base64url characters) when the tool gives none. Its answer echoes it.
   */
  id: string
  /**
   * What is asked, an open string: `"approval"`, `"authorization"`, `"input"`, `"question"`,
   * `"tool_call"` (relay calls), or a tool's own kind.
   */
  kind: string
  /** The human-readable question shown to whoever answers (`pending()` puts it in the `output`). */
  prompt: string
  /** A link for whoever answers: for `"authorization"`, where the user logs in. Absent when none. */
  url?: string
  /**
   * The tool's own JSON payload, to pick its work up from on the retry (`ctx.request.data`). The
   * loop adds `callId`, `tool` and `args` (the tool's own keys win); relay requests carry `calls`.
   */
  data?: Record<string, unknown>
  /** RFC 3339 timestamp after which an `ok: true` answer is refused. */
  expiresAt?: string
}

/** The answer to a {@link Request}; `id` echoes the request id. */
export interface Answer {
  /** The id of the request it answers; resuming a run with another id throws `AnswerMismatchError`. */
  id: string
  /**
   * `true` to approve or supply what was asked (the tool runs again with `ctx.answer`); `false`
   * declines: the call's result becomes `declined: <prompt> (<reason>)` (an agent tool still
   * re-runs, to collect its sub-agent's outcome).
   */
  ok: boolean
  /**
   * What the answer supplies, a plain JSON object the retried tool reads as `ctx.answer.data`
   * (relay results ride as `results`, or `output`/`isError` for one call). Absent when none.
   */
  data?: Record<string, unknown>
  /** Only when `ok === false`: "declined" | "cancelled" | "expired" | other. */
  reason?: string
}

/** What a tool returns to the model. */
export interface ToolResult {
  /** The text the model receives as the call's result; for a suspension, the request's prompt. */
  output: string
  /**
   * Whether the call failed (a throw becomes `true`); a suspension is `true` too. Anthropic gets it
   * as `is_error`; the OpenAI styles send only the text.
   */
  isError: boolean
  /**
   * Data for the host, not sent to the model: kept in `RunResult.toolCalls`. `metadata.pending`
   * holding a {@link Request} makes the result a suspension; `httpTool` sets `status`.
   */
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
  /**
   * The engine's own wait for the decision on `request` (a suspension never halts the run).
   * `context.messages` is the waiting run's conversation so far (its halted turn's assistant
   * message included), for an engine that shows a parked run's transcript; absent where the
   * waiting conversation is not the run's own (a sub-agent's).
   */
  wait(request: Request, context?: WaitContext): Promise<Answer>
}

/** What a run tells its executor's `wait` besides the request. */
export interface WaitContext {
  /** The run's conversation at the suspension. Read it, never keep it mutable: a copy. */
  messages: readonly Message[]
}

/** Per-call context handed to {@link Tool.execute}. */
export interface ToolContext {
  /**
   * The run's abort signal, aborted when the caller's `signal` fires (or a `stream` consumer stops
   * early); absent when the run has none. A tool passes it to its own I/O.
   */
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
  /**
   * The conversation the call runs in: the `id` given to `ask`/`stream`/`continueRun`, an agent
   * handle's conversation, or the run's own id (`RunResult.runId`) without one.
   */
  conversationId?: string
  /**
   * `<run id>:<call id>`: unique per run (a run given no `id` gets a `run-<uuid>`, see
   * `RunResult.runId`) and stable across the retry-with-answer, a resume and a restart — use it
   * to deduplicate side effects.
   */
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
   * The client running this call (its model, its settings): a tool that needs the model in the
   * middle of its work — an MCP server's sampling request answered by "this client's own
   * model" — runs a prompt on it. Absent when the call is not made by a client's loop.
   */
  client?: ToolModel
  /**
   * Under a durable executor, for an agent-source call (`asTool` outside a runtime): the run's
   * executor scoped to this call (steps `tool:<n>:<call id>/…`), so the sub-agent's own
   * runtime journals its turns and calls as steps of the same workflow.
   */
  executor?: DurableExecutor
}

/**
 * The part of a client a tool may use through `ToolContext.client`: one run of a prompt, without
 * tools. A toolnexus `Client` is one.
 */
export interface ToolModel {
  /** Runs one prompt on the client's model; `status` is `"done"` when `text` is its reply. */
  run(
    prompt: string,
    opts?: { signal?: AbortSignal },
  ): Promise<{
    /** How the run ended: `"done"` when `text` is the model's reply. */
    status: string
    /** The model's reply text. */
    text: string
  }>
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
  /** The name the model calls it by: `^[a-zA-Z0-9_-]{1,64}$`, unique within a toolkit. */
  name: string
  /** What the tool does, sent to the model with the schema so it knows when to call it. */
  description: string
  /** The JSON Schema of the arguments object, sent as the tool's `parameters` (`input_schema`). */
  inputSchema: JSONSchema
  /** Where the tool comes from; a `"relay"` tool is never run here, its calls suspend for the host. */
  source: ToolSource
  /**
   * Runs one call with the model's arguments (a parsed JSON object). A throw or rejection becomes an
   * `isError` result; a result made by `pending()` suspends the call.
   */
  execute(args: Record<string, unknown>, ctx?: ToolContext): ToolResult | Promise<ToolResult>
  /**
   * Calls first suspend for a human's approval (`kind: "approval"`, §19) before `execute` runs:
   * `true` for every call, or a function deciding per call (a throw or rejection asks). A
   * toolkit's `requireApproval` can ask for more; MCP and builtin tools have their own policy.
   */
  needsApproval?:
    | boolean
    | ((args: Record<string, unknown>, ctx: ToolContext) => boolean | Promise<boolean>)
    | undefined
  /**
   * An approver may replace the arguments (`answer.data.args`); they are validated against
   * `inputSchema` and recorded in the result's `metadata.approval`. Default `false`: an answer
   * that carries arguments is refused.
   */
  editableArgs?: boolean | undefined
  /**
   * The approval request's `prompt` for a call (what the approver reads, and the `declined:`
   * text the model gets); default `Approve <tool> with <arguments as JSON>?`.
   */
  approvalPrompt?: ((args: Record<string, unknown>) => string) | undefined
}

/** Token usage, summed over turns. */
export interface Usage {
  /** Input tokens, as the provider reports them (`prompt_tokens` / `input_tokens`). */
  promptTokens: number
  /** Output tokens, as the provider reports them (`completion_tokens` / `output_tokens`). */
  completionTokens: number
  /** `promptTokens + completionTokens`. */
  totalTokens: number
}

// ---- Prompts --------------------------------------------------------------------------

/** One part of a multimodal prompt; each style writes it in its own shape. */
export type ContentPart =
  | {
      /** A text part. */
      type: "text"
      /** The text, sent as it is. */
      text: string
    }
  | {
      /** An image the provider fetches from `url`. */
      type: "image"
      /** The image's URL (non-empty). */
      url: string
    }
  | {
      /** An image given inline. */
      type: "image"
      /** The image bytes, base64-encoded, without a `data:` prefix. */
      data: string /* base64 */
      /** The image's MIME type, e.g. `image/png`. */
      mediaType: string
    }
  | {
      /** A file (e.g. a PDF) given inline. */
      type: "file"
      /** The file bytes, base64-encoded, without a `data:` prefix. */
      data: string /* base64 */
      /** The file's MIME type, e.g. `application/pdf`. */
      mediaType: string
      /** The file's name, passed on to the provider; when absent, the Responses style sends `"file"`. */
      filename?: string
    }

/** A user prompt: plain text or a list of parts. */
export type Prompt = string | ContentPart[]

// ---- OpenAI chat messages -------------------------------------------------------------

/** A tool call on an OpenAI assistant message. */
export interface OpenAIToolCall {
  /** The provider's tool-call id, echoed by the `tool` message's `tool_call_id`. */
  id: string
  /** Always `"function"`. */
  type: "function"
  /** The function the model called and its arguments. */
  function: {
    /** The name of the tool called. */
    name: string
    /** The arguments as the raw JSON string the model produced; it may not parse. */
    arguments: string
  }
}

/** A content part of an OpenAI chat user message. */
export type OpenAIContentPart =
  | {
      /** A text part. */
      type: "text"
      /** The text. */
      text: string
    }
  | {
      /** An image part. */
      type: "image_url"
      /** The image to show the model. */
      image_url: {
        /** The image's URL, or a `data:<mediaType>;base64,…` URL for inline bytes. */
        url: string
      }
    }
  | {
      /** An inline file part. */
      type: "file"
      /** The file's content and name. */
      file: {
        /** The file as a `data:<mediaType>;base64,…` URL. */
        file_data: string
        /** The file's name, when the prompt part gave one. */
        filename?: string
      }
    }

/** An OpenAI chat-completions message. */
export type OpenAIMessage =
  | {
      /** The system prompt. */
      role: "system"
      /** The instructions, as text. */
      content: string
    }
  | {
      /** A user prompt. */
      role: "user"
      /** Plain text, or a list of content parts (multimodal prompts). */
      content: string | OpenAIContentPart[]
    }
  | {
      /** A model turn. */
      role: "assistant"
      /** The reply text; `null` when the turn has no text (only tool calls, or a refusal). */
      content: string | null
      /** The tools the model called in this turn; absent when it called none. */
      tool_calls?: OpenAIToolCall[]
      /** The model's refusal text, when it refused; absent (or `null` from the provider) otherwise. */
      refusal?: string | null
    }
  | {
      /** A tool's result. */
      role: "tool"
      /** The `id` of the {@link OpenAIToolCall} it answers. */
      tool_call_id: string
      /** The tool's `output`; an error result is sent as its text alone (no error flag). */
      content: string
    }

// ---- Anthropic messages ---------------------------------------------------------------

/** A media source of an Anthropic image or document block. */
export type AnthropicSource =
  | {
      /** Content given inline. */
      type: "base64"
      /** The content's MIME type, e.g. `image/png` or `application/pdf`. */
      media_type: string
      /** The content, base64-encoded, without a `data:` prefix. */
      data: string
    }
  | {
      /** Content the provider fetches from `url`. */
      type: "url"
      /** The image's or document's URL. */
      url: string
    }

/**
 * A content block of an Anthropic message. Server-tool blocks (`server_tool_use`, and their
 * `…_tool_result` blocks) and thinking blocks are kept exactly as the provider sent them.
 */
export type AnthropicContentBlock =
  | {
      /** A text block. */
      type: "text"
      /** The text. */
      text: string
      /** The provider's citations for this text, kept as sent; absent when it gave none. */
      citations?: unknown[]
    }
  | {
      /** A call of one of the run's tools. */
      type: "tool_use"
      /** The provider's tool-use id, echoed by the `tool_result` block's `tool_use_id`. */
      id: string
      /** The name of the tool called. */
      name: string
      /** The call's arguments, as a JSON object. */
      input: Record<string, unknown>
    }
  | {
      /** A tool's result, in a user message. */
      type: "tool_result"
      /** The `id` of the `tool_use` block it answers. */
      tool_use_id: string
      /** The tool's `output`. */
      content: string
      /** `true` for an error result (`ToolResult.isError`); absent otherwise. */
      is_error?: boolean
    }
  | {
      /** The model's reasoning, kept so it can be sent back with the next request. */
      type: "thinking"
      /** The reasoning text. */
      thinking: string
      /** The provider's signature of the reasoning, sent back unchanged. */
      signature: string
    }
  | {
      /** Reasoning the provider returned encrypted. */
      type: "redacted_thinking"
      /** The encrypted reasoning, opaque, sent back unchanged. */
      data: string
    }
  | {
      /** A call of a tool the provider runs itself (e.g. web search). */
      type: "server_tool_use"
      /** The provider's id of the call, echoed by its result block's `tool_use_id`. */
      id: string
      /** The name of the server tool. */
      name: string
      /** The call's arguments, as a JSON object. */
      input: Record<string, unknown>
    }
  | {
      /** The result of a server tool call (`web_search_tool_result`, …), kept as sent. */
      type: `${string}_tool_result`
      /** The `id` of the `server_tool_use` block it answers. */
      tool_use_id: string
      /** The result, in the provider's own shape. */
      content: unknown
      [key: string]: unknown
    }
  | {
      /** An image in a user prompt. */
      type: "image"
      /** Where the image's bytes come from. */
      source: AnthropicSource
    }
  | {
      /** A document (e.g. a PDF) in a user prompt. */
      type: "document"
      /** Where the document's bytes come from. */
      source: AnthropicSource
      /** The document's title: the file part's `filename`, when it had one. */
      title?: string
    }

/** An Anthropic messages-API message. */
export interface AnthropicMessage {
  /** `"user"` for prompts and tool results, `"assistant"` for model turns. */
  role: "user" | "assistant"
  /** Plain text, or a list of content blocks. */
  content: string | AnthropicContentBlock[]
}

// ---- OpenAI Responses items -----------------------------------------------------------

/** A content part of a Responses message item. */
export type ResponsesContentPart =
  | {
      /** Text in an input message. */
      type: "input_text"
      /** The text. */
      text: string
    }
  | {
      /** An image in an input message. */
      type: "input_image"
      /** The image's URL, or a `data:<mediaType>;base64,…` URL for inline bytes. */
      image_url: string
      /** The provider's detail level (`"low"`, `"high"`, `"auto"`); toolnexus does not set it. */
      detail?: string
    }
  | {
      /** A file in an input message. */
      type: "input_file"
      /** The file as a `data:<mediaType>;base64,…` URL. */
      file_data: string
      /** The file's name; toolnexus sends `"file"` when the prompt part has none. */
      filename?: string
    }
  | {
      /** Reply text in an assistant message. */
      type: "output_text"
      /** The reply text. */
      text: string
      /** The provider's annotations (citations and the like), kept as sent. */
      annotations?: unknown[]
    }
  | {
      /** A refusal in an assistant message. */
      type: "refusal"
      /** The model's refusal text. */
      refusal: string
    }

/**
 * An item of the OpenAI Responses `input`/`output` list. The transcript of the
 * `openai-responses` style is a list of these; a model turn may add several (reasoning,
 * a message, function calls). Items are kept as the provider sent them.
 */
export type ResponsesItem =
  | {
      /** `"user"` for a prompt; `"system"` or `"developer"` for instructions. */
      role: "user" | "system" | "developer"
      /** Plain text, or a list of input parts. */
      content: string | ResponsesContentPart[]
      /** `"message"`, or absent: an input message may omit it. */
      type?: "message"
    }
  | {
      /** A message item. */
      type: "message"
      /** A model reply. */
      role: "assistant"
      /** The reply's parts (`output_text`, `refusal`). */
      content: ResponsesContentPart[]
      /** The provider's item id, when it gave one. */
      id?: string
      /** The item's status as the provider sent it (e.g. `"completed"`), when it gave one. */
      status?: string
    }
  | {
      /** A call of one of the run's tools. */
      type: "function_call"
      /** The call id, echoed by the `function_call_output` item's `call_id`. */
      call_id: string
      /** The name of the tool called. */
      name: string
      /** The arguments as the raw JSON string the model produced; it may not parse. */
      arguments: string
      /** The provider's item id (not the `call_id`), when it gave one. */
      id?: string
      /** The item's status as the provider sent it, when it gave one. */
      status?: string
    }
  | {
      /** A tool's result. */
      type: "function_call_output"
      /** The `call_id` of the `function_call` it answers. */
      call_id: string
      /** The tool's `output`; an error result is sent as its text alone (no error flag). */
      output: string
    }
  | {
      /** The model's reasoning, kept so it can be sent back with the next turn. */
      type: "reasoning"
      /** The provider's item id, when it gave one. */
      id?: string
      /** The reasoning summary parts, as the provider sent them (may be empty). */
      summary: unknown[]
      /**
       * The reasoning, encrypted by the provider (toolnexus asks for it: requests are stateless)
       * and sent back unchanged; absent or `null` when it gave none.
       */
      encrypted_content?: string | null
      [key: string]: unknown
    }

/** A transcript message in the endpoint style's own shape. */
export type Message = OpenAIMessage | AnthropicMessage | ResponsesItem

/** The endpoint wire style. */
export type EndpointStyle = "openai" | "anthropic" | "openai-responses"
