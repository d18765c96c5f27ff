import { type StreamResponse, TaskState } from "@a2a-js/sdk"
import {
  type Answer,
  EngineRunError,
  type HostStartOptions,
  HostUnsupportedError,
  type Logger,
  type Request,
  type RunHost,
  ToolnexusError,
  pendingOfRun,
} from "@toolnexus/core"
import { dataPart, textPart } from "../task-view.js"
import {
  type TaskRecord,
  type TaskStore,
  loadTask,
  promptText,
  resultArtifact,
  runOf,
  saveTask,
  setStatus,
} from "./task-record.js"

/** @internal What a task's run is given: the first message's text, or the answer to its request. */
export type TaskStart = { text: string } | { answer: Answer }

/** @internal A stream subscriber of one task's run. */
export type Listener = (event: StreamResponse) => void

/** @internal A task's run driven by this process. */
export interface Running {
  /** Aborted on CancelTask and `close()`: the drive stops waiting and writes nothing. */
  controller: AbortController
  listeners: Set<Listener>
  /** Settles once the task's record is written (or nothing is to be written). */
  done: Promise<void>
  /** Text streamed into the `result` artifact so far. */
  streamed: boolean
  /** Stops the park watch of a host whose runs park elsewhere, once the drive has its answer. */
  watch: AbortController
  /** Set when the host refused the answer (decided elsewhere, expired): the task is as it was. */
  refusal?: { code: string; error: unknown }
}

/** @internal What the runs are driven over. */
export interface TaskRunsOptions {
  /** The host (built on first use for serveA2A's shorthand). */
  host: () => Promise<RunHost>
  /** The host's agent a task starts. */
  agent: string
  tasks: TaskStore
  logger: Logger | undefined
}

/**
 * On a host whose runs stream elsewhere (an engine: `onEvent` refused, `result` only at the
 * end), how often its open requests are read to see the run park.
 */
const PARK_POLL_MS = 1_000

/** The end a run reached, from a client agent (`RunResult`) or a runtime agent (`TaskResult`) alike. */
interface Settled {
  status: string
  text: string
  pending?: Request | undefined
  limit?: string | undefined
}

/** Answers the host refuses as the caller's mistake or a lost race: the task stays as it was. */
const REFUSED = new Set(["TNX_ANSWER_CONFLICT", "TNX_ANSWER_EXPIRED", "TNX_UNKNOWN_REQUEST"])

/**
 * @internal The run orchestration of served tasks over a `RunHost`: a new task is
 * `host.start(agent, runId, text)`, an answer `host.deliverAnswer`, both then `host.result`;
 * what the run reached becomes the task's state, and its text streams as the `result` artifact.
 */
export class TaskRuns {
  readonly #o: TaskRunsOptions
  readonly #running = new Map<string, Running>()
  /** `host.cancel`s of runs in flight, not awaited by CancelTask. */
  readonly #cancels = new Set<Promise<void>>()

  constructor(opts: TaskRunsOptions) {
    this.#o = opts
  }

  /** The run this process drives for task `taskId`, if any. */
  get(taskId: string): Running | undefined {
    return this.#running.get(taskId)
  }

