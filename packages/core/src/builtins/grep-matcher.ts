import { once } from "node:events"
import { Worker } from "node:worker_threads"

// Plain CommonJS run by `eval`: no file beside the bundle to find, and the same under a bundler, a
// test runner on the sources, or dist. It only tests lines; reading and walking stay on the caller.
// A reply is the flat list of matching [text index, line index] pairs, in order, at most `max`.
const MATCHER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads")
const expression = new RegExp(workerData)
parentPort.on("message", ({ texts, max }) => {
  const hits = []
  for (let t = 0; t < texts.length && hits.length < 2 * max; t++) {
    const lines = texts[t].split("\\n")
    for (let i = 0; i < lines.length && hits.length < 2 * max; i++) if (expression.test(lines[i])) hits.push(t, i)
  }
  parentPort.postMessage(hits)
})
`

/** @internal Thrown by {@link LineMatcher.match} once matching has taken the whole budget. */
export class PatternTooSlow extends Error {
  constructor(readonly budgetMs: number) {
    super(`pattern took too long (over ${budgetMs} ms)`)
  }
}

/**
 * @internal A regular expression tested line by line in a worker thread, one worker per matcher,
 * started on the first texts. A JavaScript pattern can backtrack for longer than the age of the
 * universe (`^(a+)+$`); on the main thread that would stall every run of the process. Here, once
 * the matcher's texts have taken `budgetMs` in all, the worker is ended and the match rejects with
 * {@link PatternTooSlow}.
 */
export class LineMatcher {
  private worker: Worker | undefined
  private failed: Error | undefined
  private spentMs = 0

  constructor(
    private readonly pattern: string,
    private readonly budgetMs: number,
    private readonly signal?: AbortSignal,
  ) {}

  /** The matching lines of `texts`, as [text index, 0-based line index] pairs in order, at most `max`. */
  async match(texts: string[], max: number): Promise<[number, number][]> {
    if (this.failed) throw this.failed
    if (this.signal?.aborted) throw new Error("aborted")
    if (!this.worker) {
      this.worker = new Worker(MATCHER_SOURCE, { eval: true, workerData: this.pattern })
      // The budget is for matching: a busy machine's slow thread start does not count against it.
      await once(this.worker, "online")
    }
    return this.ask(this.worker, texts, max)
  }

  private ask(worker: Worker, texts: string[], max: number): Promise<[number, number][]> {
    const started = performance.now()
    return new Promise<[number, number][]>((resolve, reject) => {
      const settle = (error: Error | undefined, pairs: [number, number][] = []) => {
        clearTimeout(timer)
        this.spentMs += performance.now() - started
        worker.off("message", onMessage)
        worker.off("error", onError)
        worker.off("exit", onExit)
        this.signal?.removeEventListener("abort", onAbort)
        if (!error) return resolve(pairs)
        this.failed = error
        void this.close()
        reject(error)
      }
      const onMessage = (flat: number[]) => {
        const pairs: [number, number][] = []
        for (let at = 0; at + 1 < flat.length; at += 2)
          pairs.push([flat[at] as number, flat[at + 1] as number])
        settle(undefined, pairs)
      }
      const onError = (error: Error) => settle(error)
      const onExit = () => settle(new Error("the matcher stopped"))
      const onAbort = () => settle(new Error("aborted"))
      const left = Math.max(0, this.budgetMs - this.spentMs)
      const timer = setTimeout(() => settle(new PatternTooSlow(this.budgetMs)), left)
      worker.on("message", onMessage)
      worker.on("error", onError)
      worker.on("exit", onExit)
      this.signal?.addEventListener("abort", onAbort, { once: true })
      worker.postMessage({ texts, max })
    })
  }

  /** Ends the worker, stopping any match under way. */
  async close(): Promise<void> {
    const worker = this.worker
    this.worker = undefined
    await worker?.terminate()
  }
}
