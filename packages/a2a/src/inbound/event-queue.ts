import type { StreamResponse } from "@a2a-js/sdk"

/** @internal A queue of stream events one consumer drains; `end()` finishes it after what is queued. */
export class EventQueue {
  readonly #items: StreamResponse[] = []
  #ended = false
  #wake: (() => void) | undefined

  /** Queues `event` and wakes the consumer. */
  push(event: StreamResponse): void {
    this.#items.push(event)
    this.#wake?.()
  }

  /** No more events: the drain ends once what is queued is taken. */
  end(): void {
    this.#ended = true
    this.#wake?.()
  }

  /** The events in order, until `end()`. */
  async *drain(): AsyncGenerator<StreamResponse> {
    for (;;) {
      const next = this.#items.shift()
      if (next) {
        yield next
        continue
      }
      if (this.#ended) return
      await new Promise<void>((resolve) => {
        this.#wake = resolve
      })
      this.#wake = undefined
    }
  }
}
