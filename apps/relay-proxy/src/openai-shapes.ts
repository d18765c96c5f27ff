import type {
  AnthropicContentBlock,
  AnthropicMessage,
  EndpointStyle,
  JSONSchema,
  Message,
  OpenAIMessage,
  ResponsesItem,
} from "@toolnexus/core"
import { badRequest } from "./proxy-error.js"

/** A tool the caller declared: it becomes a relay tool the caller executes itself. */
export interface ChatToolDeclaration {
  name: string
  description: string
  parameters: JSONSchema
}

/** A tool call on an assistant message of the caller's history. */
export interface ChatToolCall {
  id: string
  name: string
  /** The raw JSON arguments string, as the model produced it. */
  arguments: string
}

/** One message of a chat-completions request, normalised to plain text content. */
export type ChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | { role: "assistant"; content: string | null; toolCalls: ChatToolCall[] }
  | { role: "tool"; toolCallId: string; content: string }

/** The parts of a chat-completions request the proxy acts on. */
export interface ChatRequest {
  messages: ChatMessage[]
  /** `undefined` when the request declared no tools (a continuation then reuses the stored ones). */
  tools: ChatToolDeclaration[] | undefined
  /** `stream: true`: answer with server-sent `chat.completion.chunk` events. */
  stream: boolean
  /** `stream_options.include_usage`: end the stream with a usage chunk. */
  includeUsage: boolean
  /** `response_format: {type: "json_schema", …}`: the schema the answer must match. */
  output: JSONSchema | undefined
}

type Json = Record<string, unknown>

export const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * Validates a parsed chat-completions body and normalises its messages and tools.
 *
 * @throws ProxyError (400) naming the first field that cannot be used, including `n` > 1,
 *   which this proxy does not implement.
 */
export function parseChatRequest(body: unknown): ChatRequest {
  if (!isObject(body)) throw badRequest("the request body must be a JSON object")
  const stream = optionalBoolean(body.stream, "stream") ?? false
  const options = body.stream_options
  if (options !== undefined && options !== null && !isObject(options)) {
    throw badRequest("stream_options must be an object", "stream_options")
  }
  const includeUsage = optionalBoolean(options?.include_usage, "stream_options.include_usage") ?? false
  if (body.n !== undefined && body.n !== null && body.n !== 1) {
    throw badRequest("only n = 1 is supported by this proxy", "n")
  }
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    throw badRequest("messages must be a non-empty array", "messages")
  }
  const messages = body.messages.map((message, i) => parseMessage(message, `messages[${i}]`))
  const tools = body.tools === undefined || body.tools === null ? undefined : parseTools(body.tools)
  const format = body.response_format
  if (format !== undefined && format !== null && !isObject(format)) {
    throw badRequest("response_format must be an object", "response_format")
  }
  const output =
    format?.type === "json_schema"
      ? outputSchema(format.json_schema, "response_format.json_schema")
      : undefined
  return { messages, tools, stream, includeUsage, output }
}

/**
 * The schema of a `json_schema` response format (`{name, schema, strict?}`), for the client's
 * `output` option. Its `name` travels as the schema's `title`, which core sends as the format's name.
 */
export function outputSchema(raw: unknown, at: string): JSONSchema {
  if (!isObject(raw) || !isObject(raw.schema)) {
    throw badRequest(`${at} must be {name, schema: a JSON Schema object, strict?}`, at)
  }
  const name = typeof raw.name === "string" ? raw.name : undefined
  return raw.schema.title === undefined && name !== undefined ? { ...raw.schema, title: name } : raw.schema
}

/** A boolean field that may be absent or null. */
export function optionalBoolean(value: unknown, at: string): boolean | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value !== "boolean") throw badRequest(`${at} must be a boolean`, at)
  return value
}

const ROLES = '"system", "developer", "user", "assistant", "tool"'

