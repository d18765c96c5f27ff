import type { JSONSchema } from "@toolnexus/core"
import type { DurableStore } from "@toolnexus/durable"
import { type ResponseItem, previousItems, resolveReferences } from "./item-store.js"
import {
  type ChatMessage,
  type ChatToolDeclaration,
  isObject,
  optionalBoolean,
  outputSchema,
  textOf,
  toolDeclaration,
} from "./openai-shapes.js"
import { badRequest } from "./proxy-error.js"

/** The parts of a `POST /v1/responses` body the proxy acts on. */
export interface ResponsesRequest {
  /** `instructions` first (as a system message), then the input items as chat messages. */
  messages: ChatMessage[]
  /** `undefined` when the request declared no tools (a continuation then reuses the stored ones). */
  tools: ChatToolDeclaration[] | undefined
  instructions: string | null
  /** The conversation's items: those of `previous_response_id`, then the input with references resolved. */
  items: ResponseItem[]
  previousResponseId: string | null
  stream: boolean
  /** `store: false` keeps the response out of the store (no `item_reference` or `previous_response_id` to it). */
  store: boolean
  /** `text.format: {type: "json_schema", …}`: the schema the answer must match. */
  output: JSONSchema | undefined
}

/**
 * Validates a Responses API body, resolves its `item_reference`s and `previous_response_id`,
 * and turns the items into chat messages: message items by role, `function_call` items as the assistant's tool calls, and
 * `function_call_output` items as tool results answering them by `call_id`. Reasoning items are
 * skipped: an upstream behind this proxy never produced one.
 *
 * @throws ProxyError 400 naming the first field that cannot be used (non-function tools, image
 *   or file input, an unknown item reference or previous response)
 */
export async function parseResponsesRequest(
  body: unknown,
  store: DurableStore,
  caller: string | undefined,
): Promise<ResponsesRequest> {
  if (!isObject(body)) throw badRequest("the request body must be a JSON object")
  const previous = body.previous_response_id ?? null
  if (previous !== null && (typeof previous !== "string" || previous === "")) {
    throw badRequest("previous_response_id must be a non-empty string", "previous_response_id")
  }
  const stream = optionalBoolean(body.stream, "stream") ?? false
  const format = isObject(body.text) ? body.text.format : undefined
  const output =
    isObject(format) && format.type === "json_schema" ? outputSchema(format, "text.format") : undefined
  const keep = optionalBoolean(body.store, "store") ?? true
  if (
    body.instructions !== undefined &&
    body.instructions !== null &&
    typeof body.instructions !== "string"
  ) {
    throw badRequest("instructions must be a string", "instructions")
  }
  const instructions = (body.instructions as string | null | undefined) ?? null
  const input = await inputItems(body.input, store, caller)
  if (input.length === 0) throw badRequest("input must not be empty", "input")
  // Instructions are not carried over from the previous response: each request gives its own.
  const earlier = previous === null ? [] : await previousItems(store, previous, caller)
  const messages: ChatMessage[] = instructions ? [{ role: "system", content: instructions }] : []
  for (const [i, item] of earlier.entries()) addItem(messages, item, `previous_response_id item ${i}`)
  for (const [i, item] of input.entries()) addItem(messages, item, `input[${i}]`)
  const tools = body.tools === undefined || body.tools === null ? undefined : parseTools(body.tools)
  return {
    messages,
    tools,
    instructions,
    items: [...earlier, ...input],
    previousResponseId: previous,
    stream,
    store: keep,
    output,
  }
}

async function inputItems(
  raw: unknown,
  store: DurableStore,
  caller: string | undefined,
): Promise<ResponseItem[]> {
  if (typeof raw === "string") return [{ type: "message", role: "user", content: raw }]
  if (!Array.isArray(raw)) throw badRequest("input must be a string or an array of items", "input")
  const items = raw.map((item, i): ResponseItem => {
    if (!isObject(item)) throw badRequest(`input[${i}] must be an object`, `input[${i}]`)
    // A message may omit `type` (the "easy input message" form).
    return { ...item, type: typeof item.type === "string" ? item.type : "message" }
  })
  return resolveReferences(store, items, caller)
}

function addItem(messages: ChatMessage[], item: ResponseItem, at: string): void {
  switch (item.type) {
    case "message":
      messages.push(messageOf(item, at))
      return
    case "function_call": {
      if (typeof item.call_id !== "string" || typeof item.name !== "string") {
        throw badRequest(`${at} must be {type: "function_call", call_id, name, arguments}`, at)
      }
      const args = item.arguments ?? "{}"
      if (typeof args !== "string")
        throw badRequest(`${at}.arguments must be a JSON string`, `${at}.arguments`)
      const call = { id: item.call_id, name: item.name, arguments: args }
      // Calls of one turn follow the turn's text (or each other): they belong to one assistant message.
      const last = messages.at(-1)
      if (last?.role === "assistant") last.toolCalls.push(call)
      else messages.push({ role: "assistant", content: null, toolCalls: [call] })
      return
    }
    case "function_call_output": {
      if (typeof item.call_id !== "string" || item.call_id === "") {
        throw badRequest(`${at}.call_id must be a non-empty string`, `${at}.call_id`)
      }
      messages.push({ role: "tool", toolCallId: item.call_id, content: textOf(item.output, `${at}.output`) })
      return
    }
    case "reasoning":
      return
    default:
      throw badRequest(
        `${at} is a ${JSON.stringify(item.type)} item; only message, function_call, function_call_output, ` +
          "reasoning and item_reference items are supported",
        `${at}.type`,
      )
  }
}

function messageOf(item: ResponseItem, at: string): ChatMessage {
  const content = textOf(item.content, `${at}.content`)
  switch (item.role) {
    case "system":
    case "developer":
      return { role: "system", content }
    case "user":
      return { role: "user", content }
    case "assistant":
      return { role: "assistant", content, toolCalls: [] }
    default:
      throw badRequest(
        `${at}.role must be "system", "developer", "user" or "assistant", got ${JSON.stringify(item.role)}`,
        `${at}.role`,
      )
  }
}

function parseTools(raw: unknown): ChatToolDeclaration[] {
  if (!Array.isArray(raw)) throw badRequest("tools must be an array", "tools")
  return raw.map((tool, i) => {
    const at = `tools[${i}]`
    if (!isObject(tool) || tool.type !== "function") {
      const type = isObject(tool) ? JSON.stringify(tool.type) : "a non-object"
      throw badRequest(
        `${at} is ${type}; only function tools ({type: "function", name, parameters}) are supported`,
        at,
      )
    }
    return toolDeclaration(tool, at)
  })
}
