import {
  type Answer,
  type PendingInput,
  type Tool,
  type ToolContext,
  type ToolResult,
  pending,
} from "@toolnexus/core"
import { type ApprovalPolicy, needsApproval } from "./approval-policy.js"
import { toolSchemaOf } from "./input-schema.js"
import { approvalRequestId, loginRequestId, markOf } from "./request-ids.js"
import type { CallEnd, InflightCall, ServerConnection, ServerTool } from "./server-connection.js"
import { toolResultOf } from "./tool-output.js"

/** @internal What every MCP tool of a connection shares. */
export interface McpToolEnv {
  policy: ApprovalPolicy | undefined
  maxOutputChars: number
  /** Earlier elicitation answers of calls that suspended again: replayed when they are re-issued. */
  answered: AnswerMemory
}

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
    const answer = ctx.answer?.ok ? ctx.answer : undefined
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

    // The answers this call already has: the one it carries, and (same process) those its
    // earlier attempts were given, remembered under the request that attempt suspended on.
    const known = new Map<string, Answer>()
    if (answer && mark?.kind === "elicit") {
      for (const [digest, earlier] of this.#env.answered.recall(answer.id)) known.set(digest, earlier)
      known.set(mark.digest, answer)
    }
    let call: InflightCall = { tool, ctx, replay: new Map(known), abort: new AbortController() }
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
        if (known.size > 0) this.#env.answered.remember(end.request.id, known)
        return pending(end.request)
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

/**
 * @internal Elicitation answers a call was given before it suspended again, kept (in this
 * process, bounded) under the id of the request it suspended on: when that request is
 * answered, the re-issued call replays them all, not only the last.
 */
export class AnswerMemory {
  readonly #byRequest = new Map<string, ReadonlyMap<string, Answer>>()
  readonly #limit: number

  constructor(limit = 1_000) {
    this.#limit = limit
  }

  recall(requestId: string): ReadonlyMap<string, Answer> {
    return this.#byRequest.get(requestId) ?? new Map()
  }

  remember(requestId: string, answers: ReadonlyMap<string, Answer>): void {
    this.#byRequest.set(requestId, new Map(answers))
    if (this.#byRequest.size > this.#limit)
      this.#byRequest.delete(this.#byRequest.keys().next().value as string)
  }
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