function parseMessage(raw: unknown, at: string): ChatMessage {
  if (!isObject(raw)) throw badRequest(`${at} must be an object`, at)
  switch (raw.role) {
    case "system":
    case "developer":
      // "developer" is the newer name of the same instruction role.
      return { role: "system", content: textOf(raw.content, `${at}.content`) }
    case "user":
      return { role: "user", content: textOf(raw.content, `${at}.content`) }
    case "assistant": {
      const toolCalls = parseToolCalls(raw.tool_calls, `${at}.tool_calls`)
      const content =
        raw.content === undefined || raw.content === null ? null : textOf(raw.content, `${at}.content`)
      return { role: "assistant", content, toolCalls }
    }
    case "tool": {
      if (typeof raw.tool_call_id !== "string" || raw.tool_call_id === "") {
        throw badRequest(`${at}.tool_call_id must be a non-empty string`, `${at}.tool_call_id`)
      }
      return { role: "tool", toolCallId: raw.tool_call_id, content: textOf(raw.content, `${at}.content`) }
    }
    default:
      throw badRequest(`${at}.role must be one of ${ROLES}, got ${JSON.stringify(raw.role)}`, `${at}.role`)
  }
}

/** Text part types of chat completions (`text`) and the Responses API (`input_text`, `output_text`). */
const TEXT_PARTS = new Set(["text", "input_text", "output_text"])

/**
 * String content, or the text of text (and refusal) parts joined by newlines; other parts
 * (images, audio, files) cannot be relayed as text and are refused.
 */
export function textOf(content: unknown, at: string): string {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) throw badRequest(`${at} must be a string or an array of text parts`, at)
  return content
    .map((part, i) => {
      if (isObject(part) && TEXT_PARTS.has(part.type as string) && typeof part.text === "string")
        return part.text
      if (isObject(part) && part.type === "refusal" && typeof part.refusal === "string") return part.refusal
      const type = isObject(part) ? JSON.stringify(part.type) : "a non-object"
      throw badRequest(`${at}[${i}] is ${type}; only text content parts are supported`, `${at}[${i}]`)
    })
    .join("\n")
}

function parseToolCalls(raw: unknown, at: string): ChatToolCall[] {
  if (raw === undefined || raw === null) return []
  if (!Array.isArray(raw)) throw badRequest(`${at} must be an array`, at)
  return raw.map((call, i): ChatToolCall => {
    const here = `${at}[${i}]`
    const fn = isObject(call) ? call.function : undefined
    if (!isObject(call) || typeof call.id !== "string" || !isObject(fn) || typeof fn.name !== "string") {
      throw badRequest(`${here} must be {id, type: "function", function: {name, arguments}}`, here)
    }
    const args = fn.arguments === undefined ? "{}" : fn.arguments
    if (typeof args !== "string") throw badRequest(`${here}.function.arguments must be a JSON string`, here)
    return { id: call.id, name: fn.name, arguments: args }
  })
}

function parseTools(raw: unknown): ChatToolDeclaration[] {
  if (!Array.isArray(raw)) throw badRequest("tools must be an array", "tools")
  return raw.map((tool, i): ChatToolDeclaration => {
    const at = `tools[${i}]`
    const fn = isObject(tool) ? tool.function : undefined
    if (!isObject(tool) || tool.type !== "function" || !isObject(fn)) {
      throw badRequest(`${at} must be {type: "function", function: {name, description?, parameters?}}`, at)
    }
    return toolDeclaration(fn, `${at}.function`)
  })
}

/**
 * A function declaration `{name, description?, parameters?}` (chat's `function` object, or a
 * Responses API function tool itself).
 */
export function toolDeclaration(fn: Json, at: string): ChatToolDeclaration {
  if (typeof fn.name !== "string") throw badRequest(`${at}.name must be a string`, `${at}.name`)
  // null is what some clients send for an absent description.
  if (fn.description !== undefined && fn.description !== null && typeof fn.description !== "string") {
    throw badRequest(`${at}.description must be a string`, `${at}.description`)
  }
  if (fn.parameters !== undefined && fn.parameters !== null && !isObject(fn.parameters)) {
    throw badRequest(`${at}.parameters must be a JSON Schema object`, `${at}.parameters`)
  }
  return {
    name: fn.name,
    description: (fn.description as string | null | undefined) ?? "",
    parameters: (fn.parameters as JSONSchema | null | undefined) ?? { type: "object", properties: {} },
  }
}

