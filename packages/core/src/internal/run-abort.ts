// A run's abort without an `AbortSignal` made up front. On Node 20 an `AbortController` costs
// ~29 k instructions (its signal is built as an `EventTarget` whose prototype is then swapped,
// so every site touching it misses its inline cache), and a store host stops every execution
// through one: on a chat turn that was ~58 k instructions of the turn's ~900 k. This source
// has what the loop and undici read of a signal (`aborted`, `reason`, abort listeners) and
// makes a real `AbortController`, kept in sync, only when something needs a real `AbortSignal`
// (a tool's `ctx.signal`, a user's `fetch` seam, `AbortSignal.any`).

/** The option key {@link withRunAbort} sets (a registered symbol: one across copies of core). */
const RUN_ABORT = Symbol.for("toolnexus.runAbort")

/**
 * A run's abort source for hosts that stop runs (`cancel`, `close`) and usually never do: it
 * makes no `AbortSignal` until one is read from {@link RunAbort.signal}. Give it to a client
 * run with {@link withRunAbort}; the run then obeys it as it obeys `signal`.
 */
export class RunAbort {
  /** Whether {@link RunAbort.abort} was called. */
  aborted = false
  /** What {@link RunAbort.abort} was given (as `AbortSignal.reason`); undefined before. */
  reason: unknown = undefined
  #listeners: (() => void)[] | undefined = undefined
  #controller: AbortController | undefined = undefined

  /**
   * A real `AbortSignal` that aborts with this source, with the same reason: made on first
   * read (already aborted when the source is), the same one after.
   */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController()
      if (this.aborted) this.#controller.abort(this.reason)
    }
    return this.#controller.signal
  }

  /**
   * Aborts: `aborted` becomes true, `reason` is `reason` (an `AbortError` `DOMException`
   * when undefined, as `AbortController.abort`), the real signal (if made) aborts, and each
   * listener is called once. A second call does nothing.
   */
  abort(reason?: unknown): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = reason === undefined ? new DOMException("This operation was aborted", "AbortError") : reason
    this.#controller?.abort(this.reason)
    const listeners = this.#listeners
    if (listeners === undefined) return
    this.#listeners = undefined
    for (const listener of listeners) {
      try {
        listener()
      } catch (error) {
        // As an `EventTarget` does: the others still run, the error is reported, not thrown here.
        queueMicrotask(() => {
          throw error
        })
      }
    }
  }

  /**
   * Calls `listener` once when the source aborts (as an `AbortSignal`'s `"abort"` listener
   * with `{ once: true }`; added again, it is still called once). Nothing when already aborted.
   */
  addEventListener(type: "abort", listener: () => void, _options?: { once?: boolean }): void {
    if (type !== "abort" || this.aborted) return
    const listeners = this.#listeners
    if (listeners === undefined) this.#listeners = [listener]
    else if (!listeners.includes(listener)) listeners.push(listener)
  }

  /** Removes a listener {@link RunAbort.addEventListener} added. */
  removeEventListener(type: "abort", listener: () => void): void {
    const listeners = this.#listeners
    if (type !== "abort" || listeners === undefined) return
    const at = listeners.lastIndexOf(listener)
    if (at >= 0) listeners.splice(at, 1)
  }
}

/**
 * Gives `opts` (a client's `ask` options) `abort` as the run's abort, instead of `signal`:
 * the run is stopped by `abort.abort(reason)` exactly as by an aborted `signal`, and no
 * `AbortSignal` is made unless a tool, a `fetch` seam or a `generate` reads one.
 *
 * @param opts - The options object to mark (a symbol-keyed property is added).
 * @param abort - The run's abort source.
 * @returns `opts`.
 */
export function withRunAbort<T extends object>(opts: T, abort: RunAbort): T {
  ;(opts as { [RUN_ABORT]?: RunAbort })[RUN_ABORT] = abort
  return opts
}

/** @internal What the loop reads of a run's abort: a caller's `AbortSignal` or a host's {@link RunAbort}. */
export type RunSignal = AbortSignal | RunAbort

/**
 * @internal The run's abort given to `opts`: the {@link RunAbort} of {@link withRunAbort}, else
 * `signal`. A source of another copy of core is read through its real signal.
 */
export function runSignalOf(opts: { signal?: AbortSignal | undefined }): RunSignal | undefined {
  const given = (opts as { [RUN_ABORT]?: RunAbort })[RUN_ABORT]
  if (given === undefined) return opts.signal
  return given instanceof RunAbort ? given : (given as { signal: AbortSignal }).signal
}

/** @internal A real `AbortSignal` for `signal` (a {@link RunAbort}'s, made now if it was not). */
export function realSignal(signal: RunSignal | undefined): AbortSignal | undefined {
  return signal instanceof RunAbort ? signal.signal : signal
}
