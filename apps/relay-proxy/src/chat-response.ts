import { randomUUID } from "node:crypto"
import type { FinishReason, RelayTurn } from "./relay-turn.js"

type ToolCallOut = { id: string; type: "function"; function: { name: string; arguments: string } }

/** A chat-completions response body (`object: "chat.completion"`). */
export interface ChatCompletion {
  id: string
  object: "chat.completion"
  created: number
  model: string
  choices: {
    index: number
    message: { role: "assistant"; content: string | null; refusal: string | null; tool_calls?: ToolCallOut[] }
    finish_reason: FinishReason
    logprobs: null
  }[]
  usage: ChatUsage
}

interface ChatUsage {
  prompt_tokens: number
  completion_tokens: number
  total_tokens: number
}

function usageOf(turn: RelayTurn): ChatUsage {
  return {
    prompt_tokens: turn.usage.promptTokens,
    completion_tokens: turn.usage.completionTokens,
    total_tokens: turn.usage.totalTokens,
  }
}

/** Renders a proxied turn as a chat-completions response. */
export function chatCompletion(turn: RelayTurn): ChatCompletion {
  const message: ChatCompletion["choices"][number]["message"] = {
    role: "assistant",
    // OpenAI sends null, not "", for an assistant turn made only of tool calls or a refusal.
    content: turn.text === "" && (turn.toolCalls.length > 0 || turn.refusal !== undefined) ? null : turn.text,
    refusal: turn.refusal ?? null,
  }
  if (turn.toolCalls.length > 0) {
    message.tool_calls = turn.toolCalls.map((call) => ({
      id: call.id,
      type: "function",
      function: { name: call.name, arguments: call.arguments },
    }))
  }
  return {
    id: `chatcmpl-${randomUUID()}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: turn.model,
    choices: [{ index: 0, message, finish_reason: turn.finishReason, logprobs: null }],
    usage: usageOf(turn),
  }
}

/**
 * Renders a proxied turn as the server-sent events of a streaming chat completion: a role chunk,
 * the text, the refusal, each tool call by `index` (id and name first, then its arguments), the
 * finish chunk, the usage chunk (`choices: []`) when `includeUsage`, then `data: [DONE]`.
 */
export function chatCompletionStream(turn: RelayTurn, includeUsage: boolean): string {
  const head = {
    id: `chatcmpl-${randomUUID()}`,
    object: "chat.completion.chunk",
    created: Math.floor(Date.now() / 1000),
    model: turn.model,
  }
  // With include_usage, OpenAI sends `usage: null` on every chunk but the last.
  const usage = includeUsage ? { usage: null } : {}
  const chunk = (delta: Record<string, unknown>, finishReason: FinishReason | null = null) => ({
    ...head,
    choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }],
    ...usage,
  })
  const chunks: unknown[] = [chunk({ role: "assistant", content: "", refusal: null })]
  if (turn.text !== "") chunks.push(chunk({ content: turn.text }))
  if (turn.refusal !== undefined) chunks.push(chunk({ refusal: turn.refusal }))
  turn.toolCalls.forEach((call, index) => {
    chunks.push(
      chunk({
        tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }],
      }),
      chunk({ tool_calls: [{ index, function: { arguments: call.arguments } }] }),
    )
  })
  chunks.push(chunk({}, turn.finishReason))
  if (includeUsage) chunks.push({ ...head, choices: [], usage: usageOf(turn) })
  return `${chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join("")}data: [DONE]\n\n`
}
