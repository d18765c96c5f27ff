import { LLMResponseError, LLMStreamError } from "../errors.js"
import { isPlainObject } from "../internal/plain-object.js"
import type { ResponsesContentPart, ResponsesItem, Tool } from "../types.js"
import {
  type AssistantTurn,
  type Dialect,
  type FinishReason,
  type ModelToolCall,
  type ModelTurn,
  type TurnListener,
  parseToolArguments,
} from "./model-turn.js"
import { bearerHeaders, errorFields, num } from "./openai.js"
import { dataUrl, userTurn } from "./prompt.js"
import { eventPayload } from "./sse.js"
import type { BodyInput, StreamAccumulator, WireFormat } from "./wire-format.js"

type Item = Record<string, unknown>

/** Items a model turn produces (reasoning, assistant messages, calls), as opposed to inputs. */
function isTurnItem(item: Item): boolean {
  if (item.role === "assistant") return true
  const type = item.type
  return (
    typeof type === "string" &&
    type !== "message" &&
    type !== "item_reference" &&
    !type.endsWith("_output") &&
    item.role === undefined
  )
}

/** @internal The Responses transcript shape: a list of input items. */
export const responsesDialect: Dialect = {
  userMessage: (prompt) =>
    userTurn(prompt, (part): ResponsesContentPart => {
      if (part.type === "text") return { type: "input_text", text: part.text }
      if (part.type === "image")
        return {
          type: "input_image",
          image_url: "url" in part ? part.url : dataUrl(part.mediaType, part.data),
        }
      return {
        type: "input_file",
        file_data: dataUrl(part.mediaType, part.data),
        filename: part.filename ?? "file",
      }
    }),
  toolResultMessages: (results) =>
    results.map(
      (r) => ({ type: "function_call_output", call_id: r.id, output: r.output }) satisfies ResponsesItem,
    ),
  lastAssistantTurn(messages): AssistantTurn | undefined {
    let end = messages.length - 1
    while (end >= 0 && !isTurnItem(messages[end] as Item)) end--
    if (end < 0) return undefined
    let start = end
    while (start > 0 && isTurnItem(messages[start - 1] as Item)) start--
    const calls: ModelToolCall[] = []
    for (let i = start; i <= end; i++) {
      const item = messages[i] as Item
      if (item.type === "function_call") calls.push(callOf(item))
    }
    return { start, end, calls }
  },
  assistantText(message) {
    const item = message as Item
    if (item.role !== "assistant") return undefined
    if (typeof item.content === "string") return item.content
    if (!Array.isArray(item.content)) return ""
    return item.content
      .map((part) => (isPlainObject(part) && part.type === "output_text" ? String(part.text ?? "") : ""))
      .join("")
  },
  recordedResults(messages) {
    const found = new Map<string, { id: string; output: string; isError: boolean }>()
    for (const m of messages) {
      const item = m as Item
      if (item.type === "function_call_output" && typeof item.call_id === "string") {
        const output = typeof item.output === "string" ? item.output : JSON.stringify(item.output ?? "")
        found.set(item.call_id, { id: item.call_id, output, isError: false })
      }
    }
    return found
  },
}

/** The tool-call id of a function call is its `call_id`, never the `fc_…` item id. */
function callOf(item: Item): ModelToolCall {
  const raw = typeof item.arguments === "string" ? item.arguments : ""
  return parseToolArguments(String(item.call_id ?? item.id ?? ""), String(item.name ?? ""), raw)
}

/** Responses function tools, derived from the toolkit's cached chat rendering. */
const rendered = new WeakMap<object, unknown[]>()

function renderTools(tools: BodyInput["tools"]): unknown[] {
  if (!tools) return []
  if (Array.isArray(tools))
    return tools.map((t: Tool) => ({
      type: "function",
      name: t.name,
      description: t.description,
      parameters: t.inputSchema,
    }))
  const chat = tools.toOpenAI() as { function: Record<string, unknown> }[]
  let out = rendered.get(chat)
  if (!out) {
    out = chat.map((t) => ({ type: "function", ...t.function }))
    rendered.set(chat, out)
  }
  return out
}

/** @internal OpenAI Responses: `POST {baseUrl}/responses`, stateless. */
export const responsesWire: WireFormat = {
  style: "openai-responses",
  dialect: responsesDialect,
  keyEnv: ["OPENAI_API_KEY", "OPENROUTER_API_KEY"],
  endpoint: (baseUrl) => `${baseUrl.replace(/\/+$/, "")}/responses`,
  headers: bearerHeaders,
  body({ model, system, messages, tools, stream, params, output }) {
    // Stateless: nothing is kept server-side, the whole input goes every turn, and reasoning
    // comes back encrypted so it can be sent with the next turn.
    const body: Record<string, unknown> = {
      ...params,
      model,
      store: false,
      include: ["reasoning.encrypted_content"],
    }
    if (system && body.instructions === undefined) body.instructions = system
    body.input = messages
    const list = renderTools(tools)
    if (list.length > 0) body.tools = list
    else delete body.tool_choice
    if (output) {
      const text = isPlainObject(body.text) ? body.text : {}
      body.text = {
        ...text,
        format: { type: "json_schema", name: output.name, schema: output.schema, strict: true },
      }
    }
    if (stream) body.stream = true
    return body
  },
  parse(json) {
    if (!isPlainObject(json) || !Array.isArray(json.output))
      throw new LLMResponseError("the Responses-style reply has no output array")
    if (json.status === "failed") {
      const error = isPlainObject(json.error) ? errorFields(json.error) : {}
      throw new LLMResponseError(
        `the Responses-style reply failed: ${error.code ?? ""} ${error.message ?? ""}`,
      )
    }
    return turnOf(json, json.output as Item[])
  },
  streamAccumulator: (listener) => new ResponsesStream(listener),
}

