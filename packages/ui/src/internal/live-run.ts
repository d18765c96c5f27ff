/**
 * @internal The frames of one run as it streams, kept until it ends so that a reconnecting
 * client gets them from the start and then live. Any number of readers; the run never waits
 * for them (a slow or gone reader cannot stall or stop a run whose decision is applied).
 */
export class LiveRun<T> {
  readonly #items: T[] = []
  #ended = false
  #wake: (() => void) | undefined
  #woken: Promise<void> | undefined

  push(item: T): void {
    this.#items.push(item)
    this.#notify()
  }

  end(): void {
    this.#ended = true
    this.#notify()
  }

  get ended(): boolean {
    return this.#ended
  }

  /**
   * A byte stream of every item from the first, as SSE `data:` frames, then `tail` (e.g.
   * `data: [DONE]`) once the run ended. Items that arrived together go out as one write.
   */
  sse(encode: (item: T) => string, tail = ""): ReadableStream<Uint8Array> {
    const encoder = new TextEncoder()
    let next = 0
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        while (next >= this.#items.length && !this.#ended) await this.#changed()
        let text = ""
        while (next < this.#items.length) text += `data: ${encode(this.#items[next++] as T)}\n\n`
        if (this.#ended && next >= this.#items.length) {
          text += tail
          if (text !== "") controller.enqueue(encoder.encode(text))
          controller.close()
          return
        }
        controller.enqueue(encoder.encode(text))
      },
    })
  }

  #changed(): Promise<void> {
    this.#woken ??= new Promise<void>((resolve) => {
      this.#wake = resolve
    })
    return this.#woken
  }

  #notify(): void {
    const wake = this.#wake
    this.#wake = undefined
    this.#woken = undefined
    wake?.()
  }
}

/** @internal The headers of a server-sent event stream. */
export const SSE_HEADERS: Record<string, string> = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-accel-buffering": "no",
}
