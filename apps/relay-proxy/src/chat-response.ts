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

/** Which part of an assistant answer a live delta belongs to. */
export type DeltaKind = "text" | "refusal"

/** Writes one answer as server-sent events: live deltas first, the finished turn last. */
export interface EventWriter {
  /** A text or refusal delta as it arrives from the upstream. */
  delta(kind: DeltaKind, delta: string): void
  /** An OpenAI-shaped error event ending a stream that already started. */
  fail(error: { message: string; type: string; param: string | null; code: string | null }): void
}

/** A chat stream's writer; `finish` sends what the deltas did not carry, tool calls and the end. */
export interface ChatChunkWriter extends EventWriter {
  finish(turn: RelayTurn): void
}

/**
 * Writes a streaming chat completion as `chat.completion.chunk` events: a role chunk, the text
 * and refusal deltas as they arrive, each tool call by `index` (id and name first, then its
 * arguments), the finish chunk, the usage chunk (`choices: []`) when `includeUsage`, then
 * `data: [DONE]`. `model` names the model before the turn does (the chunks all carry one).
 */
export function chatChunkWriter(
  send: (frame: string) => void,
  opts: { includeUsage: boolean; model: string | undefined },
): ChatChunkWriter {
  const sent: Record<DeltaKind, string> = { text: "", refusal: "" }
  let head: { id: string; object: "chat.completion.chunk"; created: number; model: string } | undefined
  // With include_usage, OpenAI sends `usage: null` on every chunk but the last.
  const usage = opts.includeUsage ? { usage: null } : {}
  const data = (payload: unknown) => send(`data: ${JSON.stringify(payload)}\n\n`)
  const chunk = (delta: Record<string, unknown>, finishReason: FinishReason | null = null) =>
    data({ ...head, choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }], ...usage })
  const open = (model: string) => {
    if (head) return
    head = {
      id: `chatcmpl-${randomUUID()}`,
      object: "chat.completion.chunk",
      created: Math.floor(Date.now() / 1000),
      model,
    }
    chunk({ role: "assistant", content: "", refusal: null })
  }
  const write = (kind: DeltaKind, delta: string) => {
    if (delta === "") return
    sent[kind] += delta
    chunk(kind === "text" ? { content: delta } : { refusal: delta })
  }
  return {
    delta(kind, delta) {
      open(opts.model ?? "")
      write(kind, delta)
    },
    finish(turn) {
      open(opts.model ?? turn.model)
      write("text", remainder(turn.text, sent.text))
      // A refusal with no text (Anthropic gives none) still says so: `refusal: ""` once.
      if (turn.refusal !== undefined && sent.refusal === "" && turn.refusal === "") chunk({ refusal: "" })
      else if (turn.refusal !== undefined) write("refusal", remainder(turn.refusal, sent.refusal))
      turn.toolCalls.forEach((call, index) => {
        chunk({
          tool_calls: [
            { index, id: call.id, type: "function", function: { name: call.name, arguments: "" } },
          ],
        })
        chunk({ tool_calls: [{ index, function: { arguments: call.arguments } }] })
      })
      chunk({}, turn.finishReason)
      if (opts.includeUsage) data({ ...head, choices: [], usage: usageOf(turn) })
      send("data: [DONE]\n\n")
    },
    fail(error) {
      data({ error })
    },
  }
}

/**
 * What of `full` a stream that already sent `sent` still owes. The finished turn normally
 * extends what streamed; if it does not, what was sent stands and nothing is added.
 */
export function remainder(full: string, sent: string): string {
  return full.startsWith(sent) ? full.slice(sent.length) : ""
}