/** The tool messages that end the conversation: the caller's results for the last tool calls. */
export function trailingToolMessages(messages: ChatMessage[]): Extract<ChatMessage, { role: "tool" }>[] {
  let start = messages.length
  while (start > 0 && messages[start - 1]!.role === "tool") start--
  return messages.slice(start) as Extract<ChatMessage, { role: "tool" }>[]
}

/**
 * The caller's history as a transcript in the upstream's own message shape.
 *
 * Anthropic has no system role inside `messages` and the client's system prompt is fixed per
 * client, so system messages travel as user text marked `[system]` at their position; adjacent
 * messages of one role are merged because Anthropic expects user and assistant turns to alternate.
 */
export function toUpstreamMessages(messages: ChatMessage[], style: EndpointStyle): Message[] {
  if (style === "openai") return messages.map(toOpenAI)
  if (style === "openai-responses") return messages.flatMap(toResponses)
  return toAnthropic(messages)
}

function toResponses(message: ChatMessage): ResponsesItem[] {
  switch (message.role) {
    case "system":
    case "user":
      return [{ role: message.role, content: message.content }]
    case "assistant": {
      const text: ResponsesItem[] = message.content
        ? [{ type: "message", role: "assistant", content: [{ type: "output_text", text: message.content }] }]
        : []
      const calls = message.toolCalls.map(
        (c): ResponsesItem => ({
          type: "function_call",
          call_id: c.id,
          name: c.name,
          arguments: c.arguments,
        }),
      )
      return [...text, ...calls]
    }
    case "tool":
      return [{ type: "function_call_output", call_id: message.toolCallId, output: message.content }]
  }
}

function toOpenAI(message: ChatMessage): OpenAIMessage {
  switch (message.role) {
    case "system":
    case "user":
      return { role: message.role, content: message.content }
    case "assistant":
      return message.toolCalls.length === 0
        ? { role: "assistant", content: message.content }
        : {
            role: "assistant",
            content: message.content,
            tool_calls: message.toolCalls.map((c) => ({
              id: c.id,
              type: "function" as const,
              function: { name: c.name, arguments: c.arguments },
            })),
          }
    case "tool":
      return { role: "tool", tool_call_id: message.toolCallId, content: message.content }
  }
}

function toAnthropic(messages: ChatMessage[]): AnthropicMessage[] {
  const out: { role: "user" | "assistant"; content: AnthropicContentBlock[] }[] = []
  for (const message of messages) {
    const role = message.role === "assistant" ? "assistant" : "user"
    const blocks = anthropicBlocks(message)
    if (blocks.length === 0) continue
    const last = out.at(-1)
    if (last?.role === role) last.content.push(...blocks)
    else out.push({ role, content: blocks })
  }
  // Tool results must open the user turn that follows the tool calls; text sent beside them goes after.
  for (const message of out) {
    if (message.role !== "user") continue
    const results = message.content.filter((b) => b.type === "tool_result")
    if (results.length > 0)
      message.content = [...results, ...message.content.filter((b) => b.type !== "tool_result")]
  }
  return out
}

function anthropicBlocks(message: ChatMessage): AnthropicContentBlock[] {
  switch (message.role) {
    case "system":
      return message.content === "" ? [] : [{ type: "text", text: `[system]\n${message.content}` }]
    case "user":
      return message.content === "" ? [] : [{ type: "text", text: message.content }]
    case "assistant": {
      const blocks: AnthropicContentBlock[] = message.content ? [{ type: "text", text: message.content }] : []
      for (const call of message.toolCalls) {
        blocks.push({
          type: "tool_use",
          id: call.id,
          name: call.name,
          input: argumentsObject(call.arguments),
        })
      }
      return blocks
    }
    case "tool":
      return [{ type: "tool_result", tool_use_id: message.toolCallId, content: message.content }]
  }
}

/** Anthropic wants an object `input`; arguments that are not a JSON object become `{}`. */
function argumentsObject(raw: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(raw)
    return isObject(value) ? value : {}
  } catch {
    return {}
  }
}
