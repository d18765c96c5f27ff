import type { IncomingHttpHeaders } from "node:http"
import type { EndpointStyle } from "../types.js"

/** A tool result the client sent back to the fake model, in a style-neutral shape. */
export interface FakeToolResult {
  /** OpenAI `tool_call_id`, Anthropic `tool_use_id` or Responses `call_id`. */
  id: string
  /** The result text; text parts/blocks are joined with newlines. */
  content: string
  /** Anthropic `is_error`; always `false` for OpenAI, which has no such flag. */
  isError: boolean
}

/** A request the fake LLM server received, with the parts tests usually assert on pre-extracted. */
export interface FakeRequestView {
  /** 0-based order of arrival (restarts at 0 after `reset()`). */
  index: number
  /**
   * The wire format, from the route: `openai` (`/chat/completions`), `openai-responses`
   * (`/responses`) or `anthropic` (`/v1/messages`).
   */
  style: EndpointStyle
  /** The URL path without the query string. */
  path: string
  /** Request headers with lower-case names; repeated headers are joined with ", ". */
  headers: Record<string, string>
  /** The parsed JSON body, untouched. */
  body: any
  /** True when `body.stream === true`. */
  stream: boolean
  /** `body.model`, or "" when absent. */
  model: string
  /**
   * OpenAI: the system (and developer) messages' text; Anthropic: `body.system`; Responses:
   * `body.instructions` and system/developer items; "" if none.
   */
  system: string
  /** Text of the last user message that has text (string content or text parts/blocks); "" if none. */
  lastUserText: string
  /**
   * Tool results sent after the last assistant message: OpenAI `role: "tool"` messages, Anthropic
   * `tool_result` blocks, Responses `function_call_output` items.
   */
  toolResults: FakeToolResult[]
  /** Names of the tools offered in the request ([] if none). */
  toolNames: string[]
}

type Json = Record<string, any>

/** Builds the {@link FakeRequestView} of a parsed request body. */
export function buildRequestView(
  index: number,
  style: EndpointStyle,
  path: string,
  headers: IncomingHttpHeaders,
  body: Json,
): FakeRequestView {
  const responses = style === "openai-responses"
  const list = responses ? body.input : body.messages
  const messages: Json[] = Array.isArray(list) ? list.filter(isObject) : []
  const lastAssistant = messages.findLastIndex(
    (message) => message.role === "assistant" || (responses && isResponsesTurnItem(message)),
  )
  const sinceAssistant = messages.slice(lastAssistant + 1)
  const systemTexts = messages
    .filter((message) => message.role === "system" || message.role === "developer")
    .map((message) => textOf(message.content) ?? "")
  if (responses && typeof body.instructions === "string") systemTexts.unshift(body.instructions)
  const system = style === "anthropic" ? (textOf(body.system) ?? "") : systemTexts.join("\n")
  const toolResults = {
    openai: openaiToolResults,
    anthropic: anthropicToolResults,
    "openai-responses": responsesToolResults,
  }[style](sinceAssistant)
  return {
    index,
    style,
    path,
    headers: flattenHeaders(headers),
    body,
    stream: body.stream === true,
    model: typeof body.model === "string" ? body.model : "",
    system,
    lastUserText: lastUserText(messages),
    toolResults,
    toolNames: toolNames(style, body.tools),
  }
}

/** Items of a Responses model turn (reasoning, calls, assistant messages). */
function isResponsesTurnItem(item: Json): boolean {
  return item.role === undefined && typeof item.type === "string" && !item.type.endsWith("_output")
}

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value)
}

/** The text of string content or of text parts/blocks; undefined when there is none. */
function textOf(content: unknown): string | undefined {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return undefined
  const texts = content
    .filter(
      (part) =>
        isObject(part) &&
        (part.type === "text" || part.type === "input_text" || part.type === "output_text") &&
        typeof part.text === "string",
    )
    .map((part) => part.text as string)
  return texts.length > 0 ? texts.join("\n") : undefined
}

function lastUserText(messages: Json[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!
    if (message.role !== "user") continue
    const text = textOf(message.content)
    if (text !== undefined) return text
  }
  return ""
}

function openaiToolResults(messages: Json[]): FakeToolResult[] {
  return messages
    .filter((message) => message.role === "tool")
    .map((message) => ({
      id: String(message.tool_call_id ?? ""),
      content: textOf(message.content) ?? "",
      isError: false,
    }))
}

function anthropicToolResults(messages: Json[]): FakeToolResult[] {
  const results: FakeToolResult[] = []
  for (const message of messages) {
    if (message.role !== "user" || !Array.isArray(message.content)) continue
    for (const block of message.content) {
      if (!isObject(block) || block.type !== "tool_result") continue
      results.push({
        id: String(block.tool_use_id ?? ""),
        content: textOf(block.content) ?? "",
        isError: block.is_error === true,
      })
    }
  }
  return results
}

function responsesToolResults(items: Json[]): FakeToolResult[] {
  return items
    .filter((item) => item.type === "function_call_output")
    .map((item) => ({
      id: String(item.call_id ?? ""),
      content: typeof item.output === "string" ? item.output : (textOf(item.output) ?? ""),
      isError: false,
    }))
}

function toolNames(style: EndpointStyle, tools: unknown): string[] {
  if (!Array.isArray(tools)) return []
  return tools
    .filter(isObject)
    .map((tool) => (style === "openai" ? tool.function?.name : tool.name))
    .filter((name): name is string => typeof name === "string")
}

function flattenHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(", ") : value
  }
  return flat
}
