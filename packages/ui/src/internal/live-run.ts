const encoder = new TextEncoder()

/** @internal Where a live run's frames go: a web stream's controller, or a Node `ServerResponse`. */
export interface FrameSink {
  /** Frames as text: `ServerResponse.write` encodes a string itself, cheaper than a `TextEncoder`. */
  write(frame: string): void
  /** The run ended: no frame follows. */
  close(): void
}

/**
 * @internal The SSE frames of one run as it streams, kept until it ends so that a reconnecting
 * client gets them from the start and then live. Any number of readers; the run never waits
 * for them (a slow or gone reader cannot stall or stop a run whose decision is applied).
 * Frames written in one tick leave as one write: a model turn's first chunks (start, step,
 * part start, delta) cost one enqueue, not four.
 */
export class LiveRun<T> {
  // The frames already serialised, not the items: a reconnecting reader gets them as sent.
  readonly #frames: string[] = []
  readonly #readers = new Set<FrameSink>()
  readonly #tail: string
  readonly #json: (item: T) => string
  #pending = ""
  #scheduled = false
  #ended = false

  /**
   * `tail` is written once after the last frame (e.g. `data: [DONE]\n\n`); `json` serialises
   * an item, byte for byte as `JSON.stringify` would.
   */
  constructor(tail = "", json: (item: T) => string = JSON.stringify) {
    this.#tail = tail
    this.#json = json
  }

  push(item: T): void {
    if (this.#ended) return
    this.#pending += `data: ${this.#json(item)}\n\n`
    if (this.#scheduled) return
    this.#scheduled = true
    queueMicrotask(() => this.#flush())
  }

  end(): void {
    if (this.#ended) return
    this.#pending += this.#tail
    this.#flush()
    this.#ended = true
    for (const reader of this.#readers) reader.close()
    this.#readers.clear()
  }

  get ended(): boolean {
    return this.#ended
  }

  /**
   * Gives `sink` every frame from the first, then live until the run ends; the returned
   * function detaches it (a client gone: the run goes on).
   */
  attach(sink: FrameSink): () => void {
    for (const frame of this.#frames) sink.write(frame)
    if (this.#ended) {
      sink.close()
      return () => {}
    }
    this.#readers.add(sink)
    return () => {
      this.#readers.delete(sink)
    }
  }

  /** A byte stream of every frame from the first, then live until the run ends. */
  sse(): ReadableStream<Uint8Array> {
    let detach = () => {}
    return new ReadableStream<Uint8Array>({
      start: (controller) => {
        detach = this.attach({
          write: (frame) => controller.enqueue(encoder.encode(frame)),
          close: () => controller.close(),
        })
      },
      cancel: () => detach(),
    })
  }

  #flush(): void {
    this.#scheduled = false
    const frame = this.#pending
    if (frame === "") return
    this.#pending = ""
    this.#frames.push(frame)
    for (const reader of this.#readers) reader.write(frame)
  }
}

/** @internal The headers of a server-sent event stream. */
export const SSE_HEADERS: Record<string, string> = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-accel-buffering": "no",
}
