import { RuntimeError } from "./errors.js"
import type { HandleRecord } from "./handle-record.js"
import type { EventHub } from "./runtime-events.js"
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
  trace: string[],
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
  // Most handles take a few steps: an exact-size copy holds them in a few words, where the
  // first push would reserve 17 slots (about 150 B per parked handle).
  if (r.transitions.length < 8) r.transitions = r.transitions.concat(step)
  else r.transitions.push(step)
  trace.push(`${r.id}: ${step}`)
  events?.state(r.id, previous, to)
}