  /** Drives the task's run in the background; `listener` gets its stream events. */
  start(record: TaskRecord, start: TaskStart, listener?: Listener): Running {
    const running: Running = {
      controller: new AbortController(),
      watch: new AbortController(),
      listeners: new Set(listener ? [listener] : []),
      done: Promise.resolve(),
      streamed: false,
    }
    this.#running.set(record.id, running)
    running.done = this.#drive(record, start, running).finally(() => {
      if (this.#running.get(record.id) === running) this.#running.delete(record.id)
    })
    return running
  }

  /**
   * Cancels the task: recorded `canceled` first (so no drive writes a result over it), the
   * stream told, then `host.cancel` withdraws its open request and aborts its run.
   */
  async cancel(record: TaskRecord): Promise<void> {
    const running = this.#running.get(record.id)
    delete record.requestId
    setStatus(record, TaskState.TASK_STATE_CANCELED, undefined)
    await saveTask(this.#o.tasks, record)
    if (running) {
      running.controller.abort()
      this.#emitStatus(running, record)
    }
    const host = await this.#o.host()
    const cancelled = host.cancel(runOf(record), "the task was canceled").catch((error: unknown) => {
      // Never started (its host run was not begun before a crash): nothing to withdraw.
      if (!EngineRunError.isInstance(error)) throw error
    })
    if (!running) return cancelled
    // A run in flight stops when its code next looks at the signal: the caller does not wait
    // for that (`close()` does).
    this.#cancels.add(cancelled)
    cancelled
      .catch((error: unknown) =>
        this.#o.logger?.error(`serveA2A: canceling task ${record.id} failed`, {
          taskId: record.id,
          code: (error as { code?: unknown })?.code,
        }),
      )
      .finally(() => this.#cancels.delete(cancelled))
  }

  /** Stops every drive of this process and waits for them to settle; runs in the host go on. */
  async close(): Promise<void> {
    const runs = [...this.#running.values()]
    for (const run of runs) run.controller.abort()
    await Promise.allSettled([...runs.map((r) => r.done), ...this.#cancels])
  }

  async #drive(record: TaskRecord, start: TaskStart, running: Running): Promise<void> {
    const { agent, tasks, logger } = this.#o
    const signal = running.controller.signal
    const runId = runOf(record)
    setStatus(record, TaskState.TASK_STATE_WORKING, undefined)
    // A new task is ours alone; an answered one stays as stored until its run is saved.
    if ("text" in start) await saveTask(tasks, record)
    this.#emitStatus(running, record)
    const answered = "answer" in start ? start.answer.id : undefined
    // A run's `pending` event on another request than the one answered: it parked (an engine's
    // `result` waits for the run's end).
    let parkedEvent: (request: Request) => void = () => {}
    const parking = new Promise<Request>((resolve) => {
      parkedEvent = resolve
    })
    const onEvent = (event: NonNullable<Parameters<NonNullable<HostStartOptions["onEvent"]>>[0]>) => {
      const ev = event as { type: string; delta?: string; handle?: string; request?: Request }
      if (ev.type === "pending" && ev.request && ev.request.id !== answered) parkedEvent(ev.request)
      // A runtime tree's text is its top handle's (the task's agent), not its sub-agents'.
      if (ev.type !== "text" || !ev.delta || (ev.handle !== undefined && !TOP_HANDLE.test(ev.handle))) return
      this.#emit(running, {
        payload: {
          $case: "artifactUpdate",
          value: {
            taskId: record.id,
            contextId: record.contextId,
            artifact: resultArtifact(ev.delta),
            append: running.streamed,
            lastChunk: false,
            metadata: undefined,
          },
        },
      })
      running.streamed = true
    }
    let result: Settled | undefined
    let failure: string | undefined
    try {
      const host = await this.#o.host()
      // A host whose runs stream in its workers refuses `onEvent`: then the run is asked again
      // without it, and its parking is seen in the host's open requests.
      const here = await withEvents(onEvent, (opts) =>
        "text" in start ? host.start(agent, runId, start.text, opts) : host.deliverAnswer(start.answer, opts),
      )
      // The result's wait and the watch stop with the race (or the drive): neither outlives it.
      const stop = AbortSignal.any([signal, running.watch.signal])
      const ended = host.result(runId, { signal: stop }) as Promise<Settled>
      // A host that cannot list its requests leaves the task working until the run ends.
      const watch = () =>
        this.#parked(host, runId, answered, stop).catch(() => new Promise<never>(() => undefined))
      // With events the run says where it parked; the host lists the request once its live
      // tail ends (an engine's event log can lead its request index). Without, its open
      // requests are looked at until one is the run's.
      const listed = async (request: Request): Promise<Settled> => {
        for await (const _ of host.events(runId)) void _
        if (stop.aborted) return new Promise<never>(() => undefined)
        if ((await host.findRequest(request.id)) !== undefined)
          return { status: "pending", text: "", pending: request }
        return watch()
      }
      const settled = firstOf(ended, here ? parking.then(listed) : watch())
      try {
        result = await untilAborted(settled, signal)
      } finally {
        running.watch.abort()
      }
      if (!result || result.status === "interrupted" || result.status === "closed") return // stopped
    } catch (error) {
      if (signal.aborted) return // canceled (already recorded) or closing: no result is written
      const code = codeOf(error)
      if (REFUSED.has(code)) {
        // Decided by another delivery first, expired, or withdrawn: that one's run writes the task.
        running.refusal = { code, error }
        logger?.info(`serveA2A: the answer to task ${record.id} was refused (${code})`, {
          taskId: record.id,
          code,
        })
        return
      }
      failure = code
    }
    if (signal.aborted) return
    // Canceled meanwhile (here or by another process): the cancel stands, no result is written.
    if ((await loadTask(tasks, record.id))?.state === TaskState.TASK_STATE_CANCELED) return
    const why = settleTask(record, result, failure)
    // The code only: a failure's message may carry what must not leave (keys, the prompt).
    if (why !== undefined)
      logger?.error(`serveA2A: task ${record.id} failed (${why})`, { taskId: record.id, runId, code: why })
    await saveTask(tasks, record)
    if (record.state === TaskState.TASK_STATE_COMPLETED) {
      this.#emit(running, {
        payload: {
          $case: "artifactUpdate",
          value: {
            taskId: record.id,
            contextId: record.contextId,
            artifact: resultArtifact(running.streamed ? "" : (result?.text ?? "")),
            append: running.streamed,
            lastChunk: true,
            metadata: undefined,
          },
        },
      })
    }
    this.#emitStatus(running, record)
  }

  /**
   * A halted task whose request was decided elsewhere (another door, another process, a sweep)
   * and whose run has since settled on the host: the task moved to where the run is, saved.
   * Undefined while the run is still going (or the host cannot say without waiting).
   */
  async catchUp(record: TaskRecord): Promise<TaskRecord | undefined> {
    const host = await this.#o.host()
    let result: Settled | undefined
    let failure: string | undefined
    try {
      result = (await host.result(runOf(record), { timeoutMs: 0 })) as Settled
    } catch (error) {
      // Only a failed run says more than "not yet" (a cancel's record is its canceller's).
      if (!EngineRunError.isInstance(error) || error.cause === undefined) return undefined
      failure = codeOf(error)
    }
    // Still parked on the request we know: its resume has not saved yet.
    if (result?.pending?.id === record.requestId && result?.status === "pending") return undefined
    const settled: TaskRecord = structuredClone(record)
    const why = settleTask(settled, result, failure)
    if (why !== undefined)
      this.#o.logger?.error(`serveA2A: task ${record.id} failed (${why})`, {
        taskId: record.id,
        runId: runOf(record),
        code: why,
      })
    await saveTask(this.#o.tasks, settled)
    return settled
  }

  /**
   * Resolves when run `runId` waits on an open request other than `answered` (read every
   * `PARK_POLL_MS`); never once the signal aborted.
   */
  async #parked(
    host: RunHost,
    runId: string,
    answered: string | undefined,
    signal: AbortSignal,
  ): Promise<Settled> {
    for (;;) {
      if (signal.aborted) return new Promise<never>(() => undefined)
      const open = (await pendingOfRun(host, runId)).find((entry) => entry.request.id !== answered)
      if (open) return { status: "pending", text: "", pending: open.request }
      await new Promise<void>((resolve) => {
        const stop = () => {
          clearTimeout(timer)
          resolve()
        }
        const timer = setTimeout(() => {
          signal.removeEventListener("abort", stop)
          resolve()
        }, PARK_POLL_MS)
        signal.addEventListener("abort", stop, { once: true })
      })
      if (signal.aborted) return new Promise<never>(() => undefined)
    }
  }

  #emitStatus(running: Running, record: TaskRecord): void {
    this.#emit(running, {
      payload: {
        $case: "statusUpdate",
        value: {
          taskId: record.id,
          contextId: record.contextId,
          status: { state: record.state, message: record.statusMessage, timestamp: record.timestamp },
          metadata: undefined,
        },
      },
    })
  }

  #emit(running: Running, event: StreamResponse): void {
    for (const listener of running.listeners) listener(event)
  }
}

