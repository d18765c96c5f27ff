import type { Message, StreamEvent } from "@toolnexus/core"

/** @internal A part of a stored user prompt, as the UI shows it. */
export type PromptPart =
  | { type: "text"; text: string }
  | { type: "file"; mediaType: string; url: string; filename?: string }

/**
 * @internal A stored transcript read back, whatever its endpoint style: user prompts, and
 * between them the events the run streamed when it wrote them (model text, reasoning, turn
 * ends, tool calls and results), so that a writer of the live stream can replay them.
 */
export type TranscriptEntry =
  | { kind: "user"; index: number; parts: PromptPart[] }
  | { kind: "events"; index: number; events: StreamEvent[] }

type Loose = Record<string, unknown>

const isObject = (v: unknown): v is Loose => typeof v === "object" && v !== null && !Array.isArray(v)
const textOf = (v: unknown): string => (typeof v === "string" ? v : "")

/** Arguments as the stream's `tool_call` gives them: parsed, `{}` when they do not parse to an object. */
function argsOf(raw: unknown): Record<string, unknown> {
  if (isObject(raw)) return raw
  if (typeof raw !== "string" || raw.trim() === "") return {}
  try {
    const parsed = JSON.parse(raw) as unknown
    return isObject(parsed) ? parsed : {}
  } catch {
    return {}
  }
}

/** The media type and payload of a `data:` URL, else `undefined`. */
function dataUrl(url: string): { mediaType: string } | undefined {
  const match = /^data:([^;,]*)[;,]/.exec(url)
  return match ? { mediaType: match[1] || "application/octet-stream" } : undefined
}

function imageUrlPart(url: string): PromptPart {
  return { type: "file", mediaType: dataUrl(url)?.mediaType ?? "image/*", url }
}

/** The UI parts of a user prompt's content in any style; `undefined` when it is a tool-result carrier. */
function promptParts(content: unknown): PromptPart[] | undefined {
  if (typeof content === "string") return [{ type: "text", text: content }]
  if (!Array.isArray(content)) return []
  const parts: PromptPart[] = []
  for (const block of content) {
    if (!isObject(block)) continue
    switch (block.type) {
      case "tool_result":
        return undefined
      case "text":
      case "input_text":
        parts.push({ type: "text", text: textOf(block.text) })
        break
      case "image_url":
        if (isObject(block.image_url)) parts.push(imageUrlPart(textOf(block.image_url.url)))
        break
      case "input_image":
        parts.push(imageUrlPart(textOf(block.image_url)))
        break
      case "file":
        if (isObject(block.file)) parts.push(filePart(textOf(block.file.file_data), block.file.filename))
        break
      case "input_file":
        parts.push(filePart(textOf(block.file_data), block.filename))
        break
      case "image":
      case "document":
        if (isObject(block.source)) parts.push(sourcePart(block.source, block.type, block.title))
        break
    }
  }
  return parts
}

function filePart(url: string, filename: unknown): PromptPart {
  const part: PromptPart = {
    type: "file",
    mediaType: dataUrl(url)?.mediaType ?? "application/octet-stream",
    url,
  }
  if (typeof filename === "string") part.filename = filename
  return part
}

function sourcePart(source: Loose, kind: string, title: unknown): PromptPart {
  if (source.type === "url") return { type: "file", mediaType: "image/*", url: textOf(source.url) }
  const mediaType = textOf(source.media_type) || (kind === "image" ? "image/*" : "application/pdf")
  const part: PromptPart = { type: "file", mediaType, url: `data:${mediaType};base64,${textOf(source.data)}` }
  if (typeof title === "string") part.filename = title
  return part
}

/**
 * Replays one model turn's content as the loop streamed it: its text, refusal and reasoning in
 * order, the turn's end, then its tool calls (the loop emits them once the turn ended).
 */
class TurnReplay {
  readonly events: StreamEvent[] = []
  readonly #names = new Map<string, string>()
  #calls: StreamEvent[] = []
  #open = false
  #turns = 0

