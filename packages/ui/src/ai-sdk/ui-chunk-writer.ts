import type { Request, RunResult, StreamEvent } from "@toolnexus/core"
import { errorTextOf } from "../internal/error-text.js"
import { OpenParts } from "../internal/open-parts.js"
import type { UIFinishReason, UIMessageChunk } from "./ui-message-chunk.js"

/** @internal Where a writer's chunks go: a live run, a queue, a message builder. */
export interface ChunkSink {
  push(chunk: UIMessageChunk): unknown
}

/** A call to show before its output when the client's message may not have it (a resumed halted call). */
export interface ShownCall {
  id: string
  name: string
  input: unknown
}

/** @internal What the chat handler tells the writer beyond `toUIMessageStream`'s options. */
export interface ChunkWriterOptions {
  messageId?: string | undefined
  onError?: ((e: unknown) => string) | undefined
  /**
   * Tool calls the posted assistant message already shows (its tool parts). When given, results
   * of calls neither shown, streamed here nor `haltedCall` are left out.
   */
  shownCalls?: ReadonlySet<string> | undefined
  /** Calls whose results the client supplied itself (relay outputs): not streamed back. */
  skipResults?: ReadonlySet<string> | undefined
  /** The call of an approval the post declined: its result is `tool-output-denied`. */
  deniedCall?: string | undefined
  /** The halted call being resumed: shown first when the posted message lacks it. */
  haltedCall?: ShownCall | undefined
}

/** The result fields the finish reason is read from (a `RunResult`, or a runtime's `TaskResult`). */
export interface FinishSource {
  status: RunResult["status"] | (string & {})
  limit?: string | undefined
  finishReason?: string | undefined
}

/** @internal The `finish` chunk's reason for a run's outcome. */
export function uiFinishReason(result: FinishSource | undefined): UIFinishReason {
  if (result === undefined) return "stop"
  // "tool-calls", never "interrupted": `sendAutomaticallyWhen` must still fire after the answer.
  if (result.status === "pending") return "tool-calls"
  if (result.status === "incomplete") {
    if (result.limit === "maxOutputTokens") return "length"
    if (result.limit === "contentFilter") return "content-filter"
    return "other"
  }
  if (result.status !== "done") return "other"
  if (result.finishReason === "refusal" || result.finishReason === "content_filter") return "content-filter"
  return "stop"
}

/**
 * @internal Turns a run's events into UI message chunks, one event at a time (no async
 * iteration per event: the handler calls it straight from `onEvent`). Each model turn is one
 * step; text and refusal deltas are text parts, reasoning deltas reasoning parts.
 */
