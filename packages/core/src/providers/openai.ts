import { isCompactionSummary } from "../compaction/summary-message.js"
import { LLMResponseError, LLMStreamError } from "../errors.js"
import { isPlainObject } from "../internal/plain-object.js"
import type { OpenAIContentPart, OpenAIMessage, OpenAIToolCall, Tool } from "../types.js"
import {
  type Dialect,
  type FinishReason,
  type ModelToolCall,
  type ModelTurn,
  type TranscriptToolResult,
  type TurnListener,
  lastAssistantIndex,
  parseToolArguments,
} from "./model-turn.js"
import { dataUrl, userTurn } from "./prompt.js"
import { eventPayload } from "./sse.js"
import type { BodyInput, StreamAccumulator, WireFormat } from "./wire-format.js"

/** @internal The OpenAI chat transcript shape. */
export const openaiDialect: Dialect = {
  userMessage: (prompt) =>
    userTurn(prompt, (part): OpenAIContentPart => {
      if (part.type === "text") return { type: "text", text: part.text }
      if (part.type === "image")
        return {
          type: "image_url",
          image_url: { url: "url" in part ? part.url : dataUrl(part.mediaType, part.data) },
        }
      const file: { file_data: string; filename?: string } = { file_data: dataUrl(part.mediaType, part.data) }
      if (part.filename !== undefined) file.filename = part.filename
      return { type: "file", file }
    }),
  toolResultMessages(results) {
    // The loop pushes these messages into the transcript and drops the array: no `fitted`
    // copy, and one result (a resumed approval's turn) is a literal of its length.
    if (results.length === 1) {
      const r = results[0] as TranscriptToolResult
      return [{ role: "tool", tool_call_id: r.id, content: r.output }]
    }
    // A loop, not `map`: see `parse`.
    const out: OpenAIMessage[] = []
    for (let i = 0; i < results.length; i++) {
      const r = results[i] as TranscriptToolResult
      out.push({ role: "tool", tool_call_id: r.id, content: r.output })
    }
    return out
  },
  lastAssistantTurn(messages) {
    const index = lastAssistantIndex(messages)
    if (index < 0) return undefined
    const calls = (messages[index] as { tool_calls?: OpenAIToolCall[] }).tool_calls ?? []
    return {
      start: index,
      end: index,
      calls: calls.map((c) => parseToolArguments(c.id, c.function.name, c.function.arguments)),
    }
  },
  assistantText(message) {
    const m = message as OpenAIMessage
    if (m.role !== "assistant") return undefined
    return typeof m.content === "string" ? m.content : ""
  },
  recordedResults(messages) {
    const found = new Map<string, { id: string; output: string; isError: boolean }>()
    for (const m of messages) {
      const msg = m as OpenAIMessage
      if (msg.role === "tool")
        found.set(msg.tool_call_id, { id: msg.tool_call_id, output: msg.content, isError: false })
    }
    return found
  },
}

/** @internal Builds the assistant message the transcript keeps for a turn. */
export function openaiAssistantMessage(
  text: string,
  calls: ModelToolCall[],
  refusal?: string,
): OpenAIMessage {
  if (refusal !== undefined) return { role: "assistant", content: text === "" ? null : text, refusal }
  if (calls.length === 0) return { role: "assistant", content: text }
  return {
    role: "assistant",
    content: text === "" ? null : text,
    tool_calls: wireCalls(calls),
  }
}

function wireCalls(calls: ModelToolCall[]): OpenAIToolCall[] {
  const out: OpenAIToolCall[] = []
  for (let i = 0; i < calls.length; i++) {
    const c = calls[i] as ModelToolCall
    out.push({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })
  }
  return fitted(out)
}

/**
 * `out` at its length. A `push` onto an empty array leaves room for 16 more elements (128
 * bytes on 64-bit Node), and a transcript keeps these arrays for as long as its run is parked:
 * the copy has the same elements kind, so readers keep one map.
 */
function fitted<T>(out: T[]): T[] {
  return out.slice()
}

