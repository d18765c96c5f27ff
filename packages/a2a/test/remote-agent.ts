import type { Server } from "node:http"
import type { AddressInfo } from "node:net"
import {
  AGENT_CARD_PATH,
  type AgentCard,
  type Message,
  type Part,
  Role,
  type Task,
  TaskState,
} from "@a2a-js/sdk"
import {
  AgentEvent,
  type AgentExecutor,
  DefaultRequestHandler,
  type ExecutionEventBus,
  InMemoryTaskStore,
  type RequestContext,
} from "@a2a-js/sdk/server"
import { UserBuilder, agentCardHandler, jsonRpcHandler } from "@a2a-js/sdk/server/express"
import express from "express"

/** What a scripted remote turn can do on the SDK's event bus. */
export interface Emit {
  readonly taskId: string
  readonly contextId: string
  /** Every text part of the user message this turn answers, joined. */
  readonly text: string
  readonly message: Message
  readonly task: Task | undefined
  status(state: TaskState, text?: string, data?: Record<string, unknown>): void
  artifact(text: string, opts?: { append?: boolean; lastChunk?: boolean; id?: string }): void
  /** Answers with a Message and no task (only as the turn's first event). */
  reply(text: string): void
  /** Resolves when this task is canceled (the SDK calls the executor's cancelTask). */
  readonly canceled: Promise<void>
}

export type Script = (emit: Emit) => Promise<void> | void

export interface RemoteAgent {
  url: string
  card: AgentCard
  /** Every user message the remote received, in order, as the executor saw it. */
  received: Message[]
  /** Task ids the remote was asked to cancel. */
  cancels: string[]
  /** Request headers of every JSON-RPC POST, lower-cased names. */
  headers: Record<string, string>[]
  setScript(script: Script): void
  close(): Promise<void>
}

export const text = (value: string): Part => ({
  content: { $case: "text", value },
  metadata: undefined,
  filename: "",
  mediaType: "",
})
const data = (value: Record<string, unknown>): Part => ({
  content: { $case: "data", value },
  metadata: undefined,
  filename: "",
  mediaType: "",
})

function agentMessage(taskId: string, contextId: string, parts: Part[]): Message {
  return {
    messageId: `m-${Math.random().toString(36).slice(2)}`,
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  }
}

function textOf(message: Message): string {
  return message.parts
    .map((p) => (p.content?.$case === "text" ? p.content.value : ""))
    .filter(Boolean)
    .join("\n")
}

class ScriptedExecutor implements AgentExecutor {
  script: Script = (emit) => emit.status(TaskState.TASK_STATE_COMPLETED, "ok")
  readonly received: Message[] = []
  readonly cancels: string[] = []
  readonly #canceled = new Map<string, () => void>()

  execute = async (rc: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const message = rc.userMessage
    this.received.push(message)
    const { taskId, contextId } = rc
    const task: Task = rc.task ?? {
      id: taskId,
      contextId,
      status: {
        state: TaskState.TASK_STATE_SUBMITTED,
        message: undefined,
        timestamp: new Date().toISOString(),
      },
      artifacts: [],
      history: [message],
      metadata: undefined,
    }
    // Published with the first status or artifact, so a script may answer with a Message instead.
    let published = false
    const publishTask = () => {
      if (!published) bus.publish(AgentEvent.task(task))
      published = true
    }
    let cancel: () => void = () => {}
    const canceled = new Promise<void>((resolve) => {
      cancel = resolve
    })
    this.#canceled.set(taskId, cancel)
    const emit: Emit = {
      taskId,
      contextId,
      text: textOf(message),
      message,
      task: rc.task,
      canceled,
      reply: (reply) => {
        bus.publish(AgentEvent.message(agentMessage("", contextId, [text(reply)])))
      },
      status: (state, statusText, statusData) => {
        publishTask()
        const parts: Part[] = []
        if (statusText !== undefined) parts.push(text(statusText))
        if (statusData) parts.push(data(statusData))
        bus.publish(
          AgentEvent.statusUpdate({
            taskId,
            contextId,
            status: {
              state,
              message: parts.length ? agentMessage(taskId, contextId, parts) : undefined,
              timestamp: new Date().toISOString(),
            },
            metadata: undefined,
          }),
        )
      },
      artifact: (chunk, opts = {}) => {
        publishTask()
        bus.publish(
          AgentEvent.artifactUpdate({
            taskId,
            contextId,
            artifact: {
              artifactId: opts.id ?? "result",
              name: opts.id ?? "result",
              description: "",
              parts: [text(chunk)],
              metadata: undefined,
              extensions: [],
            },
            append: opts.append ?? false,
            lastChunk: opts.lastChunk ?? false,
            metadata: undefined,
          }),
        )
      },
    }
    await this.script(emit)
  }

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    this.cancels.push(taskId)
    this.#canceled.get(taskId)?.()
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: "",
        status: {
          state: TaskState.TASK_STATE_CANCELED,
          message: undefined,
          timestamp: new Date().toISOString(),
        },
        metadata: undefined,
      }),
    )
  }
}

/**
 * Serves a scripted `AgentExecutor` through the SDK's own `DefaultRequestHandler` and express
 * transport on 127.0.0.1 — the real A2A server the outbound tests talk to.
 */
export async function startRemoteAgent(
  opts: { name?: string; streaming?: boolean; version?: "1.0" | "0.3" } = {},
): Promise<RemoteAgent> {
  const executor = new ScriptedExecutor()
  const headers: Record<string, string>[] = []
  const app = express()
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s))
  })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const version = opts.version ?? "1.0"
  const card: AgentCard = {
    name: opts.name ?? "Travel Desk",
    description: "Books trips.",
    supportedInterfaces: [{ url, protocolBinding: "JSONRPC", tenant: "", protocolVersion: version }],
    provider: undefined,
    version: "1.0.0",
    capabilities: { streaming: opts.streaming ?? false, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [
      {
        id: "book",
        name: "book",
        description: "books a flight",
        tags: [],
        examples: [],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
  }
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor)
  const legacyCompat = { enabled: version === "0.3" }
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler, legacyCompat }))
  app.use((req, _res, next) => {
    if (req.method === "POST") headers.push({ ...(req.headers as Record<string, string>) })
    next()
  })
  app.use(
    "/",
    jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat }),
  )
  return {
    url,
    card,
    received: executor.received,
    cancels: executor.cancels,
    headers,
    setScript: (script) => {
      executor.script = script
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

export { TaskState }
