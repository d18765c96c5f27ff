import type { StreamEvent } from "../client/run-result.js"
import type { RuntimeEvent } from "../host/host-types.js"

type EngineEvent = StreamEvent | RuntimeEvent

/**
 * A worker's event log writer for one run (a workflow invocation): events are appended in
 * order, one write in flight at a time, so a slow store batches what piles up meanwhile.
 * Written beside the journal, never through it: the loop emits a step's events only when the
 * step executes, so a journaled write per event would differ on replay.
 */
export interface EngineEventLog {
  /** Queues an event for the log. */
  emit(ev: EngineEvent): void
  /** Resolves once every event queued so far is written (or its write failed). */
  flush(): Promise<void>
}

/**
 * The event log writer of one run: `write` appends a batch (in order) to the run's log; a
 * failed write is reported to `onError` and its batch dropped (the journal, not the log, is
 * the run's truth).
 */
export function engineEventLog(
  write: (events: EngineEvent[]) => Promise<void>,
  onError: (error: unknown) => void,
): EngineEventLog {
  let queued: EngineEvent[] = []
  let writing: Promise<void> | undefined
  const drain = async (): Promise<void> => {
    while (queued.length > 0) {
      const batch = queued
      queued = []
      try {
        await write(batch)
      } catch (error) {
        onError(error)
      }
    }
    writing = undefined
  }
  return {
    emit(ev) {
      queued.push(ev)
      writing ??= drain()
    },
    async flush() {
      while (writing) await writing
    },
  }
}

/** What a connection reads of a run's event log to tail it (see {@link tailEngineEvents}). */
export interface EngineEventSource {
  /** The log's events after position `after` (0: from its start), and the position after them. */
  read(after: number): Promise<{
    /** The events after `after`, oldest first. */
    events: EngineEvent[]
    /** The position to read after next time. */
    next: number
  }>
  /** The log's end position now. */
  end(): Promise<number>
  /**
   * Where the turn's current stretch starts: after its last park, so a resumed turn's events
   * start after what was delivered before it waited. Without it, 0 (the log's start).
   */
  start?(): Promise<number>
  /** True while the run runs: not ended, and not parked on a request. */
  inFlight(): Promise<boolean>
}

/**
 * Tails a run's event log: from its start (`fromStart`: of the current stretch, after the last
 * park of a resumed turn), from position `from`, or from its end now, yielding events as the
 * workers write them, until the run ends or parks. The workers flush the log before a run parks
 * or ends, so a read after `inFlight` turned false holds the run's last events.
 *
 * Without `from`, a run not in flight at the first look yields nothing (its events are not the
 * tail's to replay). With `from`, the log is read from there whatever the first look finds: a
 * connection that started a turn or answered a request knows where that turn's events begin,
 * and a run quick enough to park or end before the first look still has them delivered (its
 * `pending` event above all, which an inbox waits on).
 */
export async function* tailEngineEvents(
  source: EngineEventSource,
  opts: { fromStart?: boolean; from?: number; pollMs?: number; signal?: AbortSignal } = {},
): AsyncGenerator<EngineEvent> {
  const pollMs = opts.pollMs ?? 50
  let at: number
  if (opts.from !== undefined) at = opts.from
  else {
    if (!(await source.inFlight())) return
    at = opts.fromStart ? ((await source.start?.()) ?? 0) : await source.end()
  }
  for (;;) {
    if (opts.signal?.aborted) return
    // Looked at before the read: a run that stopped before it has all its events in the log.
    const running = await source.inFlight()
    const { events, next } = await source.read(at)
    at = next
    for (const ev of events) yield ev
    if (!running) return
    if (events.length === 0) await new Promise((resolve) => setTimeout(resolve, pollMs))
  }
}

/**
 * Feeds `onEvent` the events of `events` in the background, for a connection's `onEvent` option:
 * an observer's throw is ignored (observers cannot change a run), a failed read goes to
 * `onError`, and feeding stops once `isClosed()` is true.
 */
export function followEngineEvents(
  events: AsyncIterable<EngineEvent>,
  onEvent: (ev: EngineEvent) => void,
  opts: { isClosed: () => boolean; onError: (error: unknown) => void },
): void {
  void (async () => {
    for await (const ev of events) {
      if (opts.isClosed()) return
      try {
        onEvent(ev)
      } catch {
        // Observers cannot change a run.
      }
    }
  })().catch(opts.onError)
}
