/**
 * @internal Runs an asynchronous setup once, on first use. A failed setup is not remembered,
 * so the next call tries again (a server that was down may be back).
 */
export class LazyInit<T> {
  readonly #setup: () => Promise<T>
  #pending: Promise<T> | undefined

  constructor(setup: () => Promise<T>) {
    this.#setup = setup
  }

  /** The setup's result, running it when it has not run or last failed. */
  get(): Promise<T> {
    if (this.#pending === undefined) {
      const attempt = this.#setup()
      this.#pending = attempt
      attempt.catch(() => {
        if (this.#pending === attempt) this.#pending = undefined
      })
    }
    return this.#pending
  }
}
