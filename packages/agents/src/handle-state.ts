import { RuntimeError } from "./errors.js"
import type { HandleRecord } from "./handle-record.js"
import { NO_STEPS } from "./transition-history.js"
import type { EventHub } from "./runtime-events.js"
import type { Trace } from "./trace.js"
import type { HandleState } from "./types.js"

/**
 * @internal The handle state machine, written down once: every move a handle may make, by
 * name, with the states it may start from. {@link applyTransition} is the only code that
 * changes a live handle's state.
 */
export const HANDLE_TRANSITIONS = {
  /** A wake, or a resumed turn, runs the handle. */
  start: { from: ["idle"], to: "running" },
  /** The turn ended: done, incomplete, error or interrupted. */
  settle: { from: ["running"], to: "idle" },
  /** The turn halted on a request no `waitFor` on the chain answers; the handle parks. */
  park: { from: ["running"], to: "suspended" },
  /** A `waitFor` up the chain is asked inline; the handle keeps its concurrency slot. */
  escalate: { from: ["running"], to: "suspended" },
  /** That `waitFor` returned (or threw); the same turn goes on. */
  answerInline: { from: ["suspended"], to: "running" },
  /** `resume` brought the answer to the parked request; `start` follows at once. */
  unpark: { from: ["suspended"], to: "idle" },
  /** `interrupt` cancelled the parked request; the next run declines it first. */
  cancel: { from: ["suspended"], to: "idle" },
  /** `close`, once any running turn has settled. Final. */
  close: { from: ["idle", "suspended"], to: "closed" },
  /** Restored from a snapshot taken mid-turn: that turn cannot be carried over. */
  restoreInterrupted: { from: ["running"], to: "idle" },
} as const satisfies Record<string, { from: readonly HandleState[]; to: HandleState }>

/**
 * Each transition's `<from>→<to>` text by starting state, built once: every parked handle
 * keeps its steps in `transitions`, and shared strings cost it nothing per handle.
 */
const STEP_TEXT = Object.fromEntries(
  Object.entries(HANDLE_TRANSITIONS).map(([name, { from, to }]) => [
    name,
    Object.fromEntries(from.map((state) => [state, `${state}→${to}`])),
  ]),
) as Record<HandleTransition, Partial<Record<HandleState, string>>>

/** Histories this long and longer are a handle's own array, grown in place. */
const SHARED_UP_TO = 8

/**
 * Short histories, shared by every handle that took the same steps (most take the same few:
 * start, park), each mapped to the histories one step on. A parked handle then holds no array
 * of its own. Bounded: only the valid step sequences shorter than {@link SHARED_UP_TO}.
 */
const NEXT_HISTORY = new Map<readonly string[], Map<string, readonly string[]>>([[NO_STEPS, new Map()]])

/** `history` with `step` appended: a shared history while it is short, else the handle's own array. */
function withStep(history: readonly string[], step: string): readonly string[] {
  const next = NEXT_HISTORY.get(history)
  if (next === undefined) {
    // Not shared, so this handle's own (long, or restored from a snapshot).
    ;(history as string[]).push(step)
    return history
  }
  let shared = next.get(step)
  if (shared === undefined) {
    if (history.length + 1 >= SHARED_UP_TO) return [...history, step]
    shared = Object.freeze([...history, step])
    next.set(step, shared)
    NEXT_HISTORY.set(shared, new Map())
  }
  return shared
}

/** @internal The name of one allowed move of a handle's state. */
export type HandleTransition = keyof typeof HANDLE_TRANSITIONS

/**
 * @internal Applies a named transition to a handle and records it in the handle's
 * `transitions` and the runtime `trace` (`<id>: <from>→<to>`), and streams it as a `state` event.
 *
 * @throws RuntimeError (reason `invalid_transition`) when the handle is not in a state the
 * transition starts from: a defect in the runtime, never a host mistake.
 */
export function applyTransition(
  r: HandleRecord,
  name: HandleTransition,
  trace: Trace,
  events?: EventHub,
): void {
  const { from, to } = HANDLE_TRANSITIONS[name]
  if (!(from as readonly HandleState[]).includes(r.state)) {
    throw new RuntimeError(
      "invalid_transition",
      `${r.id}: transition ${name} starts from ${from.join(" or ")}, but the handle is ${r.state}`,
    )
  }
  const previous = r.state
  const step = STEP_TEXT[name][previous] as string
  r.state = to
  r.transitions = withStep(r.transitions, step)
  trace.step(r.id, step)
  events?.state(r.id, previous, to)
}
