import { randomBytes } from "node:crypto"
import type { ResponseItem } from "./item-store.js"
import type { ChatToolDeclaration } from "./openai-shapes.js"
import { type DeltaKind, type EventWriter, remainder } from "./chat-response.js"
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
export function outputItems(turn: RelayTurn, message: MessageLayout = {}): ResponseItem[] {
  const items: ResponseItem[] = []
  // An answer with nothing at all is still one (empty) text part, as the Responses API gives it.
  const answered = turn.toolCalls.length === 0 && turn.refusal === undefined
  const kinds: DeltaKind[] = []
  if (turn.text !== "" || answered) kinds.push("text")
  if (turn.refusal !== undefined) kinds.push("refusal")
  // Parts a stream already opened keep their place (content_index); the others follow.
  const order = [...(message.order ?? []), ...kinds.filter((k) => !message.order?.includes(k))]
  const content = order.map((kind) => contentPart(kind, kind === "text" ? turn.text : (turn.refusal ?? "")))
  if (content.length > 0) {
    const id = message.id ?? newId("msg")
    items.push({ type: "message", id, status: "completed", role: "assistant", content })
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

/** Where a streamed message put its parts: its item id, and the part kinds in content_index order. */
export interface MessageLayout {
  id?: string
  order?: DeltaKind[]
}

function contentPart(kind: DeltaKind, text: string): Record<string, unknown> {
  return kind === "text"
    ? { type: "output_text", text, annotations: [], logprobs: [] }
    : { type: "refusal", refusal: text }
}

/** A response's id and creation time, fixed when its stream opens. */
export function responseIdentity() {
  return { id: newId("resp"), created_at: Math.floor(Date.now() / 1000) }
}

/** The Responses API response object of a proxied turn whose output is `output`. */
export function responseObject(
  turn: RelayTurn,
  output: ResponseItem[],
  echo: ResponseEcho,
  identity = responseIdentity(),
) {
  const cut = turn.finishReason === "length" || turn.finishReason === "content_filter"
  return {
    ...identity,
    object: "response" as const,
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

/** A Responses API response object. */
export type ResponseObject = ReturnType<typeof responseObject>

/** A streamed response's writer. */
export interface ResponseEventWriter extends EventWriter {
  /** Where the live message put its parts, for {@link outputItems}; empty when nothing streamed. */
  layout(): MessageLayout
  /** The live message catches up with `turn`; then the other items and the closing event of `response`. */
  finish(turn: RelayTurn, response: ResponseObject): void
}

/**
 * Writes a streamed response as `event:` + `data:` frames numbered by `sequence_number` (no
 * `[DONE]`): `response.created`, `response.in_progress`; the assistant message's text and refusal
 * deltas as they arrive; at the end each remaining output item added → its text, refusal or
 * arguments as delta and done events → done, then `response.completed` (or `response.incomplete`
 * for a cut answer). `opening` is the response as it stands before the turn.
 */
export function responseEventWriter(
  send: (frame: string) => void,
  opening: ResponseObject,
): ResponseEventWriter {
  let sequence = 0
  const emit = (type: string, data: Record<string, unknown>) => {
    const payload = { type, sequence_number: sequence++, ...data }
    send(`event: ${type}\ndata: ${JSON.stringify(payload)}\n\n`)
  }
  let opened = false
  const open = () => {
    if (opened) return
    opened = true
    const shell = { ...opening, status: "in_progress", incomplete_details: null, output: [], usage: null }
    emit("response.created", { response: shell })
    emit("response.in_progress", { response: shell })
  }
  // The live message: output_index 0, its parts in the order their first delta came.
  const message = { id: newId("msg"), order: [] as DeltaKind[], sent: { text: "", refusal: "" } }
  const at = (kind: DeltaKind) => ({
    item_id: message.id,
    output_index: 0,
    content_index: message.order.indexOf(kind),
  })
  const write = (kind: DeltaKind, delta: string) => {
    if (delta === "") return
    if (message.order.length === 0) {
      emit("response.output_item.added", {
        output_index: 0,
        item: { type: "message", id: message.id, status: "in_progress", role: "assistant", content: [] },
      })
    }
    if (!message.order.includes(kind)) {
      message.order.push(kind)
      emit("response.content_part.added", { ...at(kind), part: contentPart(kind, "") })
    }
    message.sent[kind] += delta
    if (kind === "text") emit("response.output_text.delta", { ...at(kind), delta, logprobs: [] })
    else emit("response.refusal.delta", { ...at(kind), delta })
  }
  return {
    delta(kind, delta) {
      open()
      write(kind, delta)
    },
    layout() {
      return message.order.length > 0 ? { id: message.id, order: [...message.order] } : {}
    },
    finish(turn, response) {
      open()
      const streamed = message.order.length > 0
      // The live message's parts catch up with the finished turn before they close.
      if (streamed) {
        write("text", remainder(turn.text, message.sent.text))
        if (turn.refusal !== undefined) write("refusal", remainder(turn.refusal, message.sent.refusal))
      }
      response.output.forEach((item, output_index) => {
        const live = streamed && item.id === message.id
        itemEvents(emit, item, output_index, live ? message.order.length : 0)
      })
      emit(response.status === "incomplete" ? "response.incomplete" : "response.completed", { response })
    },
    fail(error) {
      open()
      // The openai SDK reads the nested `error`; the Responses API's own event has its fields on top.
      emit("error", { code: error.code, message: error.message, param: error.param, error })
      const failed = {
        ...opening,
        status: "failed",
        error: { code: error.code ?? error.type, message: error.message },
      }
      emit("response.failed", { response: { ...failed, output: [], usage: null } })
    },
  }
}

/**
 * The events of one output item; `openParts` of its content parts (a live message's) were
 * already added and streamed, so only their done events remain.
 */
function itemEvents(
  emit: (type: string, data: Record<string, unknown>) => void,
  item: ResponseItem,
  output_index: number,
  openParts: number,
): void {
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
  if (openParts === 0) {
    emit("response.output_item.added", {
      output_index,
      item: { ...item, status: "in_progress", content: [] },
    })
  }
  ;(item.content as Record<string, unknown>[]).forEach((part, content_index) => {
    const at = { item_id, output_index, content_index }
    const refusal = part.type === "refusal"
    if (content_index >= openParts) {
      emit("response.content_part.added", {
        ...at,
        part: refusal ? { ...part, refusal: "" } : { ...part, text: "" },
      })
      if (refusal) emit("response.refusal.delta", { ...at, delta: part.refusal })
      else emit("response.output_text.delta", { ...at, delta: part.text, logprobs: [] })
    }
    if (refusal) emit("response.refusal.done", { ...at, refusal: part.refusal })
    else emit("response.output_text.done", { ...at, text: part.text, logprobs: [] })
    emit("response.content_part.done", { ...at, part })
  })
  emit("response.output_item.done", { output_index, item })
}
