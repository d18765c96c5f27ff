import { randomBytes } from "node:crypto"
import type { ResponseItem } from "./item-store.js"
import type { ChatToolDeclaration } from "./openai-shapes.js"
import type { RelayTurn } from "./relay-turn.js"

const newId = (prefix: string) => `${prefix}_${randomBytes(16).toString("hex")}`

/** What the response echoes of its request. */
export interface ResponseEcho {
  instructions: string | null
  previousResponseId: string | null
  tools: ChatToolDeclaration[]
  store: boolean
}

/**
 * The output items of a proxied turn: one assistant `message` (text and/or refusal) when there
 * is any, then a `function_call` per relay call, whose `call_id` is the caller's tool-call id.
 */
export function outputItems(turn: RelayTurn): ResponseItem[] {
  const items: ResponseItem[] = []
  const content: Record<string, unknown>[] = []
  // An answer with nothing at all is still one (empty) text part, as the Responses API gives it.
  const answered = turn.toolCalls.length === 0 && turn.refusal === undefined
  if (turn.text !== "" || answered) {
    content.push({ type: "output_text", text: turn.text, annotations: [], logprobs: [] })
  }
  if (turn.refusal !== undefined) content.push({ type: "refusal", refusal: turn.refusal })
  if (content.length > 0) {
    items.push({ type: "message", id: newId("msg"), status: "completed", role: "assistant", content })
  }
  for (const call of turn.toolCalls) {
    items.push({
      type: "function_call",
      id: newId("fc"),
      call_id: call.id,
      name: call.name,
      arguments: call.arguments,
      status: "completed",
    })
  }
  return items
}

/** The Responses API response object of a proxied turn whose output is `output`. */
export function responseObject(turn: RelayTurn, output: ResponseItem[], echo: ResponseEcho) {
  const cut = turn.finishReason === "length" || turn.finishReason === "content_filter"
  return {
    id: newId("resp"),
    object: "response" as const,
    created_at: Math.floor(Date.now() / 1000),
    status: cut ? ("incomplete" as const) : ("completed" as const),
    error: null,
    incomplete_details: cut
      ? { reason: turn.finishReason === "length" ? "max_output_tokens" : "content_filter" }
      : null,
    instructions: echo.instructions,
    max_output_tokens: null,
    model: turn.model,
    output,
    parallel_tool_calls: true,
    previous_response_id: echo.previousResponseId,
    reasoning: { effort: null, summary: null },
    store: echo.store,
    temperature: null,
    text: { format: { type: "text" } },
    tool_choice: "auto",
    tools: echo.tools.map((t) => ({
      type: "function",
      name: t.name,
      description: t.description,
      parameters: t.parameters,
      strict: false,
    })),
    top_p: null,
    truncation: "disabled",
    usage: {
      input_tokens: turn.usage.promptTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: turn.usage.completionTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: turn.usage.totalTokens,
    },
    user: null,
    metadata: {},
  }
}

/**
 * The server-sent events of a streamed response (`event:` + `data:` frames, numbered by
 * `sequence_number`, no `[DONE]`): `response.created`, `response.in_progress`, each output item
 * added → its text, refusal or arguments as delta and done events → done, then
 * `response.completed` (or `response.incomplete` for a cut answer).
 */
export function responseStream(response: ReturnType<typeof responseObject>): string {
  const frames: string[] = []
  const emit = (type: string, data: Record<string, unknown>) => {
    const payload = { type, sequence_number: frames.length, ...data }
    frames.push(`event: ${type}\ndata: ${JSON.stringify(payload)}\n\n`)
  }
  const opening = { ...response, status: "in_progress", incomplete_details: null, output: [], usage: null }
  emit("response.created", { response: opening })
  emit("response.in_progress", { response: opening })
  response.output.forEach((item, output_index) => {
    const item_id = item.id
    if (item.type === "function_call") {
      emit("response.output_item.added", {
        output_index,
        item: { ...item, arguments: "", status: "in_progress" },
      })
      emit("response.function_call_arguments.delta", { item_id, output_index, delta: item.arguments })
      emit("response.function_call_arguments.done", { item_id, output_index, arguments: item.arguments })
      emit("response.output_item.done", { output_index, item })
      return
    }
    emit("response.output_item.added", {
      output_index,
      item: { ...item, status: "in_progress", content: [] },
    })
    ;(item.content as Record<string, unknown>[]).forEach((part, content_index) => {
      const at = { item_id, output_index, content_index }
      if (part.type === "refusal") {
        emit("response.content_part.added", { ...at, part: { type: "refusal", refusal: "" } })
        emit("response.refusal.delta", { ...at, delta: part.refusal })
        emit("response.refusal.done", { ...at, refusal: part.refusal })
      } else {
        emit("response.content_part.added", { ...at, part: { ...part, text: "" } })
        emit("response.output_text.delta", { ...at, delta: part.text, logprobs: [] })
        emit("response.output_text.done", { ...at, text: part.text, logprobs: [] })
      }
      emit("response.content_part.done", { ...at, part })
    })
    emit("response.output_item.done", { output_index, item })
  })
  emit(response.status === "incomplete" ? "response.incomplete" : "response.completed", { response })
  return frames.join("")
}
