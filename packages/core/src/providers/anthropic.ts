import { LLMResponseError, LLMStreamError } from "../errors.js"
import { isPlainObject } from "../internal/plain-object.js"
import type { AnthropicContentBlock, AnthropicMessage, Tool } from "../types.js"
import {
  type Dialect,
  type FinishReason,
  type ModelToolCall,
  type ModelTurn,
  type TurnListener,
  lastAssistantIndex,
  parseToolArguments,
} from "./model-turn.js"
import { errorFields, num } from "./openai.js"
import { userTurn } from "./prompt.js"
import { eventPayload } from "./sse.js"
import type { BodyInput, StreamAccumulator, WireFormat } from "./wire-format.js"

const DEFAULT_MAX_TOKENS = 4096

/** @internal The Anthropic messages transcript shape. */
export const anthropicDialect: Dialect = {
  userMessage: (prompt) =>
    userTurn(prompt, (part): AnthropicContentBlock => {
      if (part.type === "text") return { type: "text", text: part.text }
      if (part.type === "image") {
        if ("url" in part) return { type: "image", source: { type: "url", url: part.url } }
        return { type: "image", source: { type: "base64", media_type: part.mediaType, data: part.data } }
      }
      const source = { type: "base64" as const, media_type: part.mediaType, data: part.data }
      return part.filename === undefined
        ? { type: "document", source }
        : { type: "document", source, title: part.filename }
    }),
  toolResultMessages(results) {
    if (results.length === 0) return []
    const content: AnthropicContentBlock[] = results.map((r) =>
      r.isError
        ? { type: "tool_result", tool_use_id: r.id, content: r.output, is_error: true }
        : { type: "tool_result", tool_use_id: r.id, content: r.output },
    )
    return [{ role: "user", content }]
  },
  lastAssistantTurn(messages) {
    const index = lastAssistantIndex(messages)
    if (index < 0) return undefined
    const content = (messages[index] as AnthropicMessage).content
    const calls = Array.isArray(content)
      ? content.filter((b): b is ToolUseBlock => b.type === "tool_use").map(toolUseCall)
      : []
    return { start: index, end: index, calls }
  },
  assistantText(message) {
    if ((message as AnthropicMessage).role !== "assistant") return undefined
    const content = (message as AnthropicMessage).content
    if (typeof content === "string") return content
    if (!Array.isArray(content)) return ""
    return content.map((b) => (b.type === "text" ? b.text : "")).join("")
  },
  recordedResults(messages) {
    const found = new Map<string, { id: string; output: string; isError: boolean }>()
    for (const m of messages) {
      const msg = m as AnthropicMessage
      if (msg.role !== "user" || !Array.isArray(msg.content)) continue
      for (const block of msg.content) {
        if (block.type !== "tool_result") continue
        const result = block as { tool_use_id: string; content: unknown; is_error?: boolean }
        found.set(result.tool_use_id, {
          id: result.tool_use_id,
          output: blockText(result.content),
          isError: result.is_error === true,
        })
      }
    }
    return found
  },
}

type ToolUseBlock = { type: "tool_use"; id: string; name: string; input: Record<string, unknown> }

function toolUseCall(block: ToolUseBlock): ModelToolCall {
  return {
    id: block.id,
    name: block.name,
    arguments: JSON.stringify(block.input ?? {}),
    args: block.input ?? {},
  }
}

/** tool_result content may be a string or a list of text blocks. */
function blockText(content: unknown): string {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return ""
  return content.map((b) => (isPlainObject(b) && typeof b.text === "string" ? b.text : "")).join("")
}

function renderTools(tools: BodyInput["tools"]): unknown[] {
  if (!tools) return []
  if (!Array.isArray(tools)) return tools.toAnthropic()
  return tools.map((t: Tool) => ({ name: t.name, description: t.description, input_schema: t.inputSchema }))
}

