import { Worker } from "node:worker_threads"

// Plain CommonJS run by `eval`: no file beside the bundle to find, and the same under a bundler, a
// test runner on the sources, or dist. It only tests lines; reading and walking stay on the caller.
const MATCHER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads")
const expression = new RegExp(workerData)
parentPort.on("message", ({ text, max }) => {
  const lines = text.split("\\n")
  const hits = []
  for (let i = 0; i < lines.length && hits.length < max; i++) if (expression.test(lines[i])) hits.push(i)
  parentPort.postMessage(hits)
})
`

/** @internal Thrown by {@link LineMatcher.match} when one text took longer than the budget. */
export class PatternTooSlow extends Error {
  constructor(readonly budgetMs: number) {
    super(`pattern took too long (over ${budgetMs} ms on one file)`)
  }
}

/**
 * @internal A regular expression tested line by line in a worker thread, one worker per matcher,
 * started on the first text. A JavaScript pattern can backtrack for longer than the age of the
 * universe (`^(a+)+$`); on the main thread that would stall every run of the process. Here a text
 * whose lines take longer than `budgetMs` ends the worker and rejects with {@link PatternTooSlow}.
 */
export class LineMatcher {
  private worker: Worker | undefined
  private failed: Error | undefined

  constructor(
    private readonly pattern: string,
    private readonly budgetMs: number,
    private readonly signal?: AbortSignal,
  ) {}

  /** The 0-based indexes of the lines of `text` the pattern matches, at most `max` of them. */
  match(text: string, max: number): Promise<number[]> {
    if (this.failed) return Promise.reject(this.failed)
    if (this.signal?.aborted) return Promise.reject(new Error("aborted"))
    this.worker ??= new Worker(MATCHER_SOURCE, { eval: true, workerData: this.pattern })
    const worker = this.worker
    return new Promise<number[]>((resolve, reject) => {
      const settle = (error: Error | undefined, hits?: number[]) => {
        clearTimeout(timer)
        worker.off("message", onMessage)
        worker.off("error", onError)
        worker.off("exit", onExit)
        this.signal?.removeEventListener("abort", onAbort)
        if (!error) return resolve(hits as number[])
        this.failed = error
        void this.close()
        reject(error)
      }
      const onMessage = (hits: number[]) => settle(undefined, hits)
      const onError = (error: Error) => settle(error)
      const onExit = () => settle(new Error("the matcher stopped"))
      const onAbort = () => settle(new Error("aborted"))
      const timer = setTimeout(() => settle(new PatternTooSlow(this.budgetMs)), this.budgetMs)
      worker.on("message", onMessage)
      worker.on("error", onError)
      worker.on("exit", onExit)
      this.signal?.addEventListener("abort", onAbort, { once: true })
      worker.postMessage({ text, max })
    })
  }

  /** Ends the worker, stopping any match under way. */
  async close(): Promise<void> {
    const worker = this.worker
    this.worker = undefined
    await worker?.terminate()
  }
}
