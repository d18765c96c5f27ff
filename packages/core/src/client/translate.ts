import { parseToolArguments } from "../providers/model-turn.js"
import type { Toolkit } from "../tools/toolkit.js"
import type { EndpointStyle, Usage } from "../types.js"

/** An OpenAI-shaped chat request for {@link Client.translate}: one request, no loop, nothing executed. */
export interface TranslateRequest {
  /** OpenAI chat `messages`, verbatim (assistant `tool_calls`, `tool` results included). */
  messages: unknown[]
  /** OpenAI `tools` (`{type:"function", function:{...}}`), declared only. */
  tools?: unknown[]
  /** A toolkit whose tools are declared (before `tools`), never executed. */
  toolkit?: Toolkit
  /** OpenAI `tool_choice`. */
  toolChoice?: unknown
  /** Replaces the system prompt (the client's, or the system messages of `messages`). */
  system?: string
  /** The reply's token limit (Anthropic default 4096). */
  maxTokens?: number
  /** Aborts the request (and its retries); an abort rejects with `AbortError`. */
  signal?: AbortSignal
}

/** One tool call the model asked for, OpenAI-shaped. */
export interface TranslatedToolCall {
  /** The provider's call id (Anthropic `tool_use` id, Responses `call_id`); "" when it gave none. */
  id: string
  /** The name of the tool the model called. */
  name: string
  /** The arguments as a JSON string. */
  arguments: string
}

/** The answer of {@link Client.translate}, OpenAI-shaped. */
export interface TranslateResult {
  /** The reply's text, its text parts joined; "" when there is none. */
  text: string
  /** In provider order. */
  toolCalls: TranslatedToolCall[]
  /** Any call ⇒ `tool_calls`; else `length`, `content_filter` or `stop` (OpenAI: the provider's own). */
  finishReason: string
  /** The provider's token counts (0 when it reported none); `totalTokens` is their sum. */
  usage: Usage
  /** The client's `model` option (not the model name the provider reported). */
  model: string
  /** The provider's parsed reply. */
  raw: unknown
}

type Json = Record<string, any>

/** @internal The request body of one translate call, before hooks' results and request params. */
export function translateBody(
  style: EndpointStyle,
  model: string,
  systemPrompt: string | undefined,
  req: TranslateRequest,
  messages: unknown[],
  tools: unknown[],
): Json {
  if (style === "anthropic") {
    const converted = toAnthropicMessages(req.messages)
    const system = req.system ?? systemPrompt ?? converted.system
    const body: Json = {
      model,
      max_tokens: req.maxTokens && req.maxTokens > 0 ? req.maxTokens : 4096,
      messages,
    }
    if (system) body.system = system
    if (tools.length > 0) body.tools = tools
    const choice = anthropicToolChoice(req.toolChoice)
    if (choice) body.tool_choice = choice
    return body
  }
  if (style === "openai-responses") {
    const body: Json = { model, input: messages, store: false }
    const system = req.system ?? systemPrompt
    if (system) body.instructions = system
    if (tools.length > 0) body.tools = tools
    if (req.toolChoice !== undefined) body.tool_choice = responsesToolChoice(req.toolChoice)
    if (req.maxTokens) body.max_output_tokens = req.maxTokens
    return body
  }
  const body: Json = { model, messages }
  if (tools.length > 0) body.tools = tools
  if (req.toolChoice !== undefined) body.tool_choice = req.toolChoice
  if (req.maxTokens) body.max_tokens = req.maxTokens
  return body
}

/** @internal The messages and tools a translate call sends, in the style's own shape. */
export function translateInput(
  style: EndpointStyle,
  systemPrompt: string | undefined,
  req: TranslateRequest,
): { messages: unknown[]; tools: unknown[] } {
  const given = Array.isArray(req.messages) ? req.messages : []
  if (style === "anthropic") {
    return {
      messages: toAnthropicMessages(given).messages,
      tools: [...(req.toolkit?.toAnthropic() ?? []), ...toAnthropicTools(req.tools)],
    }
  }
  if (style === "openai-responses") {
    return {
      messages: toResponsesItems(given),
      tools: [...(req.toolkit?.toOpenAI() ?? []), ...(req.tools ?? [])]
        .map(responsesTool)
        .filter((t) => t !== undefined),
    }
  }
  const system = req.system ?? systemPrompt ?? ""
  const hasSystem = given.some((m) => isRole(m, "system") || isRole(m, "developer"))
  return {
    messages: system && !hasSystem ? [{ role: "system", content: system }, ...given] : given.slice(),
    tools: [...(req.toolkit?.toOpenAI() ?? []), ...(req.tools ?? [])],
  }
}

