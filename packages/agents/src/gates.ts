/**
 * @internal A counting semaphore. `run` releases its permit however the call ends, so a
 * holder that dies (throws, is aborted) never leaks one.
 */
export class Semaphore {
  #free: number
  readonly #waiting: (() => void)[] = []

  constructor(permits: number) {
    this.#free = permits
  }

  async run<T>(call: () => Promise<T>): Promise<T> {
    if (this.#free > 0) this.#free--
    else await new Promise<void>((resolve) => this.#waiting.push(resolve))
    try {
      return await call()
    } finally {
      const next = this.#waiting.shift()
      if (next) next()
      else this.#free++
    }
  }
}
