import { randomUUID } from "node:crypto"
import {
  type AgentCard,
  type CancelTaskRequest,
  type GetTaskRequest,
  type Message,
  type SendMessageRequest,
  type StreamResponse,
  type SubscribeToTaskRequest,
  type Task,
  TaskState,
} from "@a2a-js/sdk"
import {
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from "@a2a-js/sdk/errors"
import { type A2ARequestHandler, JsonRpcTransportHandler, type ServerCallContext } from "@a2a-js/sdk/server"
import { type Logger, type RunHost, answerExpired } from "@toolnexus/core"
import { isInterrupted, isTerminal, stateName } from "../task-view.js"
import { EventQueue } from "./event-queue.js"
import { answerOf, expired, notWaiting, ownerOf, readParts } from "./task-message.js"
import {
  TASK_RECORD_VERSION,
  type TaskRecord,
  type TaskStore,
  loadTask,
  runIdOf,
  saveTask,
  taskOf,
} from "./task-record.js"
import { type Running, type TaskStart, TaskRuns } from "./task-runs.js"

/** @internal What the service serves tasks with. */
export interface TaskServiceOptions {
  /** The host the tasks run on (built on first use for serveA2A's shorthand). */
  host: () => Promise<RunHost>
  /** The host's agent a task starts. */
  agent: string
  /** Where task records live. */
  tasks: TaskStore
  /** The served card (1.0 form): the SDK's transport handlers read its capabilities. */
  card: AgentCard
  /** Refusals at `info`, failed runs at `error`. */
  logger: Logger | undefined
}

/**
 * @internal The A2A request handler behind `serveA2A` (the JSON-RPC methods): tasks in the
 * task store, each one a run on the host; the next message on a halted task is its Answer,
 * delivered through `host.deliverAnswer`. Every error it throws is an A2A error with a message
 * of its own: nothing of a failure (message, stack, transcript) reaches the caller.
 */
export class TaskService implements A2ARequestHandler {
  readonly #o: TaskServiceOptions
  readonly #runs: TaskRuns
  #closed = false

  constructor(opts: TaskServiceOptions) {
    this.#o = opts
    this.#runs = new TaskRuns(opts)
  }

  /** Asked by the SDK's handlers (v0.3's streaming methods check `capabilities.streaming`). */
  async getAgentCard(): Promise<AgentCard> {
    return this.#o.card
  }

  /** Refused: there is no extended card. */
  getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw new UnsupportedOperationError({ message: "there is no extended agent card" })
  }

  /** A new task, or the answer to a halted one; waits for it to settle unless `returnImmediately`. */
  async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Message | Task> {
    const { record, start } = await this.#refusing(this.#accept(params, context))
    if (!start) return taskOf(record)
    const running = this.#runs.start(record, start)
    if (params.configuration?.returnImmediately) return taskOf(record)
    await running.done
    await this.#refused(record, running)
    return taskOf((await loadTask(this.#o.tasks, record.id)) ?? record)
  }

  /** As `sendMessage`, streamed: the task, then its events until it settles. */
  async *sendMessageStream(
    params: SendMessageRequest,
    context: ServerCallContext,
  ): AsyncGenerator<StreamResponse> {
    const { record, start } = await this.#refusing(this.#accept(params, context))
    if (!start) {
      yield { payload: { $case: "task", value: taskOf(record) } }
      return
    }
    const queue = new EventQueue()
    const running = this.#runs.start(record, start, (event) => queue.push(event))
    running.done.then(
      () => queue.end(),
      () => queue.end(),
    )
    yield { payload: { $case: "task", value: taskOf(record) } }
    yield* queue.drain()
    await this.#refused(record, running)
  }

  /** The task as it stands. */
  async getTask(params: GetTaskRequest, context: ServerCallContext): Promise<Task> {
    const record = await this.#refusing(this.#owned(params.id, context))
    return taskOf(await this.#shown(record), params.historyLength)
  }

  /**
   * Running ⇒ aborted, `canceled`, no result written; halted ⇒ `canceled`, its request
   * withdrawn (`host.cancel`); canceled ⇒ the task; other terminal ⇒ `-32002`.
   */
  async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    const record = await this.#refusing(this.#owned(params.id, context))
    if (record.state === TaskState.TASK_STATE_CANCELED) return taskOf(record)
    if (isTerminal(record.state))
      throw this.#refusal(
        new TaskNotCancelableError({ message: `task ${record.id} is ${stateName(record.state)}` }),
      )
    await this.#runs.cancel(record)
    return taskOf(record)
  }

  /** The task, then its later events until it settles (those of a run driven here). */
  async *resubscribe(
    params: SubscribeToTaskRequest,
    context: ServerCallContext,
  ): AsyncGenerator<StreamResponse> {
    const record = await this.#refusing(this.#owned(params.id, context))
    if (isTerminal(record.state))
      throw this.#refusal(
        new UnsupportedOperationError({ message: `task ${record.id} is ${stateName(record.state)}` }),
      )
    const running = this.#runs.get(record.id)
    yield { payload: { $case: "task", value: taskOf(record) } }
    if (!running) return
    const queue = new EventQueue()
    running.listeners.add((event) => queue.push(event))
    running.done.then(
      () => queue.end(),
      () => queue.end(),
    )
    yield* queue.drain()
  }

  /** Refused (`-32004`). */
  listTasks(): never {
    throw new UnsupportedOperationError({ message: "ListTasks is not supported" })
  }
  /** Refused (`-32003`). */
  createTaskPushNotificationConfig(): never {
    throw new PushNotificationNotSupportedError()
  }
  /** Refused (`-32003`). */
  getTaskPushNotificationConfig(): never {
    throw new PushNotificationNotSupportedError()
  }
  /** Refused (`-32003`). */
  listTaskPushNotificationConfigs(): never {
    throw new PushNotificationNotSupportedError()
  }
  /** Refused (`-32003`). */
  deleteTaskPushNotificationConfig(): never {
    throw new PushNotificationNotSupportedError()
  }

  /** Stops driving runs (their streams end) and waits for the drives to settle. */
  async close(): Promise<void> {
    this.#closed = true
    await this.#runs.close()
  }

  /**
   * The record as callers see it: a halted task whose answer is being applied is working; one
   * whose request was decided elsewhere (another door or process) and whose run settled since
   * is caught up with the host first.
   */
  async #shown(record: TaskRecord): Promise<TaskRecord> {
    if (!isInterrupted(record.state) || !record.requestId) return record
    const working = { ...record, state: TaskState.TASK_STATE_WORKING, statusMessage: undefined }
    if (this.#runs.get(record.id) !== undefined) return working
    if ((await (await this.#o.host()).findRequest(record.requestId))?.state === "open") return record
    return (await this.#runs.catchUp(record)) ?? working
  }

  /**
   * Validates a message and decides what it does: a new task, an answer to a halted one, or
   * (a repeated message id) nothing. Throws the protocol's error for anything else.
   */
  async #accept(
    params: SendMessageRequest,
    context: ServerCallContext,
  ): Promise<{ record: TaskRecord; start?: TaskStart }> {
    if (this.#closed) throw new UnsupportedOperationError({ message: "the server is closing" })
    const message = params.message
    if (!message) throw new RequestMalformedError({ message: "params.message is required" })
    const { text, said, data } = readParts(message)
    const owner = ownerOf(context)
    if (message.taskId) {
      const record = await this.#owned(message.taskId, context)
      if (message.contextId && message.contextId !== record.contextId)
        throw new RequestMalformedError({ message: `contextId does not match task ${record.id}` })
      if (record.seen.includes(message.messageId)) return { record: await this.#shown(record) }
      const here = this.#runs.get(record.id) !== undefined
      if (here || !isInterrupted(record.state) || !record.requestId) throw notWaiting(record, here)
      // Being resumed by another delivery (here or in another process): the host's claim says
      // so. Nothing is written here, so a losing delivery never overwrites the task.
      const entry = await (await this.#o.host()).findRequest(record.requestId)
      if (entry?.state !== "open") {
        // Decided elsewhere: named as it stands now (caught up with the host when it settled).
        const shown = await this.#shown(record)
        throw notWaiting(shown, shown.state === TaskState.TASK_STATE_WORKING)
      }
      const answer = answerOf(record.requestId, entry.request.kind, said, data)
      // Core's one expiry rule, asked before anything starts: a late approval changes nothing.
      if (answerExpired(entry.request, answer)) throw expired(record, entry.request.expiresAt)
      record.seen.push(message.messageId)
      record.history.push(message)
      return { record, start: { answer } }
    }
    const id = randomUUID()
    const record: TaskRecord = {
      v: TASK_RECORD_VERSION,
      id,
      runId: runIdOf(id),
      contextId: message.contextId || randomUUID(),
      state: TaskState.TASK_STATE_SUBMITTED,
      statusMessage: undefined,
      timestamp: new Date().toISOString(),
      history: [],
      artifacts: [],
      seen: [message.messageId],
    }
    record.history.push({ ...message, taskId: id, contextId: record.contextId })
    if (owner) record.owner = owner
    await saveTask(this.#o.tasks, record)
    return { record, start: { text } }
  }

  /**
   * After a drive settled: an answer the host refused is the caller's error, naming the task
   * as it stands (decided elsewhere: caught up with the host's run once that settled).
   */
  async #refused(record: TaskRecord, running: Running): Promise<void> {
    const refusal = running.refusal
    if (!refusal) return
    if (refusal.code === "TNX_ANSWER_EXPIRED") {
      const expiresAt = (refusal.error as { expiresAt?: unknown }).expiresAt
      throw expired(record, typeof expiresAt === "string" ? expiresAt : undefined)
    }
    const stored = (await loadTask(this.#o.tasks, record.id)) ?? record
    const shown = await this.#shown(stored)
    throw notWaiting(shown, shown.state === TaskState.TASK_STATE_WORKING)
  }

  /** `work`'s value; an A2A error it throws (a refusal of the caller's input) is logged at `info`. */
  async #refusing<T>(work: Promise<T>): Promise<T> {
    try {
      return await work
    } catch (error) {
      throw this.#refusal(error)
    }
  }

  /** Logs a refusal at `info` (its JSON-RPC code and message, never a stack) and returns it. */
  #refusal<E>(error: E): E {
    const { code, message } = JsonRpcTransportHandler.mapToJSONRPCError(error)
    // An internal error is no refusal: the fetch handler answers it without detail.
    if (code !== -32603)
      try {
        this.#o.logger?.info(`serveA2A refused (${code}): ${message}`, { code })
      } catch {
        // A broken logger changes no reply.
      }
    return error
  }

  async #owned(id: string, context: ServerCallContext): Promise<TaskRecord> {
    const record = await loadTask(this.#o.tasks, id)
    const owner = ownerOf(context)
    // Another token's task is reported as unknown: its existence is not the caller's business.
    if (!record || (record.owner ?? undefined) !== owner)
      throw new TaskNotFoundError({ message: `task ${id} not found` })
    return record
  }
}