  output(type: "text" | "refusal" | "reasoning", delta: string): void {
    if (this.#calls.length > 0) this.endTurn()
    this.#open = true
    if (delta !== "") this.events.push({ type, delta })
  }

  call(id: string, name: string, raw: unknown): void {
    this.#open = true
    this.#names.set(id, name)
    this.#calls.push({ type: "tool_call", id, name, args: argsOf(raw) })
  }

  result(id: string, output: unknown, isError: boolean): void {
    this.endTurn()
    const text = typeof output === "string" ? output : resultText(output)
    this.events.push({ type: "tool_result", id, name: this.#names.get(id) ?? "tool", output: text, isError })
  }

  endTurn(): void {
    if (!this.#open) return
    this.#open = false
    const calls = this.#calls
    this.#calls = []
    this.events.push({
      type: "turn",
      turn: ++this.#turns,
      finishReason: calls.length > 0 ? "tool_calls" : "stop",
    })
    this.events.push(...calls)
  }
}

/** The text of an Anthropic `tool_result` given as blocks. */
function resultText(content: unknown): string {
  if (!Array.isArray(content)) return JSON.stringify(content) ?? ""
  return content.map((b) => (isObject(b) ? textOf(b.text) : "")).join("")
}

/** Reads one assistant-side message into `turn`; false when it is not one (a user prompt, a system message). */
function replay(message: Loose, turn: TurnReplay): boolean {
  const { role, type } = message
  if (role === "assistant" && !Array.isArray(message.content) && type !== "message") {
    // OpenAI chat: one message is one turn.
    turn.endTurn()
    turn.output("text", textOf(message.content))
    if (typeof message.refusal === "string") turn.output("refusal", message.refusal)
    for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
      if (!isObject(call) || !isObject(call.function)) continue
      turn.call(textOf(call.id), textOf(call.function.name), call.function.arguments)
    }
    turn.endTurn()
    return true
  }
  if (role === "assistant" && type !== "message") {
    // Anthropic: content blocks.
    turn.endTurn()
    for (const block of message.content as unknown[]) {
      if (!isObject(block)) continue
      if (block.type === "text") turn.output("text", textOf(block.text))
      else if (block.type === "thinking") turn.output("reasoning", textOf(block.thinking))
      else if (block.type === "tool_use") turn.call(textOf(block.id), textOf(block.name), block.input)
    }
    turn.endTurn()
    return true
  }
  if (role === "tool") {
    turn.result(textOf(message.tool_call_id), message.content, false)
    return true
  }
  if (role === "user" && Array.isArray(message.content) && promptParts(message.content) === undefined) {
    for (const block of message.content)
      if (isObject(block) && block.type === "tool_result")
        turn.result(textOf(block.tool_use_id), block.content, block.is_error === true)
    return true
  }
  // Responses: a turn is a run of output items (reasoning, a message, function calls).
  switch (type) {
    case "reasoning":
      for (const s of Array.isArray(message.summary) ? message.summary : [])
        if (isObject(s)) turn.output("reasoning", textOf(s.text))
      return true
    case "message":
      if (role !== "assistant") return false
      for (const part of Array.isArray(message.content) ? message.content : []) {
        if (!isObject(part)) continue
        if (part.type === "output_text") turn.output("text", textOf(part.text))
        else if (part.type === "refusal") turn.output("refusal", textOf(part.refusal))
      }
      return true
    case "function_call":
      turn.call(textOf(message.call_id), textOf(message.name), message.arguments)
      return true
    case "function_call_output":
      turn.result(textOf(message.call_id), message.output, false)
      return true
  }
  return false
}

/**
 * @internal A stored transcript (OpenAI chat, Anthropic or Responses shape) as user prompts and
 * the stream events of the model's work between them. System and developer messages are left out.
 */
export function transcriptEntries(messages: readonly Message[]): TranscriptEntry[] {
  const entries: TranscriptEntry[] = []
  let turn: TurnReplay | undefined
  let start = 0
  const flush = () => {
    if (turn === undefined) return
    turn.endTurn()
    entries.push({ kind: "events", index: start, events: turn.events })
    turn = undefined
  }
  for (const [index, raw] of messages.entries()) {
    if (!isObject(raw)) continue
    const message = raw as Loose
    if (message.role === "user") {
      const parts = promptParts(message.content)
      if (parts !== undefined) {
        flush()
        entries.push({ kind: "user", index, parts })
        continue
      }
    }
    if (turn === undefined) {
      turn = new TurnReplay()
      start = index
    }
    if (!replay(message, turn) && turn.events.length === 0) turn = undefined
  }
  flush()
  return entries
}
