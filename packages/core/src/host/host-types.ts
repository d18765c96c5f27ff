import type { StreamEvent } from "../client/run-result.js"
import type { Request } from "../types.js"

// The agents runtime's result and event shapes live here, beside the host interface that
// returns them, so a door can name a host's results from core alone; `@toolnexus/agents`
// re-exports them unchanged.

/** The lifecycle state of a handle of an agents runtime. */
export type HandleState = "idle" | "running" | "suspended" | "closed"

/** The outcome of a handle's run, as `wait` reports it (and a runtime agent's run result). */
export interface TaskResult {
  /**
   * How the run ended: `done`; `pending` on a request no `waitFor` answered; `incomplete` at
   * a budget limit (see `limit`); `interrupted` by `interrupt` or `close`; `closed` (closed
   * before it ran, or while parked); `timeout` (the `wait` gave up); `error` (the run failed).
   */
  status: "done" | "pending" | "incomplete" | "interrupted" | "closed" | "timeout" | "error"
  /**
   * The run's final text (partial if `incomplete`); the failure for `error` and `timeout`;
   * `""` when it was interrupted or closed.
   */
  text: string
  /**
   * False for `done`, `pending` and `incomplete`; true for `error`, `interrupted` and
   * `timeout`, and for `closed` when the handle was closed while parked.
   */
  isError: boolean
  /** The request the handle is suspended on, with its `data.path`; present when `status` is `"pending"`. */
  pending?: Request
  /** The budget key that stopped the run (e.g. `"maxTurns"`); present when `status` is `"incomplete"`. */
  limit?: string
  /** The handle's own LLM turns. */
  turns: number
  /** LLM turns of the handle and all its descendants. */
  totalTurns: number
  /** Tokens of the handle and all its descendants. */
  totalTokens: number
}

/**
 * What an agents runtime streams: each handle's run events, its state changes, and a notice
 * when a stalled `events()` consumer lost events. Every event names the handle it came from
 * (`dropped` names the root: it is about the stream, not one handle).
 */
export type RuntimeEvent = (
  | StreamEvent
  | {
      /** A state change of the handle. */
      type: "state"
      /** The state it left. */
      from: HandleState
      /** The state it entered. */
      to: HandleState
    }
  | {
      /** A notice to an `events()` consumer that lost events to its full buffer. */
      type: "dropped"
      /** How many events this consumer lost since its last `dropped` notice. */
      count: number
    }
) & {
  /** The id of the handle the event came from (`"root"` for `dropped`), e.g. `root/lead.1`. */
  handle: string
}
