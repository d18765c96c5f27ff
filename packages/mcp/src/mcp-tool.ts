import {
  type Answer,
  type PendingInput,
  type Request,
  type Tool,
  type ToolContext,
  type ToolResult,
  declined,
  pending,
} from "@toolnexus/core"
import { type ApprovalPolicy, needsApproval } from "./approval-policy.js"
import { toolSchemaOf } from "./input-schema.js"
import { approvalRequestId, loginRequestId, markOf } from "./request-ids.js"
import {
  type CallEnd,
  type InflightCall,
  type McpRound,
  type McpTaskKeep,
  ROUND_KEY,
  type ServerConnection,
  type ServerTool,
  TASK_KEY,
  TASK_KIND,
} from "./server-connection.js"
import { toolResultOf } from "./tool-output.js"

/** @internal What every MCP tool of a connection shares. */
export interface McpToolEnv {
  policy: ApprovalPolicy | undefined
  maxOutputChars: number
}

/**
 * The request data key under which a call that elicits again carries the answers it already
 * has (by elicitation digest): the request is stored with the run, so after a restart the
 * re-issued call finds them on `ctx.request` and nobody is asked twice.
 */
const EARLIER_ANSWERS = "answered"

/**
 * @internal A toolkit tool standing for one server tool. Its definition is read from the
 * server's current list on every use, so a `tools/list_changed` update reaches tools already
 * handed out; a tool the server no longer offers answers with an `isError` result.
 */
export class McpTool implements Tool {
  readonly name: string
  readonly source = "mcp" as const
  readonly #server: ServerConnection
  readonly #tool: string
  readonly #env: McpToolEnv
  #definition: ServerTool
  #schema: Record<string, unknown>

  constructor(name: string, server: ServerConnection, definition: ServerTool, env: McpToolEnv) {
    this.name = name
    this.#server = server
    this.#tool = definition.name
    this.#env = env
    this.#definition = definition
    this.#schema = toolSchemaOf(definition.inputSchema)
  }

  get description(): string {
    return this.#definition.description || `${this.#tool} (MCP server ${this.#server.name})`
  }

  get inputSchema(): Record<string, unknown> {
    return this.#schema
  }

