import { ConfigError, type HandleState, type RuntimeEvent, type StreamListener } from "@toolnexus/core"

export type { RuntimeEvent }

/** Options of `Runtime.events()`. */
export interface RuntimeEventsOptions {
  /**
   * Events buffered for this consumer; default 1024. Beyond it new events are dropped (the
   * runtime never waits for a consumer) and one `dropped` event with their count comes next.
   */
  bufferSize?: number
  /** Ends the iteration. */
  signal?: AbortSignal
}

const DEFAULT_BUFFER = 1024

/**
 * @internal Fans the runtime's events out to `RuntimeOptions.onEvent` and to every
 * `events()` consumer. `active` is false while nobody listens, so handles then run without
 * event plumbing (and without streaming requests).
 */
export class EventHub {
  readonly #listener: ((ev: RuntimeEvent) => void) | undefined
  readonly #subscriptions = new Set<Subscription>()
  readonly #rootId: string
  #ended = false

  constructor(listener: ((ev: RuntimeEvent) => void) | undefined, rootId: string) {
    this.#listener = listener
    this.#rootId = rootId
  }

  get active(): boolean {
    return this.#listener !== undefined || this.#subscriptions.size > 0
  }

  publish(ev: RuntimeEvent): void {
    if (this.#listener) {
      try {
        this.#listener(ev)
      } catch {
        // An observer's bug must not break the runtime.
      }
    }
    for (const s of this.#subscriptions) s.push(ev)
  }

  /** A listener tagging a handle's run events with its id, or undefined while nobody listens. */
  forHandle(handle: string): StreamListener | undefined {
    if (!this.active) return undefined
    return (ev) => this.publish({ ...ev, handle })
  }

  state(handle: string, from: HandleState, to: HandleState): void {
    if (this.active) this.publish({ type: "state", from, to, handle })
  }

  subscribe(opts: RuntimeEventsOptions = {}): AsyncIterableIterator<RuntimeEvent> {
    const size = opts.bufferSize ?? DEFAULT_BUFFER
    if (!Number.isInteger(size) || size < 1)
      throw new ConfigError(`events: bufferSize must be a positive integer, got ${opts.bufferSize}`)
    const s = new Subscription(size, this.#rootId, () => this.#subscriptions.delete(s))
    this.#subscriptions.add(s)
    if (this.#ended || opts.signal?.aborted) s.end()
    else opts.signal?.addEventListener("abort", () => s.end(), { once: true })
    return s
  }

  /** Ends every consumer's iteration once it has read what is buffered, and later ones at once. */
  end(): void {
    this.#ended = true
    for (const s of this.#subscriptions) s.end()
  }
}

/** One consumer's bounded queue. */
class Subscription implements AsyncIterableIterator<RuntimeEvent> {
  readonly #queue: RuntimeEvent[] = []
  readonly #size: number
  readonly #rootId: string
  readonly #detach: () => void
  #dropped = 0
  #ended = false
  /** Pending `next()` calls waiting for an event (more than one only if a caller does not await). */
  readonly #waiting: (() => void)[] = []

  constructor(size: number, rootId: string, detach: () => void) {
    this.#size = size
    this.#rootId = rootId
    this.#detach = detach
  }

  push(ev: RuntimeEvent): void {
    if (this.#ended) return
    if (this.#queue.length >= this.#size) {
      this.#dropped++
      return
    }
    // The notice takes the place of the lost events, so order stays readable.
    if (this.#dropped > 0) this.#queue.push(this.#notice())
    this.#queue.push(ev)
    this.#wake()
  }

  end(): void {
    this.#ended = true
    this.#detach()
    this.#wake()
  }

  #wake(): void {
    for (const resolve of this.#waiting.splice(0)) resolve()
  }

  #notice(): RuntimeEvent {
    const notice: RuntimeEvent = { type: "dropped", count: this.#dropped, handle: this.#rootId }
    this.#dropped = 0
    return notice
  }

  async next(): Promise<IteratorResult<RuntimeEvent>> {
    for (;;) {
      const ev = this.#queue.shift()
      if (ev) return { value: ev, done: false }
      if (this.#dropped > 0) return { value: this.#notice(), done: false }
      if (this.#ended) return { value: undefined, done: true }
      await new Promise<void>((resolve) => {
        this.#waiting.push(resolve)
      })
    }
  }

  async return(): Promise<IteratorResult<RuntimeEvent>> {
    this.#queue.length = 0
    this.#dropped = 0
    this.end()
    return { value: undefined, done: true }
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<RuntimeEvent> {
    return this
  }
}
