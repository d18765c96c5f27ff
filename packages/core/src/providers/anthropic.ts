import { LLMResponseError } from "../errors.js"
import type { AnthropicContentBlock, AnthropicMessage, Tool } from "../types.js"
import { isPlainObject } from "../tools/validate-args.js"
import { type Dialect, type ModelToolCall, type ModelTurn, parseToolArguments } from "./model-turn.js"
import { num } from "./openai.js"
import type { BodyInput, StreamAccumulator, WireFormat } from "./wire-format.js"

const DEFAULT_MAX_TOKENS = 4096

/** @internal The Anthropic messages transcript shape. */
export const anthropicDialect: Dialect = {
  userMessage: (text) => ({ role: "user", content: text }),
  toolResultMessages(results) {
    if (results.length === 0) return []
    const content: AnthropicContentBlock[] = results.map((r) =>
      r.isError
        ? { type: "tool_result", tool_use_id: r.id, content: r.output, is_error: true }
        : { type: "tool_result", tool_use_id: r.id, content: r.output },
    )
    return [{ role: "user", content }]
  },
  toolCallsOf(message) {
    if (message.role !== "assistant") return undefined
    const content = (message as AnthropicMessage).content
    if (!Array.isArray(content)) return []
    return content.filter((b) => b.type === "tool_use").map(toolUseCall)
  },
  assistantText(message) {
    if (message.role !== "assistant") return undefined
    const content = (message as AnthropicMessage).content
    if (typeof content === "string") return content
    if (!Array.isArray(content)) return ""
    return content.map((b) => (b.type === "text" ? b.text : "")).join("")
  },
  recordedResults(messages) {
    const found = new Map<string, { id: string; output: string; isError: boolean }>()
    for (const m of messages) {
      if (m.role !== "user" || !Array.isArray(m.content)) continue
      for (const block of m.content as AnthropicContentBlock[]) {
        if (block.type !== "tool_result") continue
        found.set(block.tool_use_id, {
          id: block.tool_use_id,
          output: blockText(block.content),
          isError: block.is_error === true,
        })
      }
    }
    return found
  },
}

function toolUseCall(block: { id: string; name: string; input: Record<string, unknown> }): ModelToolCall {
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

/** @internal Anthropic messages: `POST {baseUrl}/v1/messages`. */
export const anthropicWire: WireFormat = {
  style: "anthropic",
  dialect: anthropicDialect,
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
  body({ model, system, messages, tools, stream, params }) {
    const body: Record<string, unknown> = { max_tokens: DEFAULT_MAX_TOKENS, ...params, model }
    if (system) body.system = system
    body.messages = messages
    const rendered = renderTools(tools)
    if (rendered.length > 0) body.tools = rendered
    else delete body.tool_choice
    if (stream) body.stream = true
    return body
  },
  parse(json) {
    if (!isPlainObject(json) || !Array.isArray(json.content)) {
      throw new LLMResponseError("the Anthropic-style reply has no content array")
    }
    const content = json.content as AnthropicContentBlock[]
    const usage = isPlainObject(json.usage) ? json.usage : {}
    return turnOf(content, num(usage.input_tokens), num(usage.output_tokens))
  },
  streamAccumulator: () => new AnthropicStream(),
}

function turnOf(content: AnthropicContentBlock[], promptTokens: number, completionTokens: number): ModelTurn {
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
      toolCalls.push(toolUseCall(block))
    }
  }
  return {
    message: { role: "assistant", content },
    text,
    toolCalls,
    usage: { promptTokens, completionTokens },
  }
}

/** A block being streamed; tool input arrives as JSON fragments. */
type OpenBlock = Record<string, unknown> & { partialJson?: string }

class AnthropicStream implements StreamAccumulator {
  #blocks: OpenBlock[] = []
  #promptTokens = 0
  #completionTokens = 0
  #started = false
  #argumentErrors = new Map<string, string>()

  accept(event: { event: string; data: string }): string | undefined {
    let payload: unknown
    try {
      payload = JSON.parse(event.data)
    } catch {
      throw new LLMResponseError(
        `the Anthropic-style stream sent an event that is not JSON: ${event.data.slice(0, 200)}`,
      )
    }
    if (!isPlainObject(payload)) return undefined
    switch (payload.type) {
      case "message_start": {
        this.#started = true
        const usage =
          isPlainObject(payload.message) && isPlainObject(payload.message.usage) ? payload.message.usage : {}
        this.#promptTokens = num(usage.input_tokens)
        this.#completionTokens = num(usage.output_tokens)
        return undefined
      }
      case "content_block_start": {
        const block = isPlainObject(payload.content_block) ? { ...payload.content_block } : {}
        if (block.type === "tool_use") block.partialJson = ""
        this.#blocks[num(payload.index)] = block
        return undefined
      }
      case "content_block_delta": {
        const block = this.#blocks[num(payload.index)]
        const delta = isPlainObject(payload.delta) ? payload.delta : {}
        if (!block) return undefined
        if (delta.type === "text_delta" && typeof delta.text === "string") {
          block.text = String(block.text ?? "") + delta.text
          return delta.text
        }
        if (delta.type === "input_json_delta" && typeof delta.partial_json === "string") {
          block.partialJson += delta.partial_json
        } else if (delta.type === "thinking_delta" && typeof delta.thinking === "string") {
          block.thinking = String(block.thinking ?? "") + delta.thinking
        } else if (delta.type === "signature_delta" && typeof delta.signature === "string") {
          block.signature = delta.signature
        }
        return undefined
      }
      case "content_block_stop": {
        const block = this.#blocks[num(payload.index)]
        if (block?.type === "tool_use") this.#closeToolUse(block)
        return undefined
      }
      case "message_delta": {
        const usage = isPlainObject(payload.usage) ? payload.usage : {}
        if (typeof usage.output_tokens === "number") this.#completionTokens = usage.output_tokens
        if (typeof usage.input_tokens === "number") this.#promptTokens = usage.input_tokens
        return undefined
      }
      case "error": {
        const error = isPlainObject(payload.error) ? payload.error : {}
        throw new LLMResponseError(
          `the Anthropic-style stream reported an error: ${String(error.message ?? "")}`,
        )
      }
      default:
        return undefined
    }
  }

  #closeToolUse(block: OpenBlock): void {
    const raw = block.partialJson ?? ""
    delete block.partialJson
    const parsed = parseToolArguments(String(block.id), String(block.name), raw)
    if (parsed.argumentsError) {
      // The transcript must stay valid for the next request, so it keeps an empty input;
      // the call itself becomes an error result the model sees.
      this.#argumentErrors.set(String(block.id), parsed.argumentsError)
      block.input = {}
    } else block.input = parsed.args
  }

  finish(): ModelTurn {
    if (!this.#started) throw new LLMResponseError("the Anthropic-style stream ended without message_start")
    for (const block of this.#blocks) if (block?.partialJson !== undefined) this.#closeToolUse(block)
    const content = this.#blocks.filter((b) => b !== undefined) as unknown as AnthropicContentBlock[]
    const turn = turnOf(content, this.#promptTokens, this.#completionTokens)
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
