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
  ContentTypeNotSupportedError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from "@a2a-js/sdk/errors"
import type { A2ARequestHandler, ServerCallContext } from "@a2a-js/sdk/server"
import {
  type Answer,
  AnswerConflictError,
  type Client,
  type Request,
  type RunResult,
  ToolnexusError,
  type Toolkit,
} from "@toolnexus/core"
import type { RuntimeOptions } from "@toolnexus/agents"
import type { DurableStore } from "@toolnexus/durable"
import { dataPart, isInterrupted, isTerminal, stateName, textPart } from "../task-view.js"
import {
  type TaskRecord,
  agentMessage,
  conversationOf,
  readTaskRecord,
  TASK_RECORD_VERSION,
  taskKey,
  taskOf,
} from "./task-record.js"

/** @internal What the service runs tasks with. */
export interface TaskServiceOptions {
  client: Client | undefined
  toolkit: Toolkit | undefined
  /** A tree per task instead: def `agent` spawned in a runtime of namespace `a2a/<taskId>`. */
  runtime: Omit<RuntimeOptions, "store" | "namespace"> | undefined
  agent: string | undefined
  store: DurableStore
  /** The served card (1.0 form): the SDK's transport handlers read its capabilities. */
  card: AgentCard
}

/** What a task's run ended with, from a conversation or a runtime alike. */
interface Settled {
  status: string
  text: string
  pending?: Request | undefined
  limit?: string | undefined
}

type Listener = (event: StreamResponse) => void

/** A run in flight in this process. */
interface Running {
  controller: AbortController
  listeners: Set<Listener>
  done: Promise<void>
  /** Text streamed into the `result` artifact so far. */
  streamed: boolean
}

/**
 * @internal The A2A request handler behind `serveA2A`: a conversation per task, tasks in the
 * store, the next message on a halted task delivered as its Answer through `deliverAnswer`.
 * Every error it throws is an A2A error with a message of its own: nothing of a failure
 * (message, stack, transcript) reaches the caller.
 */
export class TaskService implements A2ARequestHandler {
  readonly #o: TaskServiceOptions
  readonly #running = new Map<string, Running>()
  #closed = false

  constructor(opts: TaskServiceOptions) {
    this.#o = opts
  }

  /** Asked by the SDK's handlers (v0.3's streaming methods check `capabilities.streaming`). */
  async getAgentCard(): Promise<AgentCard> {
    return this.#o.card
  }

  getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw new UnsupportedOperationError({ message: "there is no extended agent card" })
  }

  async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Message | Task> {
    const { record, start } = await this.#accept(params, context)
    if (!start) return taskOf(record)
    const running = this.#start(record, start)
    if (params.configuration?.returnImmediately) return taskOf(record)
    await running.done
    return taskOf((await this.#load(record.id)) ?? record)
  }

  async *sendMessageStream(
    params: SendMessageRequest,
    context: ServerCallContext,
  ): AsyncGenerator<StreamResponse> {
    const { record, start } = await this.#accept(params, context)
    if (!start) {
      yield { payload: { $case: "task", value: taskOf(record) } }
      return
    }
    const queue = new EventQueue()
    const running = this.#start(record, start, (event) => queue.push(event))
    running.done.then(
      () => queue.end(),
      () => queue.end(),
    )
    yield { payload: { $case: "task", value: taskOf(record) } }
    yield* queue.drain()
  }

  async getTask(params: GetTaskRequest, context: ServerCallContext): Promise<Task> {
    const record = await this.#owned(params.id, context)
    return taskOf(await this.#shown(record), params.historyLength)
  }

  /** The record as callers see it: a halted task whose answer is being applied is working. */
  async #shown(record: TaskRecord): Promise<TaskRecord> {
    if (!isInterrupted(record.state) || !record.requestId) return record
    const resuming =
      this.#running.has(record.id) || (await this.#o.store.findRequest(record.requestId))?.state !== "open"
    if (!resuming) return record
    return { ...record, state: TaskState.TASK_STATE_WORKING, statusMessage: undefined }
  }

  async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    const record = await this.#owned(params.id, context)
    if (record.state === TaskState.TASK_STATE_CANCELED) return taskOf(record)
    if (isTerminal(record.state))
      throw new TaskNotCancelableError({ message: `task ${record.id} is ${stateName(record.state)}` })
    const running = this.#running.get(record.id)
    if (isInterrupted(record.state)) {
      // Withdraw the parked request: it leaves every inbox, and no answer can run it later.
      const store = this.#o.store
      // A tree holds the request at every parked level: clear each holder, deepest first.
      for (let level = 0; level < 64 && record.requestId; level++) {
        const held = await store.findRequest(record.requestId)
        if (!held) break
        const id = held.conversationId
        await store.save(id, (await store.get(id)) ?? [], { pending: null })
        if (held.runtimeKey) await store.deleteSnapshot(held.runtimeKey)
      }
    } else if (!running) {
      throw new TaskNotCancelableError({ message: `task ${record.id} is running in another process` })
    }
    delete record.requestId
    this.#setStatus(record, TaskState.TASK_STATE_CANCELED, undefined)
    await this.#save(record)
    if (running) {
      running.controller.abort()
      this.#emitStatus(running, record)
    }
    return taskOf(record)
  }

  async *resubscribe(
    params: SubscribeToTaskRequest,
    context: ServerCallContext,
  ): AsyncGenerator<StreamResponse> {
    const record = await this.#owned(params.id, context)
    if (isTerminal(record.state))
      throw new UnsupportedOperationError({ message: `task ${record.id} is ${stateName(record.state)}` })
    const running = this.#running.get(record.id)
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

  listTasks(): never {
    throw new UnsupportedOperationError({ message: "ListTasks is not supported" })
  }
  createTaskPushNotificationConfig(): never {
    throw new PushNotificationNotSupportedError()
  }
  getTaskPushNotificationConfig(): never {
    throw new PushNotificationNotSupportedError()
  }
  listTaskPushNotificationConfigs(): never {
    throw new PushNotificationNotSupportedError()
  }
  deleteTaskPushNotificationConfig(): never {
    throw new PushNotificationNotSupportedError()
  }

  /** Aborts every run in flight and waits for them to settle. */
  async close(): Promise<void> {
    this.#closed = true
    const runs = [...this.#running.values()]
    for (const run of runs) run.controller.abort()
    await Promise.allSettled(runs.map((r) => r.done))
  }

  /**
   * Validates a message and decides what it does: a new task, an answer to a halted one, or
   * (a repeated message id) nothing. Throws the protocol's error for anything else.
   */
  async #accept(
    params: SendMessageRequest,
    context: ServerCallContext,
  ): Promise<{ record: TaskRecord; start?: { text: string } | { answer: Answer } }> {
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
      if (this.#running.has(record.id) || !isInterrupted(record.state) || !record.requestId)
        throw notWaiting(record, this.#running.has(record.id))
      // Being resumed by another delivery (here or in another process): the store's claim
      // says so. Nothing is written here, so a losing delivery never overwrites the task.
      const entry = await this.#o.store.findRequest(record.requestId)
      if (entry?.state !== "open") throw notWaiting(record, true)
      const answer = answerOf(record.requestId, entry.request.kind, said, data)
      record.seen.push(message.messageId)
      record.history.push(message)
      return { record, start: { answer } }
    }
    const id = randomUUID()
    const record: TaskRecord = {
      v: TASK_RECORD_VERSION,
      id,
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
    await this.#save(record)
    return { record, start: { text } }
  }

  #start(record: TaskRecord, start: { text: string } | { answer: Answer }, listener?: Listener): Running {
    const running: Running = {
      controller: new AbortController(),
      listeners: new Set(listener ? [listener] : []),
      done: Promise.resolve(),
      streamed: false,
    }
    this.#running.set(record.id, running)
    running.done = this.#run(record, start, running).finally(() => {
      if (this.#running.get(record.id) === running) this.#running.delete(record.id)
    })
    return running
  }

  async #run(
    record: TaskRecord,
    start: { text: string } | { answer: Answer },
    running: Running,
  ): Promise<void> {
    const { client, toolkit, store, runtime, agent } = this.#o
    const signal = running.controller.signal
    this.#setStatus(record, TaskState.TASK_STATE_WORKING, undefined)
    // A new task is ours alone; an answered one stays as stored until its run is saved.
    if ("text" in start) await this.#save(record)
    this.#emitStatus(running, record)
    const onText = (delta: string) => {
      if (!delta) return
      this.#emit(running, {
        payload: {
          $case: "artifactUpdate",
          value: {
            taskId: record.id,
            contextId: record.contextId,
            artifact: resultArtifact(delta),
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
      if (runtime && agent) {
        result = await this.#runTree(record, start, runtime, agent, signal, onText)
      } else if ("text" in start) {
        result = await (client as Client).ask(start.text, {
          id: conversationOf(record.id),
          toolkit,
          signal,
          onText,
        })
      } else {
        // Loaded on first use: a2aTool's users need no durable package.
        const { deliverAnswer } = await import("@toolnexus/durable")
        const delivered = await deliverAnswer(store, start.answer, {
          client,
          toolkit,
          signal,
          onEvent: (event) => {
            if (event.type === "text") onText(event.delta)
          },
        })
        result = delivered.result as RunResult
      }
      if (result.status === "interrupted" || result.status === "closed") return // aborted: nothing to write
    } catch (error) {
      if (signal.aborted) return // canceled (already recorded) or closing: no result is written
      if (AnswerConflictError.isInstance(error)) {
        // Another process applied this answer first; its run writes the task.
        return
      }
      failure = ToolnexusError.isInstance(error) ? error.code : "error"
    }
    if (signal.aborted) return
    // Canceled meanwhile (here or by another process): the cancel stands, no result is written.
    if ((await this.#load(record.id))?.state === TaskState.TASK_STATE_CANCELED) return
    if (result?.status === "done") {
      delete record.requestId
      record.artifacts = [{ ...resultArtifact(result.text) }]
      this.#setStatus(record, TaskState.TASK_STATE_COMPLETED, undefined)
    } else if (result?.status === "pending" && result.pending) {
      const request = result.pending
      record.requestId = request.id
      const state =
        request.kind === "authorization"
          ? TaskState.TASK_STATE_AUTH_REQUIRED
          : TaskState.TASK_STATE_INPUT_REQUIRED
      this.#setStatus(record, state, [textPart(promptText(request)), dataPart({ request })])
    } else {
      delete record.requestId
      const why = failure ?? (result?.status === "incomplete" ? (result.limit ?? "incomplete") : "error")
      this.#setStatus(record, TaskState.TASK_STATE_FAILED, [textPart(`the agent failed (${why})`)])
    }
    await this.#save(record)
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
   * A tree per task: the def spawned, woken and waited on; saved as `a2a/<taskId>` when it
   * parks. The agent handle's text streams (its sub-agents' does not: it is not the result).
   */
  async #runTree(
    record: TaskRecord,
    start: { text: string } | { answer: Answer },
    runtime: Omit<RuntimeOptions, "store" | "namespace">,
    agent: string,
    signal: AbortSignal,
    onText: (delta: string) => void,
  ): Promise<Settled> {
    const { store } = this.#o
    const key = conversationOf(record.id)
    const durable = await import("@toolnexus/durable")
    const onEvent = (ev: { type: string; handle?: string; delta?: string }) => {
      if (ev.type === "text" && ev.handle === record.handle) onText(ev.delta ?? "")
    }
    if ("answer" in start) {
      const delivered = await durable.deliverAnswer(store, start.answer, { runtime, signal, onEvent })
      return delivered.result
    }
    const { createRuntime } = await import("@toolnexus/agents")
    const own = runtime.onEvent
    const rt = createRuntime({
      ...runtime,
      store,
      namespace: key,
      onEvent: (ev) => {
        own?.(ev)
        onEvent(ev)
      },
    })
    const onAbort = () => void rt.close(rt.root)
    signal.addEventListener("abort", onAbort, { once: true })
    try {
      const handle = rt.spawn(rt.root, agent)
      record.handle = handle.id
      rt.wake(handle, start.text)
      const result = await rt.wait(handle)
      if (result.status === "pending") await durable.saveRuntime(store, key, rt)
      return result
    } finally {
      signal.removeEventListener("abort", onAbort)
    }
  }

  #setStatus(record: TaskRecord, state: TaskState, parts: ReturnType<typeof textPart>[] | undefined): void {
    record.state = state
    record.timestamp = new Date().toISOString()
    record.statusMessage = parts ? agentMessage(record, parts, randomUUID()) : undefined
    if (record.statusMessage) record.history.push(record.statusMessage)
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

  async #owned(id: string, context: ServerCallContext): Promise<TaskRecord> {
    const record = await this.#load(id)
    const owner = ownerOf(context)
    // Another token's task is reported as unknown: its existence is not the caller's business.
    if (!record || (record.owner ?? undefined) !== owner)
      throw new TaskNotFoundError({ message: `task ${id} not found` })
    return record
  }

  async #load(id: string): Promise<TaskRecord | undefined> {
    return readTaskRecord(await this.#o.store.getSnapshot(taskKey(id)), id)
  }

  #save(record: TaskRecord): Promise<void> {
    return this.#o.store.putSnapshot(taskKey(record.id), record)
  }
}

function notWaiting(record: TaskRecord, resuming: boolean): UnsupportedOperationError {
  const state = resuming ? "working (its answer is being applied)" : stateName(record.state)
  return new UnsupportedOperationError({ message: `task ${record.id} is ${state}, not waiting for input` })
}

/** @internal The owner key a token's tasks are filed under (set by the fetch handler). */
export const OWNER_STATE_KEY = "toolnexus.a2a.owner"

function ownerOf(context: ServerCallContext): string | undefined {
  const owner = context.state.get(OWNER_STATE_KEY)
  return typeof owner === "string" ? owner : undefined
}

/** Text parts by line, data parts as JSON objects; a file part or neither kind is refused. */
function readParts(message: Message): { text: string; said: string; data: Record<string, unknown>[] } {
  const lines: string[] = []
  const said: string[] = []
  const data: Record<string, unknown>[] = []
  let parts = 0
  for (const part of message.parts) {
    const content = part.content
    if (content?.$case === "text") {
      lines.push(content.value)
      said.push(content.value)
      parts++
    } else if (content?.$case === "data") {
      if (content.value && typeof content.value === "object" && !Array.isArray(content.value))
        data.push(content.value)
      lines.push(JSON.stringify(content.value))
      parts++
    } else if (content?.$case === "url" || content?.$case === "raw") {
      throw new ContentTypeNotSupportedError({ message: "file parts are not accepted" })
    }
  }
  if (parts === 0) throw new RequestMalformedError({ message: "the message has no text or data part" })
  return { text: lines.join("\n"), said: said.join("\n"), data }
}

/**
 * The Answer a message on a halted task carries: a data part `{answer: {ok, data?, reason?}}`
 * as it is, else `ok: true` with the text and the keys of the object data parts — except for
 * an approval, where free text cannot say yes ("no, do not book it" would approve), so only
 * the data part answers it.
 */
function answerOf(
  requestId: string,
  kind: string | undefined,
  said: string,
  data: Record<string, unknown>[],
): Answer {
  const explicit = data.find((d) => d.answer && typeof d.answer === "object")?.answer as
    | { id?: unknown; ok?: unknown; data?: unknown; reason?: unknown }
    | undefined
  if (explicit) {
    if (explicit.id !== undefined && explicit.id !== requestId)
      throw new RequestMalformedError({ message: "answer.id is not the open request's id" })
    if (typeof explicit.ok !== "boolean")
      throw new RequestMalformedError({ message: "answer.ok must be a boolean" })
    const answer: Answer = { id: requestId, ok: explicit.ok }
    if (explicit.data && typeof explicit.data === "object")
      answer.data = explicit.data as Record<string, unknown>
    if (!explicit.ok && typeof explicit.reason === "string") answer.reason = explicit.reason
    return answer
  }
  if (kind === "approval")
    throw new RequestMalformedError({
      message:
        'an approval is answered only by a data part {"answer": {"ok": true}} (approve) or {"answer": {"ok": false, "reason"?: string}} (decline); text alone neither approves nor declines',
    })
  return { id: requestId, ok: true, data: Object.assign({ text: said }, ...data) }
}

function promptText(request: Request): string {
  return request.url ? `${request.prompt}\n${request.url}` : request.prompt
}

function resultArtifact(text: string) {
  return {
    artifactId: "result",
    name: "result",
    description: "",
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
  }
}

/** A queue of stream events one consumer drains; `end()` finishes it after what is queued. */
class EventQueue {
  readonly #items: StreamResponse[] = []
  #ended = false
  #wake: (() => void) | undefined

  push(event: StreamResponse): void {
    this.#items.push(event)
    this.#wake?.()
  }

  end(): void {
    this.#ended = true
    this.#wake?.()
  }

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
