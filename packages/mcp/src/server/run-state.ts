import { type Request, type RunHost, pendingOfRun } from "@toolnexus/core"

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
  const stop = new AbortController()
  const abort = () => stop.abort()
  signal?.addEventListener("abort", abort, { once: true })
  try {
    for (;;) {
      const look = new AbortController()
      const lookAbort = () => look.abort()
      stop.signal.addEventListener("abort", lookAbort, { once: true })
      let first: { result: unknown } | { requests: Request[] }
      try {
        const settled = host.result(runId).then((result) => ({ result }))
        const parked = watchPending(host, runId, look.signal).then((requests) => ({ requests }))
        first = await Promise.race([settled, parked])
      } finally {
        look.abort()
        stop.signal.removeEventListener("abort", lookAbort)
      }
      if ("requests" in first) return { kind: "waiting", requests: first.requests }
      const result = first.result as {
        status: string
        text: string
        isError?: boolean
        pending?: Request
        toolCalls?: { isError?: boolean }[]
      }
      if (result.status === "pending") {
        const open = await openRequestsOf(host, runId, { openOnly: true })
        if (open.length > 0) return { kind: "waiting", requests: open }
        // Its requests are claimed: an answer is resuming the run, whose kept result is still
        // the parked one until the resumed run settles. Look again.
        if ((await openRequestsOf(host, runId)).length > 0 && !stop.signal.aborted) {
          await delay(FIRST_LOOK_MS, stop.signal)
          continue
        }
        if (result.pending) return { kind: "waiting", requests: [result.pending] }
      }
      return {
        kind: "ended",
        text: result.text,
        // A plain tool's run is its one call: the call's error (a throw, a decline) is the result's.
        isError:
          result.isError === true ||
          (opts.plain === true && result.toolCalls?.[result.toolCalls.length - 1]?.isError === true),
        status: result.status,
      }
    }
  } finally {
    stop.abort()
    signal?.removeEventListener("abort", abort)
  }
}

/** Resolves with the run's open (unclaimed) requests once it has some; never resolves when aborted first. */
async function watchPending(host: RunHost, runId: string, signal: AbortSignal): Promise<Request[]> {
  let wait = FIRST_LOOK_MS
  for (;;) {
    await delay(wait, signal)
    if (signal.aborted) return new Promise<never>(() => {})
    // Claimed requests are being answered: the run is not waiting on them.
    const open = await openRequestsOf(host, runId, { openOnly: true })
    if (signal.aborted) return new Promise<never>(() => {})
    if (open.length > 0) return open
    wait = Math.min(wait * 2, LOOK_CAP_MS)
  }
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

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal.removeEventListener("abort", done)
      resolve()
    }
    signal.addEventListener("abort", done, { once: true })
  })
}
