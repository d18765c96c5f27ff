import type { StreamEvent } from "@toolnexus/core"
import type { AcceptedRun, RunOutcome } from "./conversation-gate.js"
import { type Refusal, refusalOf } from "./http-error.js"

/** @internal How a started run ended. */
export type Settled = { ok: true; result: RunOutcome } | { ok: false; error: unknown }

/**
 * @internal Starts an accepted run and waits for its first event or its end, whichever comes
 * first: an answer refused by the store's claim (a second tab that passed the pre-checks at the
 * same moment, an expiry) throws before any event, and becomes an HTTP refusal instead of a
 * stream. Once an event arrived the run is streaming, and a failure is streamed.
 */
export async function startRun(
  accepted: AcceptedRun,
  onEvent: (ev: StreamEvent) => void,
): Promise<{ refusal: Refusal } | { settled: Promise<Settled> }> {
  let started = false
  let markStarted: () => void = () => {}
  const firstEvent = new Promise<undefined>((resolve) => {
    markStarted = () => resolve(undefined)
  })
  const settled: Promise<Settled> = accepted
    .execute((ev) => {
      if (!started) {
        started = true
        markStarted()
      }
      onEvent(ev)
    })
    .then(
      (result): Settled => ({ ok: true, result }),
      (error: unknown): Settled => ({ ok: false, error }),
    )
  const first = await Promise.race([firstEvent, settled])
  if (first !== undefined && !first.ok && !started) {
    const refusal = refusalOf(first.error)
    if (refusal) return { refusal }
  }
  return { settled }
}
