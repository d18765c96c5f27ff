const encoder = new TextEncoder()

/** @internal Where a live run's frames go: a web stream's controller, or a Node `ServerResponse`. */
export interface FrameSink {
  /** Frames as text: `ServerResponse.write` encodes a string itself, cheaper than a `TextEncoder`. */
  write(frame: string): void
  /** The run ended: `last` (the frames not yet written and the tail, maybe empty) is the final write. */
  close(last: string): void
}

/**
 * @internal The SSE frames of one run as it streams, kept until it ends so that a reconnecting
 * client gets them from the start and then live. Any number of readers; the run never waits
 * for them (a slow or gone reader cannot stall or stop a run whose decision is applied).
 * Frames written in one tick leave as one write: they are sent once the tick's promise jobs
 * have run (`process.nextTick`), so a model turn's first chunks (start, step, part start,
 * delta) cost one write, and its last ones go out with the tail and the response's end.
 */
export class LiveRun<T> {
  // The frames already serialised, not the items: a reconnecting reader gets them as sent.
  readonly #frames: string[] = []
  // An array, not a `Set` a turn: a run has one reader, rarely more (a reconnecting tab).
  #readers: FrameSink[] = []
  readonly #tail: string
  readonly #frame: (item: T) => string
  #pending = ""
  #scheduled = false
  #ended = false

  /**
   * `tail` is written once after the last frame (e.g. `data: [DONE]\n\n`); `frame` makes an
   * item's whole SSE frame (`data: <its JSON>\n\n`, byte for byte as `JSON.stringify` would).
   */
  constructor(tail = "", frame: (item: T) => string = jsonFrame) {
    this.#tail = tail
    this.#frame = frame
  }

  push(item: T): void {
    if (this.#ended) return
    this.#pending += this.#frame(item)
    if (this.#scheduled) return
    this.#scheduled = true
    later(this)
  }

  end(): void {
    if (this.#ended) return
    this.#ended = true
    const last = this.#pending + this.#tail
    this.#pending = ""
    if (last !== "") this.#frames.push(last)
    const readers = this.#readers
    this.#readers = []
    for (const reader of readers) reader.close(last)
  }

  get ended(): boolean {
    return this.#ended
  }

  /**
   * Gives `sink` every frame from the first (in one write), then live until the run ends; the
   * returned function detaches it (a client gone: the run goes on).
   */
  attach(sink: FrameSink): () => void {
    this.flush()
    const frames = this.#frames
    const sent = frames.length === 1 ? (frames[0] as string) : frames.join("")
    if (this.#ended) {
      sink.close(sent)
      return () => {}
    }
    if (sent !== "") sink.write(sent)
    this.#readers.push(sink)
    return () => {
      // A new array, never spliced: a write loop over the old one is not disturbed.
      this.#readers = this.#readers.filter((reader) => reader !== sink)
    }
  }

  /** A byte stream of every frame from the first, then live until the run ends. */
  sse(): ReadableStream<Uint8Array> {
    let detach = () => {}
    return new ReadableStream<Uint8Array>({
      start: (controller) => {
        detach = this.attach({
          write: (frame) => controller.enqueue(encoder.encode(frame)),
          close: (last) => {
            if (last !== "") controller.enqueue(encoder.encode(last))
            controller.close()
          },
        })
      },
      cancel: () => detach(),
    })
  }

  /** Writes the frames pushed since the last write to every reader. */
  flush(): void {
    this.#scheduled = false
    const frame = this.#pending
    if (frame === "") return
    this.#pending = ""
    this.#frames.push(frame)
    for (const reader of this.#readers) reader.write(frame)
  }
}

/** A tick's flush: a function of the run, not a closure a tick. */
function flushRun(run: LiveRun<never>): void {
  run.flush()
}

/** Schedules a run's flush after this tick's promise jobs; a runtime without `nextTick` flushes as one. */
const later: (run: LiveRun<never>) => void =
  typeof process === "object" && typeof process?.nextTick === "function"
    ? (run) => process.nextTick(flushRun, run)
    : (run) => queueMicrotask(() => run.flush())

/** An item's SSE frame: its `JSON.stringify`. */
function jsonFrame(item: unknown): string {
  return `data: ${JSON.stringify(item)}\n\n`
}

/** @internal The headers of a server-sent event stream. */
export const SSE_HEADERS: Record<string, string> = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-accel-buffering": "no",
}