/**
 * Moves the task to where its run ended: `done` ⇒ completed with the `result` artifact; parked
 * ⇒ input-required / auth-required with the prompt and `{request}`; else failed, naming the
 * code or limit (returned, for the log).
 */
function settleTask(
  record: TaskRecord,
  result: Settled | undefined,
  failure: string | undefined,
): string | undefined {
  if (result?.status === "done") {
    delete record.requestId
    record.artifacts = [resultArtifact(result.text)]
    setStatus(record, TaskState.TASK_STATE_COMPLETED, undefined)
    return undefined
  }
  if (result?.status === "pending" && result.pending) {
    const request = result.pending
    record.requestId = request.id
    const state =
      request.kind === "authorization"
        ? TaskState.TASK_STATE_AUTH_REQUIRED
        : TaskState.TASK_STATE_INPUT_REQUIRED
    setStatus(record, state, [textPart(promptText(request)), dataPart({ request })])
    return undefined
  }
  delete record.requestId
  const why = failure ?? (result?.status === "incomplete" ? (result.limit ?? "incomplete") : "error")
  setStatus(record, TaskState.TASK_STATE_FAILED, [textPart(`the agent failed (${why})`)])
  return why
}

/** The task's agent in its runtime tree: a handle right under the root. */
const TOP_HANDLE = /^root\/[^/]+$/

/**
 * The TNX code of a failure: a failed host run's own code (an `EngineRunError`'s cause), else
 * the error's; `"error"` for anything else.
 */
function codeOf(error: unknown): string {
  if (EngineRunError.isInstance(error)) {
    const code = (error.cause as { code?: unknown } | undefined)?.code
    return typeof code === "string" ? code : "error"
  }
  return ToolnexusError.isInstance(error) ? error.code : "error"
}

/**
 * `call` with `onEvent`, true; or, when the host refuses events (its runs stream elsewhere),
 * `call` without them, false.
 */
async function withEvents(
  onEvent: NonNullable<HostStartOptions["onEvent"]>,
  call: (opts: HostStartOptions) => Promise<unknown>,
): Promise<boolean> {
  try {
    await call({ onEvent })
    return true
  } catch (error) {
    if (!HostUnsupportedError.isInstance(error)) throw error
  }
  await call({})
  return false
}

/** The first of two promises to settle; the loser's rejection is not left unhandled. */
function firstOf<T>(a: Promise<T>, b: Promise<T>): Promise<T> {
  a.catch(() => undefined)
  b.catch(() => undefined)
  return Promise.race([a, b])
}

/** `promise`'s value, or undefined as soon as `signal` aborts (the promise is left to settle). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) {
    promise.catch(() => undefined)
    return Promise.resolve(undefined)
  }
  return new Promise<T | undefined>((resolve, reject) => {
    const onAbort = () => resolve(undefined)
    signal.addEventListener("abort", onAbort, { once: true })
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort)
        resolve(value)
      },
      (error) => {
        signal.removeEventListener("abort", onAbort)
        if (signal.aborted) resolve(undefined)
        else reject(error)
      },
    )
  })
}
