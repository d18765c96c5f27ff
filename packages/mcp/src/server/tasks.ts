import {
  type CallToolResult,
  CLIENT_CAPABILITIES_META_KEY,
  type McpServer,
  ProtocolError,
  ProtocolErrorCode,
  type ServerContext,
  type StandardSchemaV1,
} from "@modelcontextprotocol/server"
import { type RunHost, type Request as RunRequest, isToolnexusError } from "@toolnexus/core"
import { answerOf, inputRequestsOf } from "./input-requests.js"
import type { RequestStateSealer, SealedTask } from "./request-state.js"
import { openRequestsOf } from "./run-state.js"

/** The tasks extension's id (SEP-2663), under `capabilities.extensions`. */
export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
/** How often a client is asked to poll `tasks/get`. */
const POLL_INTERVAL_MS = 500
/** The longest a `tasks/update` waits for its answers to be claimed before it acks. */
const CLAIM_WAIT_MS = 2_000
const MISSING_CAPABILITY = -32021
/**
 * How long `tasks/get` waits for a run's result before it says `working`: short, but not 0 — an
 * engine host asks its server over HTTP, and a 0 ms deadline would abort every ask.
 */
const PEEK_MS = 250

/** What the task handlers need of the server instance. @internal */
export interface TaskContext {
  /** The host the tasks' runs live on. */
  host: RunHost
  /** Seals and opens task ids. */
  sealer: RequestStateSealer
  /** The caller: a task id opens for its principal only. */
  principal: string
  /** A task's TTL (`stateTtlMs`). */
  ttlMs: number
  /** The instance's protocol era: tasks are served on 2026-07-28 only. */
  era: "legacy" | "modern"
}

/** Whether this call's client offered the tasks extension (per request on 2026-07-28). @internal */
export function tasksOffered(era: "legacy" | "modern", ctx: ServerContext): boolean {
  if (era !== "modern") return false
  const caps = (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY] as
    | { extensions?: Record<string, unknown> }
    | undefined
  return caps?.extensions?.[TASKS_EXTENSION] !== undefined
}

/**
 * The `CreateTaskResult` a call answers with when it outlives `taskAfterMs` (or parks): flat,
 * its id a sealed reference to the run, so any instance answers `tasks/*` for it.
 *
 * @internal
 */
export function createTask(tc: TaskContext, tool: string, runId: string): CallToolResult {
  const now = Date.now()
  const task: SealedTask = {
    task: true,
    tool,
    runId,
    principal: tc.principal,
    createdAt: now,
    expiresAt: now + tc.ttlMs,
  }
  const taskId = tc.sealer.seal(task)
  return {
    resultType: "task",
    taskId,
    status: "working",
    createdAt: new Date(now).toISOString(),
    lastUpdatedAt: new Date(now).toISOString(),
    ttlMs: tc.ttlMs,
    pollIntervalMs: POLL_INTERVAL_MS,
  } as unknown as CallToolResult
}

type TaskParams = { taskId: string; inputResponses?: Record<string, unknown> }

/** A params schema for the task methods: an object with a string `taskId`. */
const TASK_PARAMS: StandardSchemaV1<unknown, TaskParams> = {
  "~standard": {
    version: 1,
    vendor: "toolnexus",
    validate(value) {
      const params = value as Partial<TaskParams> | null
      if (typeof params?.taskId !== "string" || params.taskId === "")
        return { issues: [{ message: "taskId must be a non-empty string" }] }
      if (
        params.inputResponses !== undefined &&
        (typeof params.inputResponses !== "object" || params.inputResponses === null)
      )
        return { issues: [{ message: "inputResponses must be an object" }] }
      return { value: params as TaskParams }
    },
  },
}

/**
 * `tasks/get`, `tasks/update` and `tasks/cancel` on `server`, each refused (`-32021`) to a
 * request that did not declare the extension and (`-32602`) for an id that does not open:
 * tampered, expired, another principal's, or sealed by no current key.
 *
 * @internal
 */
