import { randomUUID } from "node:crypto"
import type {
  AnthropicContentBlock,
  AnthropicMessage,
  EndpointStyle,
  JSONSchema,
  Message,
  OpenAIMessage,
  RelayCall,
  Usage,
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
}

/** A chat-completions response body (`object: "chat.completion"`). */
export interface ChatCompletion {
  id: string
  object: "chat.completion"
  created: number
  model: string
  choices: {
    index: number
    message: {
      role: "assistant"
      content: string | null
      refusal: null
      tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[]
    }
    finish_reason: "stop" | "tool_calls" | "length"
    logprobs: null
  }[]
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number }
}

type Json = Record<string, unknown>

const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * Validates a parsed chat-completions body and normalises its messages and tools.
 *
 * @throws ProxyError (400) naming the first field that cannot be used, including `stream: true`
 *   and `n` > 1, which this proxy does not implement.
 */
export function parseChatRequest(body: unknown): ChatRequest {
  if (!isObject(body)) throw badRequest("the request body must be a JSON object")
  if (body.stream === true) {
    throw badRequest("stream: true is not supported by this proxy; send stream: false (or omit it)", "stream")
  }
  if (body.n !== undefined && body.n !== null && body.n !== 1) {
    throw badRequest("only n = 1 is supported by this proxy", "n")
  }
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    throw badRequest("messages must be a non-empty array", "messages")
  }
  const messages = body.messages.map((message, i) => parseMessage(message, `messages[${i}]`))
  const tools = body.tools === undefined || body.tools === null ? undefined : parseTools(body.tools)
  return { messages, tools }
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

/** String content, or the text of text (and refusal) parts; other parts cannot be relayed as text. */
function textOf(content: unknown, at: string): string {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) throw badRequest(`${at} must be a string or an array of text parts`, at)
  return content
    .map((part, i) => {
      if (isObject(part) && part.type === "text" && typeof part.text === "string") return part.text
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
    if (!isObject(tool) || tool.type !== "function" || !isObject(fn) || typeof fn.name !== "string") {
      throw badRequest(`${at} must be {type: "function", function: {name, description?, parameters?}}`, at)
    }
    if (fn.description !== undefined && typeof fn.description !== "string") {
      throw badRequest(`${at}.function.description must be a string`, `${at}.function.description`)
    }
    if (fn.parameters !== undefined && !isObject(fn.parameters)) {
      throw badRequest(`${at}.function.parameters must be a JSON Schema object`, `${at}.function.parameters`)
    }
    return {
      name: fn.name,
      description: fn.description ?? "",
      parameters: fn.parameters ?? { type: "object", properties: {} },
    }
  })
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
  return style === "openai" ? messages.map(toOpenAI) : toAnthropic(messages)
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

/** What one proxied turn produced: final text, or relay calls for the caller to execute. */
export interface CompletionInput {
  model: string
  text: string
  /** Present when the run halted on relay calls: they become `message.tool_calls`. */
  toolCalls?: RelayCall[]
  finishReason: "stop" | "tool_calls" | "length"
  usage: Usage
}

/** Renders a proxied turn as a chat-completions response. */
export function chatCompletion(input: CompletionInput): ChatCompletion {
  const message: ChatCompletion["choices"][number]["message"] = {
    role: "assistant",
    // OpenAI sends null, not "", for an assistant turn made only of tool calls.
    content: input.text === "" && input.toolCalls ? null : input.text,
    refusal: null,
  }
  if (input.toolCalls && input.toolCalls.length > 0) {
    message.tool_calls = input.toolCalls.map((call) => ({
      id: call.id,
      type: "function",
      function: { name: call.name, arguments: call.arguments },
    }))
  }
  return {
    id: `chatcmpl-${randomUUID()}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: input.model,
    choices: [{ index: 0, message, finish_reason: input.finishReason, logprobs: null }],
    usage: {
      prompt_tokens: input.usage.promptTokens,
      completion_tokens: input.usage.completionTokens,
      total_tokens: input.usage.totalTokens,
    },
  }
}