/** @internal OpenAI's `finish_reason` in the normalised vocabulary. */
export function openaiFinishReason(raw: unknown, refusal: string | undefined, calls: number): FinishReason {
  if (refusal !== undefined) return "refusal"
  if (raw === "function_call") return "tool_calls"
  if (typeof raw === "string" && raw !== "") return raw
  return calls > 0 ? "tool_calls" : "stop"
}

function renderTools(tools: BodyInput["tools"]): unknown[] {
  if (!tools) return []
  if (!Array.isArray(tools)) return tools.toOpenAI()
  return tools.map((t: Tool) => ({
    type: "function",
    function: { name: t.name, description: t.description, parameters: t.inputSchema },
  }))
}

/** @internal OpenAI chat completions: `POST {baseUrl}/chat/completions`. */
export const openaiWire: WireFormat = {
  style: "openai",
  dialect: openaiDialect,
  keyEnv: ["OPENAI_API_KEY", "OPENROUTER_API_KEY"],
  endpoint: (baseUrl) => `${baseUrl.replace(/\/+$/, "")}/chat/completions`,
  headers: bearerHeaders,
  body({ model, system, messages, tools, stream, params, output }) {
    const body: Record<string, unknown> = { ...params, model }
    const first = messages[0] as { role?: string; content?: unknown } | undefined
    // A transcript's own leading system message replaces the prompt; a compaction summary does not.
    const ownSystem = first?.role === "system" && !isCompactionSummary(first)
    body.messages = system && !ownSystem ? [{ role: "system", content: system }, ...messages] : messages
    const rendered = renderTools(tools)
    if (rendered.length > 0) body.tools = rendered
    else delete body.tool_choice
    if (output)
      body.response_format = {
        type: "json_schema",
        json_schema: { name: output.name, schema: output.schema, strict: true },
      }
    if (stream) {
      body.stream = true
      body.stream_options = { include_usage: true }
    }
    return body
  },
  parse(json) {
    const choice = isPlainObject(json) && Array.isArray(json.choices) ? json.choices[0] : undefined
    const message = isPlainObject(choice) ? choice.message : undefined
    if (!isPlainObject(message))
      throw new LLMResponseError("the OpenAI-style reply has no choices[0].message")
    const text = typeof message.content === "string" ? message.content : ""
    const refusal =
      typeof message.refusal === "string" && message.refusal !== "" ? message.refusal : undefined
    const rawCalls: unknown[] = Array.isArray(message.tool_calls) ? message.tool_calls : []
    // A loop over one array literal, not `map`: the array `map` makes in the interpreter and the
    // one its optimized inline makes differ in elements kind, and every function that reads
    // `toolCalls` after the caller is optimized deoptimizes on the "wrong map" (a recompile
    // of the whole loop inside the first thousand runs).
    const toolCalls: ModelToolCall[] = []
    for (let i = 0; i < rawCalls.length; i++) {
      const c = rawCalls[i]
      if (!isPlainObject(c) || !isPlainObject(c.function) || typeof c.function.name !== "string") {
        throw new LLMResponseError(`the OpenAI-style reply has a malformed tool call at index ${i}`)
      }
      const raw = typeof c.function.arguments === "string" ? c.function.arguments : ""
      toolCalls.push(parseToolArguments(typeof c.id === "string" ? c.id : `call_${i}`, c.function.name, raw))
    }
    const usage = isPlainObject(json) && isPlainObject(json.usage) ? json.usage : {}
    return openaiTurn(text, fitted(toolCalls), refusal, (choice as Record<string, unknown>).finish_reason, {
      promptTokens: num(usage.prompt_tokens),
      completionTokens: num(usage.completion_tokens),
    })
  },
  streamAccumulator: (listener) => new OpenAIStream(listener),
}

function openaiTurn(
  text: string,
  toolCalls: ModelToolCall[],
  refusal: string | undefined,
  finish: unknown,
  usage: ModelTurn["usage"],
): ModelTurn {
  const turn: ModelTurn = {
    messages: [openaiAssistantMessage(text, toolCalls, refusal)],
    text,
    // A refusal is the whole answer: nothing it carries is executed.
    toolCalls: refusal === undefined ? toolCalls : [],
    usage,
    finishReason: openaiFinishReason(finish, refusal, toolCalls.length),
  }
  if (refusal !== undefined) turn.refusal = refusal
  return turn
}