  /**
   * A declined answer (the loop runs MCP tools with their declines). A request parked on a
   * task: its wait request expiring is the host's sweep saying the task is due a poll (the call
   * goes on, undefined here); any other decline, or the expiry of the task's question, cancels
   * the task. Every other request is declined as the loop would, the server not told.
   */
  async #declined(ctx: ToolContext, answer: Answer): Promise<ToolResult | undefined> {
    const request: Request =
      ctx.request?.id === answer.id
        ? ctx.request
        : { id: answer.id, kind: "approval", prompt: `${this.#tool} on MCP server ${this.#server.name}` }
    const task = parkedTask(ctx, answer.id)
    if (!task) return declined(request, answer)
    if (request.kind === TASK_KIND && answer.reason === "expired") return undefined
    const result = declined(request, answer)
    try {
      await this.#server.cancelTask(task.taskId)
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error)
      result.output += `; the task ${task.taskId} could not be cancelled (${this.#server.redact(reason)})`
    }
    return result
  }

  /** @internal Takes the server's new definition after `tools/list_changed`. */
  update(definition: ServerTool): void {
    if (definition === this.#definition) return
    this.#definition = definition
    this.#schema = toolSchemaOf(definition.inputSchema)
  }

  async execute(args: Record<string, unknown>, ctx: ToolContext = {}): Promise<ToolResult> {
    const server = this.#server.name
    const tool = this.#tool
    if (!this.#server.tools.some((t) => t.name === tool) && this.#server.status === "ready") {
      return {
        output: `MCP server ${JSON.stringify(server)} no longer offers the tool ${tool}`,
        isError: true,
      }
    }
    let answer = ctx.answer?.ok ? ctx.answer : undefined
    if (ctx.answer && !ctx.answer.ok) {
      const refused = await this.#declined(ctx, ctx.answer)
      if (refused) return refused
      answer = ctx.answer // the sweep's expiry of a task's wait: the call polls its task
    }
    const mark = answer ? markOf(answer.id) : undefined
    // Any answer to one of our requests means this call got past its approval already.
    const approved = mark !== undefined
    const annotations = this.#definition.annotations ?? {}
    if (!approved && needsApproval(this.#env.policy, server, tool, args, this.#definition.annotations)) {
      return pending({
        id: approvalRequestId(),
        kind: "approval",
        prompt: `Allow MCP server ${JSON.stringify(server)} to run ${tool} with ${preview(args)}?`,
        data: { server, tool, args, annotations },
      })
    }

    // The answers this call already has: those its earlier attempts were given (carried on
    // the request it suspended on) and the one it carries now.
    const known = new Map<string, Answer>()
    if (answer && mark?.kind === "elicit") {
      for (const [digest, earlier] of earlierAnswers(ctx, answer.id)) known.set(digest, earlier)
      known.set(mark.digest, answer)
    }
    let call: InflightCall = { tool, ctx, replay: new Map(known), abort: new AbortController() }
    // A call halted in a 2026-07-28 round resumes by retrying that round, once; one parked on
    // a task follows the task (its input answered, or polled).
    const round = answer && mark?.kind === "elicit" ? haltedRound(ctx, answer.id) : undefined
    if (round) call.resume = round
    const task = answer ? parkedTask(ctx, answer.id) : undefined
    if (task) call.task = ctx.request?.kind === TASK_KIND ? pollOnly(task) : task
    let end = await this.#server.call(call, args)
    if (end.kind === "url" && ctx.resolve) {
      // Inline: the user finishes the flow now, and the call is made once more.
      const reply = await ctx.resolve(urlRequest(server, tool, end))
      if (!reply.ok) return { output: `declined: ${end.message}`, isError: true, metadata: { server } }
      call = { tool, ctx, replay: new Map(known), abort: new AbortController() }
      end = await this.#server.call(call, args)
    }
    switch (end.kind) {
      case "suspended":
        return pending(withEarlierAnswers(end.request, known))
      case "login":
        return pending({
          id: loginRequestId(),
          kind: "authorization",
          prompt: `Sign in to MCP server ${JSON.stringify(server)} to run ${tool}`,
          url: end.url,
          data: { server, tool },
        })
      case "url":
        return pending(urlRequest(server, tool, end))
      case "failed":
        return { output: end.message, isError: true, metadata: { server } }
      case "result": {
        const result = toolResultOf(end.outcome, server, this.#env.maxOutputChars)
        if (call.problem) return { output: call.problem, isError: true, metadata: result.metadata }
        result.output = this.#server.redact(result.output)
        return result
      }
    }
  }
}

/**
 * @internal A stand-in for a remote server that wants a login before it lists its tools: the
 * model calls it, the call suspends with `kind: "authorization"`, and once the host has finished
 * the login (`McpConnection.finishLogin`) and answered, the retry connects and names the tools.
 */
export function signInTool(name: string, server: ServerConnection): Tool {
  return {
    name,
    description: `Sign in to the MCP server ${server.name}; its tools become available afterwards.`,
    inputSchema: { type: "object", properties: {} },
    source: "mcp",
    async execute(_args, ctx = {}) {
      if (ctx.answer?.ok || server.status !== "ready") await server.connect()
      if (server.status === "ready") {
        const tools = server.tools.map((t) => t.name).join(", ") || "none"
        return { output: `signed in to MCP server ${server.name}; its tools: ${tools}`, isError: false }
      }
      const url = server.authorizationUrl
      if (server.status === "login" && url) {
        return pending({
          id: loginRequestId(),
          kind: "authorization",
          prompt: `Sign in to MCP server ${JSON.stringify(server.name)}`,
          url,
          data: { server: server.name },
        })
      }
      return { output: server.error?.message ?? `MCP server ${server.name} is unavailable`, isError: true }
    },
  }
}

/** The task the request being answered was parked on, if it was. */
function parkedTask(ctx: ToolContext, answerId: string): McpTaskKeep | undefined {
  const kept = ctx.request?.id === answerId ? ctx.request.data?.[TASK_KEY] : undefined
  if (typeof kept !== "object" || kept === null) return undefined
  const { taskId, pollIntervalMs } = kept as Partial<McpTaskKeep>
  if (typeof taskId !== "string" || typeof pollIntervalMs !== "number") return undefined
  return kept as McpTaskKeep
}

/** A task to poll, without the input requests of an earlier round. */
function pollOnly(task: McpTaskKeep): McpTaskKeep {
  const keep: McpTaskKeep = { taskId: task.taskId, pollIntervalMs: task.pollIntervalMs }
  if (task.expiresAt !== undefined) keep.expiresAt = task.expiresAt
  return keep
}

/** The 2026-07-28 round the request being answered was halted in, if it was. */
function haltedRound(ctx: ToolContext, answerId: string): McpRound | undefined {
  const round = ctx.request?.id === answerId ? ctx.request.data?.[ROUND_KEY] : undefined
  if (typeof round !== "object" || round === null) return undefined
  const { inputRequests } = round as Partial<McpRound>
  return typeof inputRequests === "object" && inputRequests !== null ? (round as McpRound) : undefined
}

/** The elicitation answers the request being answered carries, by digest. */
function earlierAnswers(ctx: ToolContext, answerId: string): [string, Answer][] {
  const carried = ctx.request?.id === answerId ? ctx.request.data?.[EARLIER_ANSWERS] : undefined
  if (typeof carried !== "object" || carried === null) return []
  return Object.entries(carried as Record<string, unknown>).flatMap(([digest, value]) => {
    const earlier = value as Partial<Answer> | null
    return typeof earlier?.ok === "boolean" ? [[digest, { ...earlier, id: answerId } as Answer]] : []
  })
}

/** The request, carrying the answers the call already has (none ⇒ as it is). */
function withEarlierAnswers(request: PendingInput, known: ReadonlyMap<string, Answer>): PendingInput {
  if (known.size === 0) return request
  const answers: Record<string, Omit<Answer, "id">> = {}
  for (const [digest, { id: _id, ...rest }] of known) answers[digest] = rest
  return { ...request, data: { ...request.data, [EARLIER_ANSWERS]: answers } }
}
/** The request for a flow the server requires before it runs the call (URL elicitation, -32042). */
function urlRequest(
  server: string,
  tool: string,
  end: Extract<CallEnd, { kind: "url" }>,
): PendingInput & { id: string } {
  const data: Record<string, unknown> = { server, tool }
  if (end.elicitationId !== undefined) data.elicitationId = end.elicitationId
  return { id: loginRequestId(), kind: "authorization", prompt: end.message, url: end.url, data }
}

function preview(args: Record<string, unknown>): string {
  const text = JSON.stringify(args) ?? "{}"
  return text.length > 300 ? `${text.slice(0, 300)}…` : text
}