const STOP_REASONS: Record<string, FinishReason> = {
  end_turn: "stop",
  stop_sequence: "stop",
  tool_use: "tool_calls",
  max_tokens: "length",
  // The context window filled up while writing: the output is cut off all the same.
  model_context_window_exceeded: "length",
  refusal: "refusal",
  pause_turn: "pause",
}

/** @internal Anthropic messages: `POST {baseUrl}/v1/messages`. */
export const anthropicWire: WireFormat = {
  style: "anthropic",
  dialect: anthropicDialect,
  keyEnv: ["ANTHROPIC_API_KEY"],
  endpoint(baseUrl) {
    const base = baseUrl.replace(/\/+$/, "")
    return /\/v1$/.test(base) ? `${base}/messages` : `${base}/v1/messages`
  },
  headers(apiKey) {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "anthropic-version": "2023-06-01",
    }
    if (apiKey) headers["x-api-key"] = apiKey
    return headers
  },
  body({ model, system, messages, tools, stream, params, output }) {
    const body: Record<string, unknown> = { max_tokens: DEFAULT_MAX_TOKENS, ...params, model }
    if (system) body.system = system
    body.messages = messages
    const rendered = renderTools(tools)
    if (rendered.length > 0) body.tools = rendered
    else delete body.tool_choice
    if (output) {
      const config = isPlainObject(body.output_config) ? body.output_config : {}
      body.output_config = { ...config, format: { type: "json_schema", schema: output.schema } }
    }
    if (stream) body.stream = true
    return body
  },
  parse(json) {
    if (!isPlainObject(json) || !Array.isArray(json.content)) {
      throw new LLMResponseError("the Anthropic-style reply has no content array")
    }
    const usage = isPlainObject(json.usage) ? json.usage : {}
    return turnOf(
      json.content as AnthropicContentBlock[],
      json.stop_reason,
      num(usage.input_tokens),
      num(usage.output_tokens),
    )
  },
  streamAccumulator: (listener) => new AnthropicStream(listener),
}

function turnOf(
  content: AnthropicContentBlock[],
  stopReason: unknown,
  promptTokens: number,
  completionTokens: number,
): ModelTurn {
  let text = ""
  const toolCalls: ModelToolCall[] = []
  for (const [i, block] of content.entries()) {
    if (!isPlainObject(block))
      throw new LLMResponseError(`the Anthropic-style reply has a malformed block ${i}`)
    if (block.type === "text") text += block.text
    else if (block.type === "tool_use") {
      if (typeof block.id !== "string" || typeof block.name !== "string") {
        throw new LLMResponseError(`the Anthropic-style reply has a malformed tool_use block ${i}`)
      }
      toolCalls.push(toolUseCall(block as ToolUseBlock))
    }
  }
  const raw = typeof stopReason === "string" ? stopReason : ""
  const finishReason = STOP_REASONS[raw] ?? (raw || (toolCalls.length > 0 ? "tool_calls" : "stop"))
  const turn: ModelTurn = {
    // An assistant message without content cannot be sent back (the API refuses it).
    messages: content.length > 0 ? [{ role: "assistant", content }] : [],
    text,
    toolCalls: finishReason === "refusal" ? [] : toolCalls,
    usage: { promptTokens, completionTokens },
    finishReason,
  }
  // Anthropic gives no refusal text; the reason alone says the model declined.
  if (finishReason === "refusal") turn.refusal = ""
  return turn
}

/** A block being streamed; tool input arrives as JSON fragments. */
type OpenBlock = Record<string, unknown> & { partialJson?: string }

class AnthropicStream implements StreamAccumulator {
  readonly #listener: TurnListener
  #blocks: OpenBlock[] = []
  #promptTokens = 0
  #completionTokens = 0
  #stopReason: unknown
  #started = false
  #delivered = false
  #argumentErrors = new Map<string, string>()

  constructor(listener: TurnListener) {
    this.#listener = listener
  }