/** @internal Adds request params after the body's own keys (never messages, tools or stream). */
export function withRequestParams(body: Json, params: Record<string, unknown> | undefined): Json {
  for (const [key, value] of Object.entries(params ?? {})) {
    if (key !== "messages" && key !== "tools" && key !== "stream" && key !== "input") body[key] = value
  }
  return body
}

/** @internal Reads the provider's reply into OpenAI shape. */
export function translateResult(style: EndpointStyle, data: Json, model: string): TranslateResult {
  const usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 }
  if (style === "anthropic") {
    usage.promptTokens = num(data?.usage?.input_tokens)
    usage.completionTokens = num(data?.usage?.output_tokens)
    usage.totalTokens = usage.promptTokens + usage.completionTokens
    const text: string[] = []
    const toolCalls: TranslatedToolCall[] = []
    for (const block of Array.isArray(data?.content) ? data.content : []) {
      if (block?.type === "text") text.push(block.text ?? "")
      else if (block?.type === "tool_use") {
        toolCalls.push({
          id: String(block.id ?? ""),
          name: String(block.name ?? ""),
          arguments: JSON.stringify(block.input ?? {}),
        })
      }
    }
    return {
      text: text.join(""),
      toolCalls,
      finishReason: finishReasonOf(toolCalls.length > 0, data?.stop_reason),
      usage,
      model,
      raw: data,
    }
  }
  if (style === "openai-responses") {
    usage.promptTokens = num(data?.usage?.input_tokens)
    usage.completionTokens = num(data?.usage?.output_tokens)
    usage.totalTokens = usage.promptTokens + usage.completionTokens
    const text: string[] = []
    const toolCalls: TranslatedToolCall[] = []
    let refused = false
    for (const item of Array.isArray(data?.output) ? data.output : []) {
      if (item?.type === "function_call") {
        toolCalls.push({
          id: String(item.call_id ?? ""),
          name: String(item.name ?? ""),
          arguments: argumentsText(item.arguments),
        })
      } else if (item?.type === "message") {
        for (const part of Array.isArray(item.content) ? item.content : []) {
          if (part?.type === "output_text") text.push(part.text ?? "")
          if (part?.type === "refusal") refused = true
        }
      }
    }
    const reason = data?.incomplete_details?.reason
    const stop =
      reason === "max_output_tokens"
        ? "length"
        : reason === "content_filter" || refused
          ? "refusal"
          : undefined
    return {
      text: text.join(""),
      toolCalls,
      finishReason: finishReasonOf(toolCalls.length > 0, stop),
      usage,
      model,
      raw: data,
    }
  }
  usage.promptTokens = num(data?.usage?.prompt_tokens)
  usage.completionTokens = num(data?.usage?.completion_tokens)
  usage.totalTokens = usage.promptTokens + usage.completionTokens
  const choice = data?.choices?.[0]
  const toolCalls: TranslatedToolCall[] = (
    Array.isArray(choice?.message?.tool_calls) ? choice.message.tool_calls : []
  ).map((call: Json) => ({
    id: String(call?.id ?? ""),
    name: String(call?.function?.name ?? ""),
    arguments: argumentsText(call?.function?.arguments),
  }))
  return {
    text: choice?.message?.content ?? "",
    toolCalls,
    finishReason: choice?.finish_reason ?? finishReasonOf(toolCalls.length > 0, undefined),
    usage,
    model,
    raw: data,
  }
}

const num = (value: unknown): number => (typeof value === "number" && Number.isFinite(value) ? value : 0)
const isRole = (m: unknown, role: string) => (m as { role?: unknown } | null)?.role === role

function finishReasonOf(hasCalls: boolean, stop: unknown): string {
  if (hasCalls) return "tool_calls"
  if (stop === "max_tokens" || stop === "length") return "length"
  if (stop === "refusal" || stop === "content_filter") return "content_filter"
  return "stop"
}

/** The text of an OpenAI content value: the string, or its parts' texts joined. */
function textOf(content: unknown): string {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return ""
  return content.map((p) => (typeof p?.text === "string" ? p.text : "")).join("")
}

function argumentsText(args: unknown): string {
  if (typeof args === "string") return args
  if (args && typeof args === "object") return JSON.stringify(args)
  return "{}"
}

function argumentsObject(args: unknown): Record<string, unknown> {
  if (args && typeof args === "object") return args as Record<string, unknown>
  if (typeof args === "string" && args.trim() !== "") {
    try {
      const parsed = JSON.parse(args)
      if (parsed && typeof parsed === "object") return parsed
    } catch {
      // Not JSON: the call goes with empty input rather than failing the request.
    }
  }
  return {}
}

function callsOf(message: Json): TranslatedToolCall[] {
  const calls = Array.isArray(message?.tool_calls) ? message.tool_calls : []
  return calls
    .filter((call: Json) => call?.function)
    .map((call: Json) => ({
      id: String(call.id ?? ""),
      name: String(call.function.name ?? ""),
      arguments: call.function.arguments,
    }))
}