export class UIChunkWriter {
  readonly #sink: ChunkSink
  readonly #opts: ChunkWriterOptions
  // Calls streamed here; made at the first (a text turn has none).
  #streamed: Set<string> | undefined
  #inStep = false
  // True before the first model turn too: results of a resumed turn get a step of their own.
  #turnEnded = true
  // The end types as literals: a template's concatenation would be flattened again to frame it.
  readonly #open = new OpenParts((kind, id) =>
    this.#out(kind === "text" ? { type: "text-end", id } : { type: "reasoning-end", id }),
  )
  #parts = 0
  #ended = false

  constructor(sink: ChunkSink, opts: ChunkWriterOptions = {}) {
    this.#sink = sink
    this.#opts = opts
  }

  start(): void {
    const { messageId } = this.#opts
    this.#out(messageId === undefined ? { type: "start" } : { type: "start", messageId })
  }

  event(ev: StreamEvent): void {
    if (this.#ended) return
    switch (ev.type) {
      case "text":
      case "refusal":
        if (ev.delta === "") return
        this.#modelOutput()
        this.#open.closeReasoning()
        if (this.#open.text === undefined) {
          this.#open.text = `text-${++this.#parts}`
          this.#out({ type: "text-start", id: this.#open.text })
        }
        this.#out({ type: "text-delta", id: this.#open.text, delta: ev.delta })
        return
      case "reasoning":
        if (ev.delta === "") return
        this.#modelOutput()
        this.#open.closeText()
        if (this.#open.reasoning === undefined) {
          this.#open.reasoning = `reasoning-${++this.#parts}`
          this.#out({ type: "reasoning-start", id: this.#open.reasoning })
        }
        this.#out({ type: "reasoning-delta", id: this.#open.reasoning, delta: ev.delta })
        return
      case "turn":
        this.#modelOutput()
        this.#open.closeAll()
        this.#turnEnded = true
        return
      case "tool_call":
        this.#ensureStep()
        this.#open.closeAll()
        this.#stream(ev.id)
        this.#out({ type: "tool-input-available", toolCallId: ev.id, toolName: ev.name, input: ev.args })
        return
      case "tool_result":
        this.#toolResult(ev)
        return
      case "pending":
        this.#ensureStep()
        this.#open.closeAll()
        this.#pending(ev.request)
        return
      case "done":
        // A saved runtime's handle ending (its events name the handle) is not the delivery's end.
        if (!("handle" in ev)) this.end(ev.result)
        return
      default:
        return
    }
  }

  /** Closes the message: open parts, the step, then `finish` with the outcome's reason. */
  end(result: FinishSource | undefined): void {
    if (this.#ended) return
    this.#ended = true
    this.#open.closeAll()
    if (this.#inStep) this.#out({ type: "finish-step" })
    this.#out({ type: "finish", finishReason: uiFinishReason(result) })
  }

  /** Closes the message after a failure: `error {errorText}` then `finish {finishReason:"error"}`. */
  fail(error: unknown): void {
    if (this.#ended) return
    this.#ended = true
    this.#open.closeAll()
    if (this.#inStep) this.#out({ type: "finish-step" })
    this.#out({ type: "error", errorText: errorTextOf(error, this.#opts.onError) })
    this.#out({ type: "finish", finishReason: "error" })
  }

  get ended(): boolean {
    return this.#ended
  }

  #toolResult(ev: Extract<StreamEvent, { type: "tool_result" }>): void {
    const { skipResults, deniedCall, shownCalls, haltedCall } = this.#opts
    if (skipResults?.has(ev.id)) return
    const known = this.#streamed?.has(ev.id) === true || shownCalls?.has(ev.id) === true
    // With the calls the client shows known, a result of any other call but the halted one
    // (a child handle's, in a saved runtime's resume) has no tool part to land on.
    if (!known && shownCalls !== undefined && haltedCall?.id !== ev.id) return
    this.#ensureStep()
    this.#open.closeAll()
    if (!known && haltedCall?.id === ev.id) {
      // The client's message lacks the call (another tab, a reloaded page): show it first, or
      // the client has no tool part to put the output on.
      this.#stream(ev.id)
      this.#out({
        type: "tool-input-available",
        toolCallId: ev.id,
        toolName: haltedCall.name,
        input: haltedCall.input,
      })
    }
    if (ev.id === deniedCall) this.#out({ type: "tool-output-denied", toolCallId: ev.id })
    else if (ev.isError) this.#out({ type: "tool-output-error", toolCallId: ev.id, errorText: ev.output })
    else this.#out({ type: "tool-output-available", toolCallId: ev.id, output: ev.output })
  }

  #pending(request: Request): void {
    if (request.kind === "tool_call") return // relay: its calls are tool-input-available parts already
    const callId = request.data?.callId
    const escalated = Array.isArray(request.data?.path)
    if (
      request.kind === "approval" &&
      !escalated &&
      typeof callId === "string" &&
      (this.#streamed?.has(callId) === true || this.#opts.shownCalls?.has(callId) === true)
    ) {
      this.#out({ type: "tool-approval-request", approvalId: request.id, toolCallId: callId })
      return
    }
    this.#out({ type: "data-toolnexus-request", id: request.id, data: request })
  }

  /**
   * Output of a model turn (text, reasoning, its end) begins a new step once the previous
   * turn ended; tool events after a turn's end stay in its step.
   */
  #modelOutput(): void {
    if (this.#inStep && this.#turnEnded) {
      this.#open.closeAll()
      this.#out({ type: "finish-step" })
      this.#inStep = false
    }
    this.#turnEnded = false
    this.#ensureStep()
  }

  #out(chunk: UIMessageChunk): void {
    this.#sink.push(chunk)
  }

  #stream(callId: string): void {
    this.#streamed ??= new Set()
    this.#streamed.add(callId)
  }

  #ensureStep(): void {
    if (this.#inStep) return
    this.#out({ type: "start-step" })
    this.#inStep = true
  }
}
