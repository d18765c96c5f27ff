import type { EndpointStyle } from "../types.js"

/** A tool call with its id generated and its arguments serialised, ready to be put on the wire. */
export interface WireToolCall {
  id: string
  name: string
  /** The arguments exactly as the "model" produced them (possibly invalid JSON). */
  argumentsJson: string
  /** The parsed arguments for Anthropic's `input`; `{}` when `argumentsJson` is not valid JSON. */
  input: unknown
}

/** A scripted reply with ids generated and defaults applied, the input of every serialiser here. */
export interface WireReply {
  /** The response id (`chatcmpl-…` or `msg_…`). */
  id: string
  model: string
  text: string | undefined
  toolCalls: WireToolCall[]
  promptTokens: number
  completionTokens: number
  /** A refusal instead of an answer, in the style's own shape. */
  refusal?: string
  /** The reply is cut off: by the output-token limit or by a content filter. */
  cutOff?: "maxOutputTokens" | "contentFilter"
  /** The stream opens with this error event instead of a reply (streaming requests only). */
  streamError?: { type: string; message?: string }
}

/** One server-sent event; `event` is omitted for OpenAI's data-only frames. */
export interface SseFrame {
  event?: string
  data: string
}

/** Serialises an SSE frame the way both providers do (`event:` line, `data:` line, blank line). */
export function formatSse(frame: SseFrame): string {
  return frame.event === undefined
    ? `data: ${frame.data}\n\n`
    : `event: ${frame.event}\ndata: ${frame.data}\n\n`
}

/**
 * Splits a string into up to `max` pieces of similar length without breaking surrogate pairs, so
 * anything of two or more characters arrives in at least two fragments.
 */
export function splitPieces(value: string, max = 3): string[] {
  const chars = Array.from(value)
  if (chars.length === 0) return []
  const count = Math.min(max, chars.length)
  const size = Math.ceil(chars.length / count)
  const pieces: string[] = []
  for (let i = 0; i < chars.length; i += size) pieces.push(chars.slice(i, i + size).join(""))
  return pieces
}

/** An error body in the style's own shape: OpenAI `{error:{…}}`, Anthropic `{type:"error",error:{…}}`. */
export function errorBody(style: EndpointStyle, status: number, message: string, code?: string): unknown {
  // The Responses API reports errors like chat completions.
  if (style === "anthropic") return { type: "error", error: { type: anthropicErrorType(status), message } }
  return { error: { message, type: openaiErrorType(status), param: null, code: code ?? null } }
}

function openaiErrorType(status: number): string {
  if (status === 401) return "authentication_error"
  if (status === 403) return "permission_error"
  if (status === 429) return "rate_limit_exceeded"
  return status >= 500 ? "server_error" : "invalid_request_error"
}

function anthropicErrorType(status: number): string {
  const known: Record<number, string> = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
  }
  return known[status] ?? (status >= 500 ? "api_error" : "invalid_request_error")
}

const now = (): number => Math.floor(Date.now() / 1000)

/** A non-streaming OpenAI `chat.completion` object. */
export function openaiCompletion(reply: WireReply): unknown {
  const message: Record<string, unknown> = {
    role: "assistant",
    content: reply.refusal === undefined ? (reply.text ?? null) : null,
    refusal: reply.refusal ?? null,
  }
  if (reply.toolCalls.length > 0) {
    message.tool_calls = reply.toolCalls.map((call) => ({
      id: call.id,
      type: "function",
      function: { name: call.name, arguments: call.argumentsJson },
    }))
  }
  return {
    id: reply.id,
    object: "chat.completion",
    created: now(),
    model: reply.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason(reply) }],
    usage: openaiUsage(reply),
  }
}

/**
 * The frames of a streamed OpenAI completion: role chunk, text pieces, tool-call announcements,
 * argument fragments interleaved across calls, the finish chunk, a usage chunk, then `[DONE]`.
 */