  accept(event: { event: string; data: string }): void {
    const payload = eventPayload("Anthropic-style", event.data)
    if (!payload) return
    switch (payload.type) {
      case "message_start": {
        this.#started = true
        const usage =
          isPlainObject(payload.message) && isPlainObject(payload.message.usage) ? payload.message.usage : {}
        this.#promptTokens = num(usage.input_tokens)
        this.#completionTokens = num(usage.output_tokens)
        return
      }
      case "content_block_start": {
        const block: OpenBlock = isPlainObject(payload.content_block) ? { ...payload.content_block } : {}
        // tool_use, server_tool_use and mcp_tool_use all stream their input as JSON fragments.
        if (typeof block.type === "string" && block.type.endsWith("tool_use")) block.partialJson = ""
        this.#blocks[num(payload.index)] = block
        return
      }
      case "content_block_delta":
        this.#delta(this.#blocks[num(payload.index)], isPlainObject(payload.delta) ? payload.delta : {})
        return
      case "content_block_stop": {
        const block = this.#blocks[num(payload.index)]
        if (block?.partialJson !== undefined) this.#closeToolInput(block)
        return
      }
      case "message_delta": {
        const usage = isPlainObject(payload.usage) ? payload.usage : {}
        if (typeof usage.output_tokens === "number") this.#completionTokens = usage.output_tokens
        if (typeof usage.input_tokens === "number") this.#promptTokens = usage.input_tokens
        if (isPlainObject(payload.delta) && typeof payload.delta.stop_reason === "string")
          this.#stopReason = payload.delta.stop_reason
        return
      }
      case "error":
        throw new LLMStreamError(
          isPlainObject(payload.error) ? errorFields(payload.error) : {},
          this.#delivered,
        )
      default:
        return
    }
  }

  #delta(block: OpenBlock | undefined, delta: Record<string, unknown>): void {
    if (!block) return
    switch (delta.type) {
      case "text_delta":
        if (typeof delta.text !== "string") return
        block.text = String(block.text ?? "") + delta.text
        if (delta.text !== "") {
          this.#delivered = true
          this.#listener.onText?.(delta.text)
        }
        return
      case "input_json_delta":
        if (typeof delta.partial_json === "string")
          block.partialJson = (block.partialJson ?? "") + delta.partial_json
        return
      case "thinking_delta":
        if (typeof delta.thinking !== "string") return
        block.thinking = String(block.thinking ?? "") + delta.thinking
        if (delta.thinking !== "") {
          this.#delivered = true
          this.#listener.onReasoning?.(delta.thinking)
        }
        return
      case "signature_delta":
        if (typeof delta.signature === "string") block.signature = delta.signature
        return
      case "citations_delta":
        if (delta.citation !== undefined)
          block.citations = [...(Array.isArray(block.citations) ? block.citations : []), delta.citation]
        return
    }
  }

  #closeToolInput(block: OpenBlock): void {
    const raw = block.partialJson ?? ""
    delete block.partialJson
    if (raw.trim() === "") return // the input came whole with content_block_start
    const parsed = parseToolArguments(String(block.id), String(block.name), raw)
    if (parsed.argumentsError) {
      // The transcript must stay valid for the next request, so it keeps the input it had;
      // a client call becomes an error result the model sees.
      if (block.type === "tool_use") this.#argumentErrors.set(String(block.id), parsed.argumentsError)
      if (!isPlainObject(block.input)) block.input = {}
    } else block.input = parsed.args
  }

  finish(): ModelTurn {
    if (!this.#started) throw new LLMResponseError("the Anthropic-style stream ended without message_start")
    for (const block of this.#blocks) if (block?.partialJson !== undefined) this.#closeToolInput(block)
    const content = this.#blocks.filter((b) => b !== undefined) as unknown as AnthropicContentBlock[]
    const turn = turnOf(content, this.#stopReason, this.#promptTokens, this.#completionTokens)
    for (const call of turn.toolCalls) {
      const error = this.#argumentErrors.get(call.id)
      if (error) {
        call.argumentsError = error
        call.args = undefined
      }
    }
    return turn
  }
}