/** @internal The headers of a bearer-key endpoint (OpenAI chat and Responses). */
export function bearerHeaders(apiKey: string | undefined): Record<string, string> {
  const headers: Record<string, string> = { "content-type": "application/json" }
  if (apiKey) headers.authorization = `Bearer ${apiKey}`
  return headers
}

class OpenAIStream implements StreamAccumulator {
  readonly #listener: TurnListener
  #text = ""
  #refusal: string | undefined
  #finish: unknown
  #calls: { id: string; name: string; arguments: string }[] = []
  #usage = { promptTokens: 0, completionTokens: 0 }
  #sawChoice = false
  #delivered = false

  constructor(listener: TurnListener) {
    this.#listener = listener
  }

  accept(event: { data: string }): void {
    if (event.data === "[DONE]") return
    const chunk = eventPayload("OpenAI-style", event.data)
    if (!chunk) return
    if (isPlainObject(chunk.error)) throw new LLMStreamError(errorFields(chunk.error), this.#delivered)
    if (isPlainObject(chunk.usage)) {
      this.#usage = {
        promptTokens: num(chunk.usage.prompt_tokens),
        completionTokens: num(chunk.usage.completion_tokens),
      }
    }
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined
    if (!isPlainObject(choice)) return
    this.#sawChoice = true
    if (typeof choice.finish_reason === "string") this.#finish = choice.finish_reason
    const delta = isPlainObject(choice.delta) ? choice.delta : {}
    if (Array.isArray(delta.tool_calls)) {
      for (const part of delta.tool_calls) {
        if (!isPlainObject(part)) continue
        const index = typeof part.index === "number" ? part.index : this.#calls.length
        let call = this.#calls[index]
        if (!call) {
          call = { id: "", name: "", arguments: "" }
          this.#calls[index] = call
        }
        // Some servers repeat `"id": ""` on continuation chunks; the first id stays.
        if (typeof part.id === "string" && part.id !== "") call.id = part.id
        const fn = isPlainObject(part.function) ? part.function : {}
        if (typeof fn.name === "string") call.name += fn.name
        if (typeof fn.arguments === "string") call.arguments += fn.arguments
      }
    }
    // OpenAI-compatible servers (DeepSeek, vLLM, OpenRouter) stream reasoning beside the content.
    const reasoning = typeof delta.reasoning_content === "string" ? delta.reasoning_content : delta.reasoning
    if (typeof reasoning === "string" && reasoning !== "") {
      this.#delivered = true
      this.#listener.onReasoning?.(reasoning)
    }
    if (typeof delta.refusal === "string" && delta.refusal !== "") {
      this.#refusal = (this.#refusal ?? "") + delta.refusal
      this.#delivered = true
      this.#listener.onRefusal?.(delta.refusal)
    }
    if (typeof delta.content === "string" && delta.content !== "") {
      this.#text += delta.content
      this.#delivered = true
      this.#listener.onText?.(delta.content)
    }
  }

  finish(): ModelTurn {
    if (!this.#sawChoice) throw new LLMResponseError("the OpenAI-style stream ended without any choice")
    const toolCalls = this.#calls
      .filter((c) => c !== undefined)
      .map((c, i) => parseToolArguments(c.id || `call_${i}`, c.name, c.arguments))
    return openaiTurn(this.#text, toolCalls, this.#refusal, this.#finish, this.#usage)
  }
}

/** @internal The fields of a provider error object, whichever of them it has. */
export function errorFields(error: Record<string, unknown>): {
  type?: string
  code?: string
  message?: string
} {
  const fields: { type?: string; code?: string; message?: string } = {}
  if (typeof error.type === "string") fields.type = error.type
  // Gateways (OpenRouter, say) report an HTTP status as a numeric code.
  if (typeof error.code === "string" || typeof error.code === "number") fields.code = String(error.code)
  if (typeof error.message === "string") fields.message = error.message
  return fields
}

/** @internal A token count, or 0 when absent. */
export function num(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0
}