/**
 * Upstream's inbound conversion: tool calls become `tool_use` blocks with parsed input,
 * consecutive tool results one user turn of `tool_result` blocks, system and developer messages
 * hoisted, text parts flattened, empty assistant turns dropped.
 */
function toAnthropicMessages(messages: unknown[]): { messages: Json[]; system: string } {
  const out: Json[] = []
  const system: string[] = []
  let results: Json[] = []
  const flush = () => {
    if (results.length > 0) out.push({ role: "user", content: results })
    results = []
  }
  for (const m of Array.isArray(messages) ? (messages as Json[]) : []) {
    if (!m || typeof m !== "object") continue
    if (m.role === "system" || m.role === "developer") {
      flush()
      const text = textOf(m.content)
      if (text) system.push(text)
    } else if (m.role === "tool" || m.role === "function") {
      const block: Json = { type: "tool_result", content: textOf(m.content) }
      if (m.tool_call_id) block.tool_use_id = String(m.tool_call_id)
      results.push(block)
    } else if (m.role === "assistant") {
      flush()
      const blocks: Json[] = []
      const text = textOf(m.content)
      if (text) blocks.push({ type: "text", text })
      for (const call of callsOf(m)) {
        blocks.push({
          type: "tool_use",
          id: call.id,
          name: call.name,
          input: argumentsObject(call.arguments),
        })
      }
      if (blocks.length > 0) out.push({ role: "assistant", content: blocks })
    } else {
      flush()
      const text = textOf(m.content)
      if (text) out.push({ role: "user", content: text })
      else if (Array.isArray(m.content) && m.content.length > 0)
        out.push({ role: "user", content: m.content })
    }
  }
  flush()
  return { messages: out, system: system.join("\n\n") }
}

function toAnthropicTools(tools: unknown[] | undefined): Json[] {
  const out: Json[] = []
  for (const t of (tools ?? []) as Json[]) {
    if (!t || typeof t !== "object") continue
    const fn = t.function
    if (!fn) {
      // Already Anthropic-shaped.
      if (t.name) out.push(t)
      continue
    }
    if (!fn.name) continue
    const declared: Json = { name: fn.name }
    if (fn.description) declared.description = fn.description
    declared.input_schema = fn.parameters ?? { type: "object", properties: {} }
    out.push(declared)
  }
  return out
}

function anthropicToolChoice(choice: unknown): Json | undefined {
  if (choice === "required" || choice === "any") return { type: "any" }
  if (choice === "none") return { type: "none" }
  const name = (choice as Json | null)?.function?.name
  return typeof choice === "object" && name ? { type: "tool", name } : undefined
}

function responsesToolChoice(choice: unknown): unknown {
  const name = (choice as Json | null)?.function?.name
  return typeof choice === "object" && name ? { type: "function", name } : choice
}

function responsesTool(tool: unknown): Json | undefined {
  const fn = (tool as Json | null)?.function
  if (!fn?.name) return undefined
  const declared: Json = { type: "function", name: fn.name }
  if (fn.description) declared.description = fn.description
  declared.parameters = fn.parameters ?? { type: "object", properties: {} }
  return declared
}

/** OpenAI chat messages as Responses input items. */
function toResponsesItems(messages: unknown[]): Json[] {
  const items: Json[] = []
  for (const m of messages as Json[]) {
    if (!m || typeof m !== "object") continue
    if (m.role === "tool" || m.role === "function") {
      items.push({
        type: "function_call_output",
        call_id: String(m.tool_call_id ?? ""),
        output: textOf(m.content),
      })
    } else if (m.role === "assistant") {
      const text = textOf(m.content)
      if (text) items.push({ role: "assistant", content: text })
      for (const call of callsOf(m)) {
        items.push({
          type: "function_call",
          call_id: call.id,
          name: call.name,
          arguments: argumentsText(call.arguments),
        })
      }
    } else {
      const text = textOf(m.content)
      items.push({
        role: m.role === "developer" ? "developer" : m.role === "system" ? "system" : "user",
        content: text,
      })
    }
  }
  return items
}

/** @internal A translate result as the loop's `afterLLM` hook sees a turn. */
export function translatedTurn(result: TranslateResult): import("../providers/model-turn.js").ModelTurn {
  return {
    messages: [],
    text: result.text,
    toolCalls: result.toolCalls.map((call) => parseToolArguments(call.id, call.name, call.arguments)),
    usage: { promptTokens: result.usage.promptTokens, completionTokens: result.usage.completionTokens },
    finishReason: result.finishReason as import("../providers/model-turn.js").FinishReason,
  }
}
