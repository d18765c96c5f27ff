import type { RelayCall, RunResult, Usage } from "@toolnexus/core"

/** A relay call as the caller sees it: `id` is the proxy's caller-scoped id, `callId` the model's. */
export interface CallerCall extends RelayCall {
  callId: string
}

/** Why a proxied turn ended, in chat-completions words. */
export type FinishReason = "stop" | "tool_calls" | "length" | "content_filter"

/** What one proxied request produced, independent of the endpoint that renders it. */
export interface RelayTurn {
  model: string
  text: string
  /** The model's refusal text; set only when it refused. */
  refusal?: string
  /** The relay calls the caller must execute (with the ids it is given); empty unless halted. */
  toolCalls: CallerCall[]
  finishReason: FinishReason
  usage: Usage
}

/** Summarises a run for rendering; `calls` are the halted turn's relay calls as the caller sees them. */
export function relayTurn(result: RunResult, calls: CallerCall[]): RelayTurn {
  const { finishReason, refusal } = result
  const base = { model: result.model, text: result.text, toolCalls: calls, usage: result.usage }
  if (result.status === "pending") return { ...base, finishReason: "tool_calls" }
  // A structured answer still invalid after the corrective turn is the model's final word; the
  // caller's own parsing reports it, as it would for a provider's invalid JSON.
  if (result.status === "incomplete" && result.limit === "invalidOutput")
    return { ...base, finishReason: "stop" }
  if (result.status === "incomplete") {
    // Cut by the token limit, by maxTurns or a budget: for the caller, the answer is cut short.
    const filtered = result.limit === "contentFilter" || finishReason === "content_filter"
    return { ...base, finishReason: filtered ? "content_filter" : "length" }
  }
  // OpenAI reports a refusal as a normal stop with a `refusal` field; that field carries it.
  if (typeof refusal === "string" || finishReason === "refusal") {
    return { ...base, refusal: refusal ?? "", finishReason: "stop" }
  }
  return { ...base, finishReason: finishReason === "content_filter" ? "content_filter" : "stop" }
}
