import type { FinishReason } from "../providers/model-turn.js"
import type { Message, Request, Usage } from "../types.js"

/** One tool call of a run and what the model saw for it. */
export interface ToolCallRecord {
  /** The model's id of the call. */
  id: string
  /** The name of the tool the model called. */
  name: string
  /** The arguments the tool ran with (as `beforeTool` left them); `{}` when they did not parse. */
  args: Record<string, unknown>
  /** The result text the model saw. */
  output: string
  /** Whether the model saw an error result: a failed or unknown tool, bad arguments, or the halted call. */
  isError: boolean
  /** The tool result's `metadata`, if any; on the call the run halted on, `pending` holds the request. */
  metadata?: Record<string, unknown>
}

/**
 * The outcome of a run. Plain JSON: it survives `JSON.stringify`/`JSON.parse`. `Output` is
 * the type of `output` when the run asked for structured output with a Zod schema.
 */
export interface RunResult<Output = unknown> {
  /** `pending`: halted on `pending`; `incomplete`: stopped by `limit`. */
  status: "done" | "pending" | "incomplete"
  /**
   * Set only when incomplete: "maxTurns", "maxOutputTokens" (the reply was cut by the token
   * limit), "contentFilter", "invalidOutput" (structured output still invalid after one
   * corrective turn), "budget", …
   */
  limit?: string
  /** Why the last model turn ended, normalised; absent when no model turn ran. */
  finishReason?: FinishReason
  /** Set when the model refused: its refusal text ("" when the provider gives none). */
  refusal?: string
  /** With `output` requested: the parsed, validated final answer. */
  output?: Output
  /** The last model turn's text (a paused turn's parts joined); "" when it only called tools. */
  text: string
  /**
   * The whole transcript after the run, in the client's message shape (history, prompt, model
   * turns, tool results): the `history` or `messages` to go on from.
   */
  messages: Message[]
  /** Set when `status` is `pending`: the request the run halted on, to answer and `continueRun` with. */
  pending?: Request
  /**
   * This run's tool calls in call order, the call it halted on included; results kept from
   * before a resume are not repeated.
   */
  toolCalls: ToolCallRecord[]
  /** `toolCalls.length`. */
  toolCallCount: number
  /** The LLM turns this run made (a resumed run counts its own). */
  turns: number
  /** The client's model. */
  model: string
  /** Token counts summed over this run's LLM turns. */
  usage: Usage
  /**
   * The run's id, the stable half of its calls' `ctx.idempotencyKey` (`<runId>:<call id>`): the
   * `id` it ran under (a stored conversation's, or `continueRun`'s), the executor's id, or — for
   * a run given none — a generated `run-<uuid>`, which its halted request carries as
   * `data.runId` so a resume from `messages` keeps it. Set on every run of a client; optional
   * only for results built elsewhere.
   */
  runId?: string
}

/**
 * What `Client.stream` yields and `onEvent` receives, in order: per model turn its `text` (and
 * `refusal`, `reasoning`) deltas as they arrive, `usage` (the run's running total), `turn` (the model turn
 * ended, with its finish reason), then each `tool_call`, each `tool_result` in call order, and
 * `pending` when the run halts; `done` last. A suspension is only ever a `pending` event, never
 * an `isError` tool result.
 */
export type StreamEvent =
  | {
      /** A piece of the model's answer text, as it streams. */
      type: "text"
      /** The new text, to append to what came before. */
      delta: string
    }
  | {
      /** A piece of the model's refusal text, as it streams. */
      type: "refusal"
      /** The new refusal text, to append to what came before. */
      delta: string
    }
  /** Reasoning text as it arrives: Anthropic thinking, Responses reasoning summaries, `reasoning_content`. */
  | {
      /** A piece of the model's reasoning text (never part of `result.text`). */
      type: "reasoning"
      /** The new reasoning text, to append to what came before. */
      delta: string
    }
  | {
      /** A model turn ended. */
      type: "turn"
      /** The turn that ended, counting from 1 within the run. */
      turn: number
      /** Why it ended, normalised. */
      finishReason: FinishReason
    }
  | {
      /** The model called a tool; emitted before the turn's tools run. */
      type: "tool_call"
      /** The model's id of the call; its `tool_result` has the same id. */
      id: string
      /** The name of the tool called. */
      name: string
      /** The arguments as the model gave them (before `beforeTool`); `{}` when they did not parse. */
      args: Record<string, unknown>
    }
  | {
      /** A tool call settled (not a suspension: that streams as `pending`). */
      type: "tool_result"
      /** The id of the call it answers. */
      id: string
      /** The name of the tool called. */
      name: string
      /** The result text the model sees. */
      output: string
      /** Whether the model sees it as an error result. */
      isError: boolean
    }
  | {
      /** The run halted on a request. */
      type: "pending"
      /** The request the run halted on (the result's `pending`). */
      request: Request
    }
  | {
      /** Token usage after a model turn. */
      type: "usage"
      /** The run's running totals so far. */
      usage: Usage
    }
  | {
      /** The run ended; always the last event (after a stored conversation's save). */
      type: "done"
      /** The run's result, as `run`/`ask`/`continueRun` resolve it. */
      result: RunResult
    }
