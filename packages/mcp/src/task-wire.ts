import type { JSONRPCMessage, Transport } from "@modelcontextprotocol/client"
import { isPlainObject } from "./config.js"

/** The tasks extension (SEP-2663), as servers and clients name it in `capabilities.extensions`. */
export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

/** @internal Where a rewritten `tools/call` answer keeps the task the server created. */
const TASK_MARK = "io.toolnexus/createdTask"

/** @internal A task as `tools/call` (CreateTaskResult) or `tasks/get` (DetailedTask) reports it. */
export interface McpTaskState {
  taskId: string
  status: "working" | "input_required" | "completed" | "failed" | "cancelled" | string
  statusMessage?: string
  createdAt?: string
  ttlMs?: number
  pollIntervalMs?: number
  inputRequests?: Record<string, { method: string; params?: Record<string, unknown> }>
  result?: Record<string, unknown>
  error?: { code?: number; message?: string }
}

/** @internal The envelope every 2026-07-28 request carries in `_meta`. */
export interface Envelope {
  protocolVersion: string
  clientInfo: { name: string; version: string }
  clientCapabilities: Record<string, unknown>
}

let nextId = 0

/**
 * @internal The tasks methods on a connection's own transport. The v2 SDK has no runtime for
 * the extension: on 2026-07-28 it refuses a `tools/call` answered `resultType: "task"` and will
 * not send `tasks/get` or `tasks/cancel` (2025-era methods to its registry). So the transport
 * is hooked below the SDK: a task answer to a `tools/call` reaches the SDK as an empty result
 * marking the task (read back with {@link createdTaskOf}), and the tasks requests go out on
 * the same transport (same process, same HTTP auth and headers) with their own ids, whose
 * answers never reach the SDK.
 */
export class TaskWire {
  readonly #transport: Transport
  readonly #calls = new Set<string | number>()
  readonly #waiting = new Map<string, { resolve(value: unknown): void; reject(error: Error): void }>()

  constructor(transport: Transport) {
    this.#transport = transport
    const send = transport.send.bind(transport)
    transport.send = (message, options) => {
      if (isRequest(message) && message.method === "tools/call") this.#calls.add(message.id)
      return send(message, options)
    }
    // The transport calls `this.onmessage`, which the SDK's client sets on connect: the
    // accessor puts this wire in front of whatever it sets.
    let deliver: Transport["onmessage"]
    Object.defineProperty(transport, "onmessage", {
      configurable: true,
      get: () => {
        const to = deliver
        return to
          ? (message: JSONRPCMessage, extra?: unknown) => this.#receive(message, extra, to)
          : undefined
      },
      set: (handler: Transport["onmessage"]) => {
        deliver = handler
      },
    })
  }

  /** Sends one tasks request; resolves with its result, rejects with the server's error. */
  request(
    method: string,
    params: Record<string, unknown>,
    envelope: Envelope,
    timeoutMs: number,
  ): Promise<unknown> {
    const id = `toolnexus-task-${++nextId}`
    const _meta = {
      "io.modelcontextprotocol/protocolVersion": envelope.protocolVersion,
      "io.modelcontextprotocol/clientInfo": envelope.clientInfo,
      "io.modelcontextprotocol/clientCapabilities": envelope.clientCapabilities,
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(id)
        reject(new Error(`${method} got no answer within ${timeoutMs} ms`))
      }, timeoutMs)
      this.#waiting.set(id, {
        resolve: (value) => {
          clearTimeout(timer)
          resolve(value)
        },
        reject: (error) => {
          clearTimeout(timer)
          reject(error)
        },
      })
      this.#transport
        .send({ jsonrpc: "2.0", id, method, params: { ...params, _meta } } as JSONRPCMessage)
        .catch((error: unknown) => {
          this.#waiting.get(id)?.reject(error instanceof Error ? error : new Error(String(error)))
          this.#waiting.delete(id)
        })
    })
  }

  #receive(message: JSONRPCMessage, extra: unknown, deliver: NonNullable<Transport["onmessage"]>): void {
    const id = (message as { id?: unknown }).id
    if (typeof id === "string" && this.#waiting.has(id)) {
      const waiter = this.#waiting.get(id)
      this.#waiting.delete(id)
      const { result, error } = message as { result?: unknown; error?: { code?: number; message?: string } }
      if (error) waiter?.reject(new TaskRequestError(error.code, error.message ?? "error"))
      else waiter?.resolve(result)
      return
    }
    if ((typeof id === "string" || typeof id === "number") && this.#calls.delete(id)) {
      const result = (message as { result?: unknown }).result
      if (isPlainObject(result) && result.resultType === "task") {
        const marked = { resultType: "complete", content: [], structuredContent: { [TASK_MARK]: result } }
        deliver({ ...message, result: marked } as JSONRPCMessage, extra as never)
        return
      }
    }
    deliver(message, extra as never)
  }
}

/** @internal The JSON-RPC error a server answered a tasks request with. */
export class TaskRequestError extends Error {
  readonly code: number | undefined
  constructor(code: number | undefined, message: string) {
    super(message)
    this.code = code
  }
}

/** @internal The task a `tools/call` created, when its answer was one. */
export function createdTaskOf(outcome: unknown): McpTaskState | undefined {
  const marked = isPlainObject(outcome)
    ? (outcome.structuredContent as Record<string, unknown> | undefined)
    : undefined
  const task = isPlainObject(marked) ? marked[TASK_MARK] : undefined
  return taskStateOf(task)
}

/** @internal A task state read leniently from a server's answer; undefined without a task id. */
export function taskStateOf(value: unknown): McpTaskState | undefined {
  if (!isPlainObject(value) || typeof value.taskId !== "string" || value.taskId === "") return undefined
  const state: McpTaskState = {
    taskId: value.taskId,
    status: typeof value.status === "string" ? value.status : "working",
  }
  if (typeof value.statusMessage === "string") state.statusMessage = value.statusMessage
  if (typeof value.createdAt === "string") state.createdAt = value.createdAt
  if (typeof value.ttlMs === "number" && value.ttlMs >= 0) state.ttlMs = value.ttlMs
  if (typeof value.pollIntervalMs === "number" && value.pollIntervalMs >= 0)
    state.pollIntervalMs = value.pollIntervalMs
  if (isPlainObject(value.inputRequests))
    state.inputRequests = value.inputRequests as McpTaskState["inputRequests"]
  if (isPlainObject(value.result)) state.result = value.result
  if (isPlainObject(value.error)) state.error = value.error as McpTaskState["error"]
  return state
}

function isRequest(
  message: JSONRPCMessage,
): message is JSONRPCMessage & { id: string | number; method: string } {
  const m = message as { id?: unknown; method?: unknown }
  return typeof m.method === "string" && (typeof m.id === "string" || typeof m.id === "number")
}