const INCOMPLETE_REASONS: Record<string, FinishReason> = {
  max_output_tokens: "length",
  content_filter: "content_filter",
}

function turnOf(response: Record<string, unknown>, output: Item[]): ModelTurn {
  let text = ""
  let refusal: string | undefined
  const toolCalls: ModelToolCall[] = []
  for (const [i, item] of output.entries()) {
    if (!isPlainObject(item))
      throw new LLMResponseError(`the Responses-style reply has a malformed item ${i}`)
    if (item.type === "function_call") toolCalls.push(callOf(item))
    else if (item.type === "message" && Array.isArray(item.content)) {
      for (const part of item.content) {
        if (!isPlainObject(part)) continue
        if (part.type === "output_text" && typeof part.text === "string") text += part.text
        else if (part.type === "refusal" && typeof part.refusal === "string")
          refusal = (refusal ?? "") + part.refusal
      }
    }
  }
  const usage = isPlainObject(response.usage) ? response.usage : {}
  const turn: ModelTurn = {
    messages: output as ResponsesItem[],
    text,
    toolCalls: refusal === undefined ? toolCalls : [],
    usage: { promptTokens: num(usage.input_tokens), completionTokens: num(usage.output_tokens) },
    finishReason: finishOf(response, refusal, toolCalls.length),
  }
  if (refusal !== undefined) turn.refusal = refusal
  return turn
}

function finishOf(
  response: Record<string, unknown>,
  refusal: string | undefined,
  calls: number,
): FinishReason {
  if (response.status === "incomplete") {
    const details = isPlainObject(response.incomplete_details) ? response.incomplete_details : {}
    const reason = typeof details.reason === "string" ? details.reason : "incomplete"
    return INCOMPLETE_REASONS[reason] ?? reason
  }
  if (refusal !== undefined) return "refusal"
  return calls > 0 ? "tool_calls" : "stop"
}

/**
 * Assembles a streamed response. Deltas go to the listener as they come; the turn itself is
 * the `response` of the closing `response.completed` / `response.incomplete` event (its
 * reasoning items carry the final `encrypted_content`), or the items of `output_item.done`
 * events when a gateway sends the closing event without its output.
 */
class ResponsesStream implements StreamAccumulator {
  readonly #listener: TurnListener
  readonly #items: Item[] = []
  #final: Record<string, unknown> | undefined
  #delivered = false

  constructor(listener: TurnListener) {
    this.#listener = listener
  }

  accept(event: { event: string; data: string }): void {
    const payload = eventPayload("Responses-style", event.data)
    if (!payload) return
    const type = typeof payload.type === "string" ? payload.type : event.event
    switch (type) {
      case "response.output_text.delta":
        if (typeof payload.delta === "string" && payload.delta !== "") {
          this.#delivered = true
          this.#listener.onText?.(payload.delta)
        }
        return
      case "response.refusal.delta":
        if (typeof payload.delta === "string" && payload.delta !== "") {
          this.#delivered = true
          this.#listener.onRefusal?.(payload.delta)
        }
        return
      case "response.reasoning_summary_text.delta":
      case "response.reasoning_text.delta":
        if (typeof payload.delta === "string" && payload.delta !== "") {
          this.#delivered = true
          this.#listener.onReasoning?.(payload.delta)
        }
        return
      case "response.output_item.added":
      case "response.output_item.done":
        if (isPlainObject(payload.item)) this.#items[num(payload.output_index)] = { ...payload.item }
        return
      case "response.function_call_arguments.delta": {
        const item = this.#items[num(payload.output_index)]
        if (item?.type === "function_call" && typeof payload.delta === "string")
          item.arguments = String(item.arguments ?? "") + payload.delta
        return
      }
      case "response.completed":
      case "response.incomplete":
        if (isPlainObject(payload.response)) this.#final = payload.response
        return
      case "response.failed": {
        const response = isPlainObject(payload.response) ? payload.response : {}
        const fields = isPlainObject(response.error) ? errorFields(response.error) : {}
        // A failed response names its error by `code` only.
        throw new LLMStreamError({ ...fields, type: fields.type ?? fields.code }, this.#delivered)
      }
      case "error": {
        // The error event nests its fields; early versions sent them at the top level.
        const fields = errorFields(isPlainObject(payload.error) ? payload.error : payload)
        if (fields.type === "error") delete fields.type
        throw new LLMStreamError(fields, this.#delivered)
      }
      default:
        return
    }
  }

  finish(): ModelTurn {
    const final = this.#final
    if (!final) throw new LLMResponseError("the Responses-style stream ended without response.completed")
    const output =
      Array.isArray(final.output) && final.output.length > 0 ? (final.output as Item[]) : this.#items
    return turnOf(
      final,
      output.filter((item) => item !== undefined),
    )
  }
}
