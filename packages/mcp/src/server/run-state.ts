import { type PendingEntry, type Request, type RunHost, pendingOfRun, runIdOfEntry } from "@toolnexus/core"
import { settlesResultAtPark } from "@toolnexus/core/engine"

/** Where a hosted run stands: ended with a result, or parked on open requests. @internal */
export type RunState =
  | { kind: "ended"; text: string; isError: boolean; status: string }
  | { kind: "waiting"; requests: Request[] }

/** How long the pending-watch waits between looks, growing to the cap. */
const FIRST_LOOK_MS = 25
const LOOK_CAP_MS = 500

/**
 * The run's current state: its result when it has ended, else the open requests it waits on.
 * A store host settles `result` when the run parks; a host whose runs wait inside an engine
 * does not, so the open requests are also looked for until one of the two shows.
 *
 * @internal
 */
export async function runStateOf(
  host: RunHost,
  runId: string,
  signal?: AbortSignal,
  opts: { plain?: boolean } = {},
): Promise<RunState> {
  // Plain flags and one timer rather than AbortControllers: this runs twice per MCP call, and a
  // store host settles `result` before the first look is due, so the watch is set up and dropped.
  let current: Watch | undefined
  let stopped = signal?.aborted === true
  const abort = () => {
    stopped = true
    if (current) stopWatch(current)
  }
  // The signal stops a watch or a pause only: it is listened to once there is one (a listener
  // added and removed costs more than the rest of a look at a settled run).
  let listening = false
  const listen = () => {
    if (listening || signal === undefined) return
    listening = true
    signal.addEventListener("abort", abort, { once: true })
    if (signal.aborted) abort()
  }
  // A host whose `result` settles at a park needs no watch: without it no timer is armed, and a
  // slow run (a loaded machine) is not listed again and again while it runs to its park.
  const watched = !settlesResultAtPark(host)
  try {
    for (;;) {
      const watch: Watch = { stopped }
      current = watch
      let first: { result: unknown } | { requests: Request[] }
      try {
        const settled = host.result(runId).then((result) => ({ result }))
        if (watched) listen()
        first = watched
          ? await Promise.race([settled, watchPending(host, runId, watch).then((requests) => ({ requests }))])
          : await settled
      } finally {
        stopWatch(watch)
        current = undefined
      }
      if ("requests" in first) return { kind: "waiting", requests: first.requests }
      const result = first.result as ResultView
      if (result.status === "pending") {
        // A plain tool's run is one conversation, which holds one request at a time: the one it
        // parked on, when that is still open, is all it waits on (one read, not the listing).
        if (opts.plain === true && result.pending) {
          const entry = await host.findRequest(result.pending.id)
          if (entry?.state === "open" && runIdOfEntry(entry) === runId)
            return { kind: "waiting", requests: [entry.request] }
        }
        // One listing for both questions: what is open, and whether anything is held at all.
        const all = await pendingOfRun(host, runId)
        const open = openOf(all)
        if (open.length > 0) return { kind: "waiting", requests: open }
        // Its requests are claimed: an answer is resuming the run, whose kept result is still
        // the parked one until the resumed run settles. Look again.
        if (all.length > 0) listen()
        if (all.length > 0 && !stopped) {
          const pause: Watch = { stopped }
          current = pause
          await sleep(FIRST_LOOK_MS, pause)
          current = undefined
          continue
        }
        if (result.pending) return { kind: "waiting", requests: [result.pending] }
      }
      return endedOf(result, opts.plain === true)
    }
  } finally {
    if (listening) signal?.removeEventListener("abort", abort)
  }
}

/** What a run's result is as a state, when it has ended. */
interface ResultView {
  status: string
  text: string
  isError?: boolean
  pending?: Request
  toolCalls?: { isError?: boolean }[]
}

function endedOf(result: ResultView, plain: boolean): RunState {
  return {
    kind: "ended",
    text: result.text,
    // A plain tool's run is its one call: the call's error (a throw, a decline) is the result's.
    isError:
      result.isError === true || (plain && result.toolCalls?.[result.toolCalls.length - 1]?.isError === true),
    status: result.status,
  }
}

/**
 * The state a conversation run's `done` event (its last, sent after its save) says it ended in:
 * undefined for any other event, a run that parked, or a result not shaped like a run's.
 *
 * @internal
 */
export function endedByEvent(ev: { type: string }, plain: boolean): RunState | undefined {
  if (ev.type !== "done") return undefined
  const result = (ev as { result?: unknown }).result as Partial<ResultView> | undefined
  if (typeof result?.status !== "string" || typeof result.text !== "string" || result.status === "pending")
    return undefined
  return endedOf(result as ResultView, plain)
}

/** One look's (or pause's) cancellation: its timer and the wake-up of whoever waits on it. */
interface Watch {
  stopped: boolean
  timer?: ReturnType<typeof setTimeout>
  wake?: () => void
}

function stopWatch(watch: Watch): void {
  watch.stopped = true
  if (watch.timer !== undefined) clearTimeout(watch.timer)
  watch.wake?.()
}

/** Resolves with the run's open (unclaimed) requests once it has some; never resolves when stopped first. */
async function watchPending(host: RunHost, runId: string, watch: Watch): Promise<Request[]> {
  let wait = FIRST_LOOK_MS
  for (;;) {
    await sleep(wait, watch)
    if (watch.stopped) return new Promise<never>(() => {})
    // Claimed requests are being answered: the run is not waiting on them.
    const open = openOf(await pendingOfRun(host, runId))
    if (watch.stopped) return new Promise<never>(() => {})
    if (open.length > 0) return open
    wait = Math.min(wait * 2, LOOK_CAP_MS)
  }
}

/** Resolves after `ms`, or at once when `watch` is (or gets) stopped. */
function sleep(ms: number, watch: Watch): Promise<void> {
  if (watch.stopped) return Promise.resolve()
  return new Promise((resolve) => {
    watch.wake = resolve
    watch.timer = setTimeout(resolve, ms)
  })
}

/**
 * The requests of run `runId` held by its runtime or by its conversation; with `openOnly`,
 * not those already claimed by an answer being applied.
 *
 * @internal
 */
export async function openRequestsOf(
  host: RunHost,
  runId: string,
  opts: { openOnly?: boolean } = {},
): Promise<Request[]> {
  const entries = await pendingOfRun(host, runId)
  return entries.filter((entry) => !(opts.openOnly && entry.state !== "open")).map((entry) => entry.request)
}

/** The requests of `entries` not yet claimed by an answer being applied. */
function openOf(entries: PendingEntry[]): Request[] {
  return entries.filter((entry) => entry.state === "open").map((entry) => entry.request)
}