export function openaiStreamFrames(reply: WireReply): SseFrame[] {
  const created = now()
  const chunk = (delta: unknown, finish: string | null = null): SseFrame => ({
    data: JSON.stringify({
      id: reply.id,
      object: "chat.completion.chunk",
      created,
      model: reply.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    }),
  })
  if (reply.streamError) return [{ data: JSON.stringify({ error: { ...reply.streamError, param: null } }) }]
  const frames = [chunk({ role: "assistant", content: "" })]
  if (reply.refusal !== undefined)
    for (const piece of splitPieces(reply.refusal)) frames.push(chunk({ refusal: piece }))
  else for (const piece of splitPieces(reply.text ?? "")) frames.push(chunk({ content: piece }))
  reply.toolCalls.forEach((call, index) => {
    const fn = { name: call.name, arguments: "" }
    frames.push(chunk({ tool_calls: [{ index, id: call.id, type: "function", function: fn }] }))
  })
  // Round-robin the fragments: clients must accumulate by `index`, not assume one call at a time.
  const fragments = reply.toolCalls.map((call) => splitPieces(call.argumentsJson))
  const rounds = Math.max(0, ...fragments.map((list) => list.length))
  for (let round = 0; round < rounds; round++) {
    fragments.forEach((list, index) => {
      const piece = list[round]
      if (piece !== undefined) frames.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }))
    })
  }
  frames.push(chunk({}, finishReason(reply)))
  const usage = { id: reply.id, object: "chat.completion.chunk", created, model: reply.model, choices: [] }
  frames.push({ data: JSON.stringify({ ...usage, usage: openaiUsage(reply) }) })
  frames.push({ data: "[DONE]" })
  return frames
}

/** A non-streaming Anthropic `message` object. */
export function anthropicMessage(reply: WireReply): unknown {
  const content: unknown[] = []
  if (reply.text !== undefined) content.push({ type: "text", text: reply.text })
  for (const call of reply.toolCalls) {
    content.push({ type: "tool_use", id: call.id, name: call.name, input: call.input })
  }
  return {
    id: reply.id,
    type: "message",
    role: "assistant",
    model: reply.model,
    content: reply.refusal === undefined ? content : [],
    stop_reason: stopReason(reply),
    stop_sequence: null,
    usage: { input_tokens: reply.promptTokens, output_tokens: reply.completionTokens },
  }
}

/**
 * The frames of a streamed Anthropic message: `message_start`, `ping`, start/delta/stop per content
 * block, `message_delta` with the stop reason and cumulative output tokens, `message_stop`.
 */
export function anthropicStreamFrames(reply: WireReply): SseFrame[] {
  const frames: SseFrame[] = []
  const emit = (type: string, payload: Record<string, unknown> = {}): void => {
    frames.push({ event: type, data: JSON.stringify({ type, ...payload }) })
  }
  if (reply.streamError) {
    emit("error", { error: reply.streamError })
    return frames
  }
  emit("message_start", {
    message: {
      id: reply.id,
      type: "message",
      role: "assistant",
      model: reply.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      // The real API reports a small non-zero count here; the final count comes in message_delta.
      usage: { input_tokens: reply.promptTokens, output_tokens: Math.min(1, reply.completionTokens) },
    },
  })
  emit("ping")
  let index = 0
  if (reply.text !== undefined && reply.refusal === undefined) {
    emit("content_block_start", { index, content_block: { type: "text", text: "" } })
    for (const text of splitPieces(reply.text)) {
      emit("content_block_delta", { index, delta: { type: "text_delta", text } })
    }
    emit("content_block_stop", { index })
    index++
  }
  for (const call of reply.toolCalls) {
    const block = { type: "tool_use", id: call.id, name: call.name, input: {} }
    emit("content_block_start", { index, content_block: block })
    // The real API opens every tool_use block with an empty fragment.
    for (const partial_json of ["", ...splitPieces(call.argumentsJson)]) {
      emit("content_block_delta", { index, delta: { type: "input_json_delta", partial_json } })
    }
    emit("content_block_stop", { index })
    index++
  }
  emit("message_delta", {
    delta: { stop_reason: stopReason(reply), stop_sequence: null },
    usage: { output_tokens: reply.completionTokens },
  })
  emit("message_stop")
  return frames
}

function finishReason(reply: WireReply): string {
  if (reply.cutOff) return reply.cutOff === "maxOutputTokens" ? "length" : "content_filter"
  // OpenAI chat refusals end with "stop"; the refusal field says what happened.
  return reply.toolCalls.length > 0 ? "tool_calls" : "stop"
}

