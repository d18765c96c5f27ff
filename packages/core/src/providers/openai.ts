import { LLMResponseError } from "../errors.js"
import type { OpenAIMessage, OpenAIToolCall, Tool } from "../types.js"
import { isPlainObject } from "../tools/validate-args.js"
import { type Dialect, type ModelToolCall, type ModelTurn, parseToolArguments } from "./model-turn.js"
import type { BodyInput, StreamAccumulator, WireFormat } from "./wire-format.js"

/** @internal The OpenAI chat transcript shape. */
export const openaiDialect: Dialect = {
  userMessage: (text) => ({ role: "user", content: text }),
  toolResultMessages: (results) =>
    results.map((r) => ({ role: "tool", tool_call_id: r.id, content: r.output }) satisfies OpenAIMessage),
  toolCallsOf(message) {
    if (message.role !== "assistant") return undefined
    const calls = (message as { tool_calls?: OpenAIToolCall[] }).tool_calls ?? []
    return calls.map((c) => parseToolArguments(c.id, c.function.name, c.function.arguments))
  },
  assistantText(message) {
    if (message.role !== "assistant") return undefined
    return typeof message.content === "string" ? message.content : ""
  },
  recordedResults(messages) {
    const found = new Map<string, { id: string; output: string; isError: boolean }>()
    for (const m of messages) {
      if (m.role === "tool")
        found.set(m.tool_call_id, { id: m.tool_call_id, output: m.content, isError: false })
    }
    return found
  },
}

/** @internal Builds the assistant message the transcript keeps for a turn. */
export function openaiAssistantMessage(text: string, calls: ModelToolCall[]): OpenAIMessage {
  if (calls.length === 0) return { role: "assistant", content: text }
  return {
    role: "assistant",
    content: text === "" ? null : text,
    tool_calls: calls.map((c) => ({
      id: c.id,
      type: "function",
      function: { name: c.name, arguments: c.arguments },
    })),
  }
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
  endpoint: (baseUrl) => `${baseUrl.replace(/\/+$/, "")}/chat/completions`,
  headers(apiKey) {
    const headers: Record<string, string> = { "content-type": "application/json" }
    if (apiKey) headers.authorization = `Bearer ${apiKey}`
    return headers
  },
  body({ model, system, messages, tools, stream, params }) {
    const body: Record<string, unknown> = { ...params, model }
    const first = messages[0]
    body.messages =
      system && first?.role !== "system" ? [{ role: "system", content: system }, ...messages] : messages
    const rendered = renderTools(tools)
    if (rendered.length > 0) body.tools = rendered
    else delete body.tool_choice
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
    const rawCalls = Array.isArray(message.tool_calls) ? message.tool_calls : []
    const toolCalls = rawCalls.map((c, i) => {
      if (!isPlainObject(c) || !isPlainObject(c.function) || typeof c.function.name !== "string") {
        throw new LLMResponseError(`the OpenAI-style reply has a malformed tool call at index ${i}`)
      }
      const raw = typeof c.function.arguments === "string" ? c.function.arguments : ""
      return parseToolArguments(typeof c.id === "string" ? c.id : `call_${i}`, c.function.name, raw)
    })
    const usage = isPlainObject(json) && isPlainObject(json.usage) ? json.usage : {}
    return {
      message: openaiAssistantMessage(text, toolCalls),
      text,
      toolCalls,
      usage: { promptTokens: num(usage.prompt_tokens), completionTokens: num(usage.completion_tokens) },
    }
  },
  streamAccumulator: () => new OpenAIStream(),
}

class OpenAIStream implements StreamAccumulator {
  #text = ""
  #calls: { id: string; name: string; arguments: string }[] = []
  #usage = { promptTokens: 0, completionTokens: 0 }
  #sawChoice = false

  accept(event: { data: string }): string | undefined {
    if (event.data === "[DONE]") return undefined
    let chunk: unknown
    try {
      chunk = JSON.parse(event.data)
    } catch {
      throw new LLMResponseError(
        `the OpenAI-style stream sent a chunk that is not JSON: ${event.data.slice(0, 200)}`,
      )
    }
    if (!isPlainObject(chunk)) return undefined
    if (isPlainObject(chunk.error)) {
      throw new LLMResponseError(
        `the OpenAI-style stream reported an error: ${String(chunk.error.message ?? "")}`,
      )
    }
    if (isPlainObject(chunk.usage)) {
      this.#usage = {
        promptTokens: num(chunk.usage.prompt_tokens),
        completionTokens: num(chunk.usage.completion_tokens),
      }
    }
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined
    if (!isPlainObject(choice)) return undefined
    this.#sawChoice = true
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
        if (typeof part.id === "string") call.id = part.id
        const fn = isPlainObject(part.function) ? part.function : {}
        if (typeof fn.name === "string") call.name += fn.name
        if (typeof fn.arguments === "string") call.arguments += fn.arguments
      }
    }
    if (typeof delta.content === "string" && delta.content !== "") {
      this.#text += delta.content
      return delta.content
    }
    return undefined
  }

  finish(): ModelTurn {
    if (!this.#sawChoice) throw new LLMResponseError("the OpenAI-style stream ended without any choice")
    const toolCalls = this.#calls
      .filter((c) => c !== undefined)
      .map((c, i) => parseToolArguments(c.id || `call_${i}`, c.name, c.arguments))
    return {
      message: openaiAssistantMessage(this.#text, toolCalls),
      text: this.#text,
      toolCalls,
      usage: this.#usage,
    }
  }
}

/** @internal A token count, or 0 when absent. */
export function num(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0
}
