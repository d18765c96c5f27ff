import type { StreamEvent } from "@toolnexus/core"
import type { AcceptedRun, RunOutcome } from "./conversation-gate.js"
import { type Refusal, refusalOf } from "./http-error.js"

/** @internal How a started run ended. */
export type Settled = { ok: true; result: RunOutcome } | { ok: false; error: unknown }

/** @internal A started run that streams: how it settles. */
export interface Streaming {
  settled: Promise<Settled>
}

/**
 * @internal Starts an accepted run and waits for its first event or its end, whichever comes
 * first: an answer refused by the store's claim (a second tab that passed the pre-checks at the
 * same moment, an expiry) throws before any event, and becomes an HTTP refusal instead of a
 * stream. Once an event arrived the run is streaming, and a failure is streamed.
 *
 * One promise resolved by whichever comes first (no `Promise.race` and no first-event promise
 * a turn): the first event resolves it as streaming, an end before any event with its refusal.
 */
export function startRun(
  accepted: AcceptedRun,
  onEvent: (ev: StreamEvent) => void,
): Promise<{ refusal: Refusal } | Streaming> {
  return new Promise((resolve) => {
    let started = false
    const streaming = {} as Streaming
    streaming.settled = accepted
      .execute((ev) => {
        if (!started) {
          started = true
          resolve(streaming)
        }
        onEvent(ev)
      })
      .then(succeeded, failed)
    void streaming.settled.then((settled) => {
      if (started) return
      started = true
      const refusal = settled.ok ? undefined : refusalOf(settled.error)
      resolve(refusal ? { refusal } : streaming)
    })
  })
}

const succeeded = (result: RunOutcome): Settled => ({ ok: true, result })
const failed = (error: unknown): Settled => ({ ok: false, error })
