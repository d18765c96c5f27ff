import { type Request as PendingRequest, type StreamEvent, relayCallsOf } from "@toolnexus/core"
import type { RunOutcome } from "../internal/conversation-gate.js"
import { errorTextOf } from "../internal/error-text.js"
import { OpenParts } from "../internal/open-parts.js"
import type { AgUiEvent, AgUiInterrupt, AgUiOutcome } from "./ag-ui-event.js"

/** @internal What the AG-UI handler tells the writer about the run. */
export interface AgUiWriterOptions {
  threadId: string
  runId: string
  onError?: ((e: unknown) => string) | undefined
  /** Tool calls the posted messages show (calls of this thread). */
  knownCalls?: ReadonlySet<string>
  /** Calls whose results the client supplied (relay tool messages): not streamed back. */
  skipResults?: ReadonlySet<string>
}

const APPROVAL_SCHEMA = {
  type: "object",
  properties: { approved: { type: "boolean" }, reason: { type: "string" } },
  required: ["approved"],
}

let sequence = 0
const newId = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${(++sequence).toString(36)}`

/** @internal Turns a run's events into AG-UI events, one event at a time. */
export class AgUiWriter {
  readonly #out: (ev: AgUiEvent) => void
  readonly #opts: AgUiWriterOptions
  readonly #streamed = new Set<string>()
  readonly #open = new OpenParts((kind, id) => {
    if (kind === "text") this.#out({ type: "TEXT_MESSAGE_END", messageId: id })
    else {
      this.#out({ type: "REASONING_MESSAGE_END", messageId: id })
      this.#out({ type: "REASONING_END", messageId: id })
    }
  })
  #turnText: string | undefined
  #pending: PendingRequest | undefined
  #ended = false

  constructor(out: (ev: AgUiEvent) => void, opts: AgUiWriterOptions) {
    this.#out = out
    this.#opts = opts
  }

  start(): void {
    this.#out({ type: "RUN_STARTED", threadId: this.#opts.threadId, runId: this.#opts.runId })
  }

  event(ev: StreamEvent): void {
    if (this.#ended) return
    switch (ev.type) {
      case "text":
      case "refusal":
        if (ev.delta === "") return
        this.#open.closeReasoning()
        if (this.#open.text === undefined) {
          this.#open.text = newId("msg")
          this.#turnText = this.#open.text
          this.#out({ type: "TEXT_MESSAGE_START", messageId: this.#open.text, role: "assistant" })
        }
        this.#out({ type: "TEXT_MESSAGE_CONTENT", messageId: this.#open.text, delta: ev.delta })
        return
      case "reasoning":
        if (ev.delta === "") return
        this.#open.closeText()
        if (this.#open.reasoning === undefined) {
          const id = newId("reasoning")
          this.#open.reasoning = id
          this.#out({ type: "REASONING_START", messageId: id })
          this.#out({ type: "REASONING_MESSAGE_START", messageId: id, role: "reasoning" })
        }
        this.#out({ type: "REASONING_MESSAGE_CONTENT", messageId: this.#open.reasoning, delta: ev.delta })
        return
      case "turn":
        this.#open.closeAll()
        return
      case "tool_call": {
        this.#open.closeAll()
        this.#streamed.add(ev.id)
        const parent = this.#turnText
        this.#out({
          type: "TOOL_CALL_START",
          toolCallId: ev.id,
          toolCallName: ev.name,
          ...(parent !== undefined ? { parentMessageId: parent } : {}),
        })
        this.#out({ type: "TOOL_CALL_ARGS", toolCallId: ev.id, delta: JSON.stringify(ev.args) })
        this.#out({ type: "TOOL_CALL_END", toolCallId: ev.id })
        return
      }
      case "tool_result":
        // Results come after all of a turn's calls: the next call belongs to a later turn.
        this.#turnText = undefined
        if (this.#opts.skipResults?.has(ev.id)) return
        this.#open.closeAll()
        this.#out({
          type: "TOOL_CALL_RESULT",
          messageId: newId("tool"),
          toolCallId: ev.id,
          content: ev.output,
          role: "tool",
        })
        return
      case "pending":
        this.#open.closeAll()
        this.#pending = ev.request
        return
      default:
        return
    }
  }

  /** `RUN_FINISHED` with the outcome: interrupts for a request, pending relay calls, or success. */
  end(result: RunOutcome | undefined): void {
    if (this.#ended) return
    this.#ended = true
    this.#open.closeAll()
    const status = result?.status ?? "done"
    const pending = status === "pending" ? this.#pending : undefined
    const usage = result?.usage
    this.#out({
      type: "RUN_FINISHED",
      threadId: this.#opts.threadId,
      runId: this.#opts.runId,
      result: {
        status,
        ...(result?.finishReason !== undefined ? { finishReason: result.finishReason } : {}),
        ...(result?.limit !== undefined ? { limit: result.limit } : {}),
      },
      outcome: this.#outcome(pending),
      ...(usage
        ? {
            usage: [
              {
                inputTokens: usage.promptTokens,
                outputTokens: usage.completionTokens,
                totalTokens: usage.totalTokens,
              },
            ],
          }
        : {}),
    })
  }

  /** One `RUN_ERROR` after a failure; open messages are closed first. */
  fail(error: unknown): void {
    if (this.#ended) return
    this.#ended = true
    this.#open.closeAll()
    const text = errorTextOf(error, this.#opts.onError)
    this.#out({ type: "RUN_ERROR", message: text, code: codeOf(error) })
  }

  get ended(): boolean {
    return this.#ended
  }

  #outcome(pending: PendingRequest | undefined): AgUiOutcome {
    if (pending === undefined) return { type: "success" }
    if (pending.kind === "tool_call")
      return { type: "success", pendingToolCallIds: relayCallsOf(pending).map((c) => c.id) }
    return { type: "interrupt", interrupts: [this.#interrupt(pending)] }
  }

  #interrupt(request: PendingRequest): AgUiInterrupt {
    const interrupt: AgUiInterrupt = {
      id: request.id,
      reason: `toolnexus:${request.kind}`,
      message: request.prompt,
      metadata: { toolnexus: request },
    }
    const callId = request.data?.callId
    if (request.kind === "approval") {
      const ofThread =
        typeof callId === "string" &&
        !Array.isArray(request.data?.path) &&
        (this.#streamed.has(callId) || this.#opts.knownCalls?.has(callId) === true)
      if (ofThread) {
        interrupt.reason = "tool_call"
        interrupt.toolCallId = callId
        interrupt.responseSchema = APPROVAL_SCHEMA
      } else interrupt.reason = "confirmation"
    } else if (request.kind === "input") {
      interrupt.reason = "input_required"
      const schema = request.data?.schema
      if (typeof schema === "object" && schema !== null && !Array.isArray(schema))
        interrupt.responseSchema = schema as Record<string, unknown>
    }
    if (request.expiresAt !== undefined) interrupt.expiresAt = request.expiresAt
    return interrupt
  }
}

/** The `code` of a `RUN_ERROR`: the toolnexus error code, else `TNX_INTERNAL`. */
export function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === "string" && code.startsWith("TNX_") ? code : "TNX_INTERNAL"
}