export function registerTaskHandlers(server: McpServer, tc: TaskContext): void {
  const handle =
    (work: (task: SealedTask, params: TaskParams, ctx: ServerContext) => Promise<Record<string, unknown>>) =>
    async (params: TaskParams, ctx: ServerContext) => {
      if (!tasksOffered(tc.era, ctx))
        throw new ProtocolError(
          MISSING_CAPABILITY,
          `this request did not declare the ${TASKS_EXTENSION} extension`,
          { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
        )
      return work(openTask(tc, params.taskId), params, ctx)
    }
  server.server.setRequestHandler(
    "tasks/get",
    { params: TASK_PARAMS },
    handle((task, params) => detailedTask(tc, task, params.taskId)),
  )
  server.server.setRequestHandler(
    "tasks/update",
    { params: TASK_PARAMS },
    handle(async (task, params, ctx) => {
      // The SDK lifts `inputResponses` off every request's params into the context.
      await deliverResponses(tc, task, params.inputResponses ?? ctx.mcpReq.inputResponses ?? {})
      return {}
    }),
  )
  server.server.setRequestHandler(
    "tasks/cancel",
    { params: TASK_PARAMS },
    handle(async (task) => {
      // A terminal task stays as it ended; the ack is the same (idempotent).
      const state = await peek(tc.host, task.runId)
      if (state.status === "working" || state.status === "input_required")
        await tc.host.cancel(task.runId, "cancelled by the MCP client")
      return {}
    }),
  )
}

function openTask(tc: TaskContext, taskId: string): SealedTask {
  let opened: ReturnType<RequestStateSealer["open"]>
  try {
    opened = tc.sealer.open(taskId, { principal: tc.principal })
  } catch {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, "unknown task")
  }
  if (!("task" in opened)) throw new ProtocolError(ProtocolErrorCode.InvalidParams, "unknown task")
  return opened
}

type Peeked =
  | { status: "working" }
  | { status: "input_required"; requests: RunRequest[] }
  | { status: "completed"; result: CallToolResult }
  | { status: "failed"; message: string }
  | { status: "cancelled" }

/** Where the run stands now, without waiting for it. */
async function peek(host: RunHost, runId: string): Promise<Peeked> {
  const open = (await openRequestsOf(host, runId, { openOnly: true })) as RunRequest[]
  if (open.length > 0) return { status: "input_required", requests: open }
  let result: { status: string; text: string; isError?: boolean; toolCalls?: { isError?: boolean }[] }
  try {
    result = (await host.result(runId, { timeoutMs: PEEK_MS })) as typeof result
  } catch (error) {
    if (isToolnexusError(error) && error.code === "TNX_ABORTED") return { status: "working" }
    // A store host says a cancelled run "was cancelled"; any other end without a result failed.
    if (isToolnexusError(error) && /was cancelled/.test((error as Error).message))
      return { status: "cancelled" }
    return {
      status: "failed",
      message: isToolnexusError(error) ? `the run failed (${error.code})` : "the run failed",
    }
  }
  // Parked, but its requests are being answered (claimed): it is working again.
  if (result.status === "pending") return { status: "working" }
  const lastCall = result.toolCalls?.[result.toolCalls.length - 1]
  const isError = result.isError === true || lastCall?.isError === true
  const text = result.text !== "" ? result.text : `(the run ended: ${result.status})`
  return { status: "completed", result: { content: [{ type: "text", text }], isError } }
}

/** The `tasks/get` answer (SEP-2663's DetailedTask): status, and the result, error or input requests. */
async function detailedTask(
  tc: TaskContext,
  task: SealedTask,
  taskId: string,
): Promise<Record<string, unknown>> {
  const state = await peek(tc.host, task.runId)
  const base = {
    taskId,
    status: state.status,
    createdAt: new Date(task.createdAt).toISOString(),
    lastUpdatedAt: new Date().toISOString(),
    ttlMs: Math.max(1, task.expiresAt - task.createdAt),
    pollIntervalMs: POLL_INTERVAL_MS,
  }
  if (state.status === "completed") return { ...base, result: state.result }
  if (state.status === "failed")
    return { ...base, error: { code: ProtocolErrorCode.InternalError, message: state.message } }
  if (state.status === "input_required") return { ...base, inputRequests: inputRequestsOf(state.requests) }
  return base
}

/**
 * Delivers each response that answers one of the run's open requests, once (a second delivery
 * of the same answer is the first decision, refused quietly). The run resumes in the
 * background; the ack waits until each answer is claimed, so a `tasks/get` after it no longer
 * lists the answered requests.
 */
async function deliverResponses(
  tc: TaskContext,
  task: SealedTask,
  responses: Record<string, unknown>,
): Promise<void> {
  const open = (await openRequestsOf(tc.host, task.runId, { openOnly: true })) as RunRequest[]
  const claimed: Promise<void>[] = []
  for (const request of open) {
    const answer = answerOf(request, responses)
    if (answer === undefined) continue
    const delivery = tc.host.deliverAnswer(answer).then(
      () => undefined,
      () => undefined,
    )
    claimed.push(Promise.race([delivery, claimedOrGone(tc.host, request.id)]))
  }
  await Promise.all(claimed)
}

/**
 * Resolves once request `id` is no longer open (claimed, decided), or after {@link CLAIM_WAIT_MS}.
 *
 * @internal
 */
export async function claimedOrGone(host: RunHost, id: string): Promise<void> {
  const until = Date.now() + CLAIM_WAIT_MS
  for (let wait = 5; Date.now() < until; wait = Math.min(wait * 2, 100)) {
    const entry = (await host.findRequest(id)) as { state?: string } | undefined
    if (entry?.state !== "open") return
    await new Promise((resolve) => setTimeout(resolve, wait))
  }
}
