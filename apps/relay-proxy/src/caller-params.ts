import { AsyncLocalStorage } from "node:async_hooks"
import type { EndpointStyle } from "@toolnexus/core"
import { type ChatToolDeclaration, isObject } from "./openai-shapes.js"
import { badRequest } from "./proxy-error.js"

/** The tool the model must call, or how freely it may call tools (OpenAI's `tool_choice`). */
export type ToolChoice = "auto" | "none" | "required" | { name: string }

/** What a caller asked of the model for one request, besides its messages, tools and format. */
export interface CallerParams {
  /** The caller's `model`: any id is accepted (the upstream model answers) and echoed back. */
  model?: string
  temperature?: number
  toolChoice?: ToolChoice
}

type Json = Record<string, unknown>

/**
 * Reads `model`, `temperature` and `tool_choice` from a chat-completions or Responses body
 * (`tool_choice: {type: "function", function: {name}}` there, `{type: "function", name}` here).
 *
 * @throws ProxyError 400 for a value of the wrong type or out of the upstream's range
 *   (an Anthropic upstream takes a temperature of at most 1, OpenAI's of at most 2).
 */
export function parseCallerParams(body: unknown, style: EndpointStyle): CallerParams {
  const params: CallerParams = {}
  // The endpoint's own parser has refused a body that is not an object.
  if (!isObject(body)) return params
  if (body.model !== undefined && body.model !== null) {
    if (typeof body.model !== "string") throw badRequest("model must be a string", "model")
    params.model = body.model
  }
  if (body.temperature !== undefined && body.temperature !== null) {
    const max = style === "anthropic" ? 1 : 2
    const t = body.temperature
    if (typeof t !== "number" || !(t >= 0 && t <= max)) {
      throw badRequest(`temperature must be a number from 0 to ${max} for this upstream model`, "temperature")
    }
    params.temperature = t
  }
  if (body.tool_choice !== undefined && body.tool_choice !== null)
    params.toolChoice = toolChoiceOf(body.tool_choice)
  return params
}

function toolChoiceOf(raw: unknown): ToolChoice {
  if (raw === "auto" || raw === "none" || raw === "required") return raw
  const named = typeof raw === "object" && raw !== null ? (raw as Json) : undefined
  const fn = named?.function as Json | undefined
  const name = named?.type === "function" ? (named.name ?? fn?.name) : undefined
  if (typeof name !== "string" || name === "") {
    throw badRequest(
      'tool_choice must be "auto", "none", "required" or {type: "function", function: {name}} ' +
        '({type: "function", name} on /v1/responses); other tool types are not supported',
      "tool_choice",
    )
  }
  return { name }
}

/**
 * Refuses a `tool_choice` the model cannot follow with these tools: a tool it does not have,
 * or `required` without any tool.
 *
 * @throws ProxyError 400 (`param: "tool_choice"`)
 */
export function checkToolChoice(params: CallerParams, tools: ChatToolDeclaration[]): void {
  const choice = params.toolChoice
  if (choice === "required" && tools.length === 0)
    throw badRequest('tool_choice "required" needs at least one tool in tools', "tool_choice")
  if (typeof choice === "object" && !tools.some((t) => t.name === choice.name)) {
    throw badRequest(`tool_choice names ${JSON.stringify(choice.name)}, which is not in tools`, "tool_choice")
  }
}

const current = new AsyncLocalStorage<CallerParams>()

/** Runs `body` (one caller request's run) with `params` visible to {@link forwardCallerParams}. */
export function withCallerParams<T>(params: CallerParams, body: () => T): T {
  return current.run(params, body)
}

/**
 * A `bodyTransform` for the proxy's client (`createClient({ ..., bodyTransform:
 * forwardCallerParams(style) })`): each upstream request of a caller's request carries that
 * caller's `temperature` and `tool_choice`, in the upstream's own form. Without it the client's
 * own settings apply and the caller's are dropped.
 */
export function forwardCallerParams(style: EndpointStyle): (body: Json) => Json {
  return (body) => {
    const params = current.getStore()
    if (!params) return body
    const out = { ...body }
    if (params.temperature !== undefined) out.temperature = params.temperature
    // A request declaring no tools takes no tool_choice (OpenAI refuses one).
    const hasTools = Array.isArray(body.tools) && body.tools.length > 0
    if (params.toolChoice !== undefined && hasTools)
      out.tool_choice = upstreamChoice(params.toolChoice, style)
    return out
  }
}

function upstreamChoice(choice: ToolChoice, style: EndpointStyle): unknown {
  if (style === "anthropic") {
    if (typeof choice === "object") return { type: "tool", name: choice.name }
    return { type: choice === "required" ? "any" : choice }
  }
  if (typeof choice === "string") return choice
  return style === "openai-responses"
    ? { type: "function", name: choice.name }
    : { type: "function", function: { name: choice.name } }
}