/** Anthropic has no content-filter stop; its policy stop is `refusal`. */
function stopReason(reply: WireReply): string {
  if (reply.cutOff) return reply.cutOff === "maxOutputTokens" ? "max_tokens" : "refusal"
  if (reply.refusal !== undefined) return "refusal"
  return reply.toolCalls.length > 0 ? "tool_use" : "end_turn"
}

/** The output items of a Responses reply: a message (text or refusal), then function calls. */
function responsesOutput(reply: WireReply): Record<string, unknown>[] {
  const output: Record<string, unknown>[] = []
  const part =
    reply.refusal !== undefined
      ? { type: "refusal", refusal: reply.refusal }
      : reply.text !== undefined
        ? { type: "output_text", text: reply.text, annotations: [] }
        : undefined
  if (part)
    output.push({
      id: `msg_${reply.id}`,
      type: "message",
      status: "completed",
      role: "assistant",
      content: [part],
    })
  reply.toolCalls.forEach((call, i) => {
    output.push({
      id: `fc_${reply.id}_${i}`,
      type: "function_call",
      status: "completed",
      call_id: call.id,
      name: call.name,
      arguments: call.argumentsJson,
    })
  })
  return output
}

/** A Responses `response` object (`status` completed, or incomplete when cut off). */
export function responsesObject(reply: WireReply): Record<string, unknown> {
  const incomplete = reply.cutOff !== undefined
  return {
    id: reply.id,
    object: "response",
    created_at: now(),
    status: incomplete ? "incomplete" : "completed",
    error: null,
    incomplete_details: incomplete
      ? { reason: reply.cutOff === "maxOutputTokens" ? "max_output_tokens" : "content_filter" }
      : null,
    model: reply.model,
    output: responsesOutput(reply),
    store: false,
    usage: {
      input_tokens: reply.promptTokens,
      output_tokens: reply.completionTokens,
      total_tokens: reply.promptTokens + reply.completionTokens,
    },
  }
}

/**
 * The frames of a streamed Responses reply: `response.created`, per output item `added`, its
 * deltas and `done`, then `response.completed` (or `response.incomplete`) with the whole
 * response; `event:` + `data:` frames, no `[DONE]`.
 */
export function responsesStreamFrames(reply: WireReply): SseFrame[] {
  const frames: SseFrame[] = []
  let sequence = 0
  const emit = (type: string, payload: Record<string, unknown>): void => {
    frames.push({ event: type, data: JSON.stringify({ type, sequence_number: sequence++, ...payload }) })
  }
  if (reply.streamError) {
    emit("error", { error: { ...reply.streamError, code: reply.streamError.type, param: null } })
    return frames
  }
  const final = responsesObject(reply)
  emit("response.created", { response: { ...final, status: "in_progress", output: [], usage: null } })
  ;(final.output as Record<string, any>[]).forEach((item, output_index) => {
    const item_id = item.id
    if (item.type === "message") {
      emit("response.output_item.added", {
        output_index,
        item: { ...item, status: "in_progress", content: [] },
      })
      const part = item.content[0]
      const refusal = part.type === "refusal"
      const text: string = refusal ? part.refusal : part.text
      for (const delta of splitPieces(text)) {
        const type = refusal ? "response.refusal.delta" : "response.output_text.delta"
        emit(type, { item_id, output_index, content_index: 0, delta })
      }
    } else {
      emit("response.output_item.added", {
        output_index,
        item: { ...item, status: "in_progress", arguments: "" },
      })
      for (const delta of splitPieces(item.arguments)) {
        emit("response.function_call_arguments.delta", { item_id, output_index, delta })
      }
      emit("response.function_call_arguments.done", { item_id, output_index, arguments: item.arguments })
    }
    emit("response.output_item.done", { output_index, item })
  })
  emit(final.status === "incomplete" ? "response.incomplete" : "response.completed", { response: final })
  return frames
}

function openaiUsage(reply: WireReply): Record<string, number> {
  return {
    prompt_tokens: reply.promptTokens,
    completion_tokens: reply.completionTokens,
    total_tokens: reply.promptTokens + reply.completionTokens,
  }
}
