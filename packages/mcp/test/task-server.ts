import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

/**
 * A 2026-07-28 server that offers the tasks extension (SEP-2663), written against the wire
 * (no SDK has a runtime for it): `report` becomes a task that works until the test finishes it;
 * `purge` becomes a task that asks a question (`input_required`) and ends on the answer. Tasks
 * live in this object, so they outlive the client processes that follow them.
 */
export interface TaskServer {
  url: string
  /** Every request the server received: method, task id or tool, and the `Mcp-Name` header. */
  received: { method: string; name?: string; header?: string | undefined; params: Record<string, unknown> }[]
  /** The tasks by id. */
  tasks: Map<string, ServedTask>
  /** Ends a working task with this text as its result. */
  finish(taskId: string, text: string): void
  /** Whether a task has been created for tool calls this far. */
  count(method: string): number
  close(): Promise<void>
}

/** One task, as the server keeps it. */
export interface ServedTask {
  taskId: string
  tool: string
  status: "working" | "input_required" | "completed" | "failed" | "cancelled"
  createdAt: string
  ttlMs: number
  inputRequests?: Record<string, unknown>
  result?: Record<string, unknown>
  error?: { code: number; message: string }
}

/** Options of {@link serveTasks}. */
export interface TaskServerOptions {
  /** The tasks' TTL. Default an hour. */
  ttlMs?: number
  /** The poll interval the server asks for. Default 10 ms. */
  pollIntervalMs?: number
  /** `createdAt` of new tasks (default: now). */
  createdAt?: () => string
}

const VERSION = "2026-07-28"
const TASKS = "io.modelcontextprotocol/tasks"
const QUESTION = {
  method: "elicitation/create",
  params: {
    mode: "form",
    message: "Purge the cache?",
    requestedSchema: { type: "object", properties: { sure: { type: "boolean" } }, required: ["sure"] },
  },
}

export async function serveTasks(options: TaskServerOptions = {}): Promise<TaskServer> {
  const ttlMs = options.ttlMs ?? 3_600_000
  const pollIntervalMs = options.pollIntervalMs ?? 10
  const tasks = new Map<string, ServedTask>()
  const received: TaskServer["received"] = []
  let next = 0

  const view = (task: ServedTask) => ({
    taskId: task.taskId,
    status: task.status,
    createdAt: task.createdAt,
    lastUpdatedAt: task.createdAt,
    ttlMs,
    pollIntervalMs,
    ...(task.inputRequests ? { inputRequests: task.inputRequests } : {}),
    ...(task.result ? { result: task.result } : {}),
    ...(task.error ? { error: task.error } : {}),
  })
  const text = (value: string) => ({ content: [{ type: "text", text: value }], isError: false })

  const handle = (method: string, params: Record<string, unknown>): unknown => {
    switch (method) {
      case "server/discover":
        return {
          supportedVersions: [VERSION],
          capabilities: { tools: {}, extensions: { [TASKS]: {} } },
          ttlMs: 0,
          cacheScope: "private",
          _meta: { "io.modelcontextprotocol/serverInfo": { name: "tasks", version: "1.0.0" } },
        }
      case "tools/list":
        return {
          ttlMs: 0,
          cacheScope: "private",
          tools: [
            { name: "report", description: "Builds a report, as a task", inputSchema: { type: "object" } },
            {
              name: "purge",
              description: "Purges the cache after asking, as a task",
              inputSchema: { type: "object" },
            },
            { name: "quick", description: "Answers at once", inputSchema: { type: "object" } },
          ],
        }
      case "tools/call": {
        const tool = String(params.name)
        if (tool === "quick") return text("quick")
        const task: ServedTask = {
          taskId: `task-${++next}`,
          tool,
          status: tool === "purge" ? "input_required" : "working",
          createdAt: options.createdAt?.() ?? new Date().toISOString(),
          ttlMs,
        }
        if (tool === "purge") task.inputRequests = { sure: QUESTION }
        tasks.set(task.taskId, task)
        const { inputRequests: _hidden, ...created } = view(task)
        return { ...created, resultType: "task" }
      }
      case "tasks/get": {
        const task = tasks.get(String(params.taskId))
        if (!task) throw { code: -32602, message: "unknown task" }
        return view(task)
      }
      case "tasks/update": {
        const task = tasks.get(String(params.taskId))
        if (!task) throw { code: -32602, message: "unknown task" }
        const response = (
          params.inputResponses as Record<string, { action?: string; content?: { sure?: boolean } }>
        )?.sure
        if (task.status === "input_required" && response) {
          task.inputRequests = undefined
          task.status = "completed"
          task.result = text(response.action === "accept" && response.content?.sure ? "purged" : "kept")
        }
        return {}
      }
      case "tasks/cancel": {
        const task = tasks.get(String(params.taskId))
        if (!task) throw { code: -32602, message: "unknown task" }
        if (task.status === "working" || task.status === "input_required") {
          task.status = "cancelled"
          task.inputRequests = undefined
        }
        return {}
      }
      default:
        throw { code: -32601, message: `Method not found: ${method}` }
    }
  }

  const http = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    if (req.method !== "POST") {
      res.writeHead(405).end()
      return
    }
    const body = JSON.parse(Buffer.concat(chunks).toString() || "{}") as {
      id?: string | number
      method: string
      params?: Record<string, unknown>
    }
    const params = body.params ?? {}
    const name =
      typeof params.taskId === "string"
        ? params.taskId
        : typeof params.name === "string"
          ? params.name
          : undefined
    received.push({
      method: body.method,
      name,
      header: req.headers["mcp-name"] as string | undefined,
      params,
    })
    if (body.id === undefined) {
      res.writeHead(202).end()
      return
    }
    let reply: Record<string, unknown>
    try {
      reply = {
        jsonrpc: "2.0",
        id: body.id,
        result: { resultType: "complete", ...(handle(body.method, params) as object) },
      }
    } catch (error) {
      reply = { jsonrpc: "2.0", id: body.id, error }
    }
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(reply))
  })
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve))
  const { port } = http.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    received,
    tasks,
    finish(taskId, value) {
      const task = tasks.get(taskId)
      if (!task) throw new Error(`no task ${taskId}`)
      task.status = "completed"
      task.result = text(value)
    },
    count: (method) => received.filter((r) => r.method === method).length,
    async close() {
      http.closeAllConnections()
      await new Promise<void>((resolve) => http.close(() => resolve()))
    },
  }
}
