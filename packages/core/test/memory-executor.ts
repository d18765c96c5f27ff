import type { DurableExecutor } from "../src/client/executor.js"
import type { Answer, Request } from "../src/types.js"

/** Thrown where a simulated worker dies: the step it was in is not journaled. */
export class WorkerCrash extends Error {
  constructor(where: string) {
    super(`worker died in ${where}`)
  }
}

/**
 * A journaling executor kept in memory, as an engine would keep it: a step's value is stored as
 * JSON once its function returns, and returned unrun by any later worker on the same journal.
 */
export class MemoryExecutor implements DurableExecutor {
  readonly id: string
  readonly maxStepBytes?: number
  /** Step name → the JSON of its value; shared by every worker of the run. */
  readonly journal: Map<string, string>
  /** The steps this worker executed (ran the function of), in order. */
  readonly executed: string[] = []
  /** The requests this worker waited on (not replayed). */
  readonly waited: Request[] = []
  readonly #answer: (request: Request) => Answer | Promise<Answer>
  readonly #crashAt: string | undefined

  constructor(opts: {
    id: string
    answer?: (request: Request) => Answer | Promise<Answer>
    /** The worker dies after running this step's function, before its value is journaled. */
    crashAt?: string
    maxStepBytes?: number
    journal?: Map<string, string>
  }) {
    this.id = opts.id
    if (opts.maxStepBytes !== undefined) this.maxStepBytes = opts.maxStepBytes
    this.journal = opts.journal ?? new Map()
    this.#answer =
      opts.answer ??
      ((request) => {
        throw new WorkerCrash(`the wait for ${request.id}`)
      })
    this.#crashAt = opts.crashAt
  }

  /** Another worker of the same run (after a crash or for a replay). */
  worker(
    opts: { answer?: (request: Request) => Answer | Promise<Answer>; crashAt?: string } = {},
  ): MemoryExecutor {
    return new MemoryExecutor({
      id: this.id,
      journal: this.journal,
      ...opts,
      maxStepBytes: this.maxStepBytes,
    })
  }

  async step<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const journaled = this.journal.get(name)
    if (journaled !== undefined) return JSON.parse(journaled) as T
    this.executed.push(name)
    const value = await fn()
    if (name === this.#crashAt) throw new WorkerCrash(name)
    const json = JSON.stringify(value)
    this.journal.set(name, json)
    return JSON.parse(json) as T
  }

  async wait(request: Request): Promise<Answer> {
    const name = `wait:${request.id}`
    const journaled = this.journal.get(name)
    if (journaled !== undefined) return JSON.parse(journaled) as Answer
    this.waited.push(request)
    const answer = await this.#answer(request)
    this.journal.set(name, JSON.stringify(answer))
    return answer
  }
}
