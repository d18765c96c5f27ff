const encoder = new TextEncoder()

/**
 * @internal The SSE frames of one run as it streams, kept until it ends so that a reconnecting
 * client gets them from the start and then live. Any number of readers; the run never waits
 * for them (a slow or gone reader cannot stall or stop a run whose decision is applied).
 * Frames written in one tick leave as one write: a model turn's first chunks (start, step,
 * part start, delta) cost one enqueue, not four.
 */
export class LiveRun<T> {
  readonly #frames: Uint8Array[] = []
  readonly #readers = new Set<ReadableStreamDefaultController<Uint8Array>>()
  readonly #tail: string
  #pending = ""
  #scheduled = false
  #ended = false

  /** `tail` is written once after the last frame (e.g. `data: [DONE]\n\n`). */
  constructor(tail = "") {
    this.#tail = tail
  }

  push(item: T): void {
    if (this.#ended) return
    this.#pending += `data: ${JSON.stringify(item)}\n\n`
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

  /** A byte stream of every frame from the first, then live until the run ends. */
  sse(): ReadableStream<Uint8Array> {
    let self: ReadableStreamDefaultController<Uint8Array> | undefined
    return new ReadableStream<Uint8Array>({
      start: (controller) => {
        for (const frame of this.#frames) controller.enqueue(frame)
        if (this.#ended) controller.close()
        else {
          self = controller
          this.#readers.add(controller)
        }
      },
      cancel: () => {
        if (self) this.#readers.delete(self)
      },
    })
  }

  #flush(): void {
    this.#scheduled = false
    if (this.#pending === "") return
    const frame = encoder.encode(this.#pending)
    this.#pending = ""
    this.#frames.push(frame)
    for (const reader of this.#readers) reader.enqueue(frame)
  }
}

/** @internal The headers of a server-sent event stream. */
export const SSE_HEADERS: Record<string, string> = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-accel-buffering": "no",
}
