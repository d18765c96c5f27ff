import {
  type ClientCapabilities,
  type CreateMessageRequestParams,
  type CreateMessageResult,
  ProtocolError,
  ProtocolErrorCode,
} from "@modelcontextprotocol/client"
import type { Client as ModelClient, ToolContext } from "@toolnexus/core"
import { approvalRequestId } from "./request-ids.js"
import { TASKS_EXTENSION } from "./task-wire.js"

/** A root the client offers servers (`roots/list`): a folder or resource they may work in. */
export interface McpRoot {
  /** A `file://` URI (or another scheme the server understands). */
  uri: string
  /** A label servers may show for it. */
  name?: string
}

/** One `notifications/message` a server sent (MCP logging). */
export interface McpLogEntry {
  /** The configured name of the server that sent it. */
  server: string
  /** Its syslog level as the server sent it (`debug` … `emergency`). */
  level: string
  /** The server's logger name, when it gave one. */
  logger?: string
  /** The message: any JSON the server sent. */
  data: unknown
}

/**
 * Serving the servers' `sampling/createMessage` requests with the caller's model. Without it,
 * sampling is not offered and a server that asks anyway is refused (method not found).
 */
export interface McpSamplingOptions {
  /** The model that answers: usually the client the agent runs on. */
  client: ModelClient
  /**
   * Ask the user before each request (an `approval` request answered inline through the
   * tool's `ctx.resolve`). Default true. With nobody to ask inline, the request is refused.
   */
  requireApproval?: boolean
}

/** @internal The client features one connection offers, from connectMcp's options. */
export interface ClientFeatures {
  roots?: McpRoot[]
  sampling?: McpSamplingOptions
  onLog?: (entry: McpLogEntry) => void
}

/**
 * @internal The capabilities announced (in `initialize`, or each 2026-07-28 request's `_meta`):
 * elicitation always (form and URL), the tasks extension, roots and sampling only when
 * configured, so a server never relies on what is refused.
 */
export function clientCapabilities(features: ClientFeatures): ClientCapabilities {
  const capabilities = {
    elicitation: { form: {}, url: {} },
    extensions: { [TASKS_EXTENSION]: {} },
  } as ClientCapabilities
  if (features.roots) capabilities.roots = { listChanged: false }
  if (features.sampling) capabilities.sampling = {}
  return capabilities
}

/**
 * @internal Answers a server's sampling request during `tool`'s call: approved by the user
 * when the options want it, then one run of the caller's model on the request's text.
 *
 * @throws ProtocolError, which the SDK sends back to the server as the request's error.
 */
export async function answerSampling(
  params: CreateMessageRequestParams,
  sampling: McpSamplingOptions,
  at: { server: string; tool?: string; ctx?: ToolContext },
): Promise<CreateMessageResult> {
  const { server, tool, ctx } = at
  const turns: string[] = []
  for (const message of params.messages) {
    const parts = Array.isArray(message.content) ? message.content : [message.content]
    for (const part of parts) {
      if (part.type !== "text") {
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `sampling: only text content is supported, got ${part.type}`,
        )
      }
      turns.push(`${message.role}: ${part.text}`)
    }
  }
  if (sampling.requireApproval !== false) {
    if (!ctx?.resolve) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidRequest,
        "sampling needs the user's approval, and nobody can answer during this call",
      )
    }
    const answer = await ctx.resolve({
      id: approvalRequestId(),
      kind: "approval",
      prompt: `Allow MCP server ${JSON.stringify(server)} to ask the model (sampling)${tool ? ` during ${tool}` : ""}?`,
      data: {
        server,
        tool,
        sampling: { systemPrompt: params.systemPrompt, messages: turns, maxTokens: params.maxTokens },
      },
    })
    if (!answer.ok)
      throw new ProtocolError(ProtocolErrorCode.InvalidRequest, "the user declined the sampling request")
  }
  // One prompt of the whole exchange: the model client speaks its own dialect, and a
  // sampling request is a short, self-contained conversation.
  const prompt = [params.systemPrompt ? `Instructions: ${params.systemPrompt}` : "", ...turns]
    .filter(Boolean)
    .join("\n\n")
  const result = await sampling.client.run(prompt, ctx?.signal ? { signal: ctx.signal } : {})
  if (result.status !== "done") {
    throw new ProtocolError(ProtocolErrorCode.InternalError, `sampling: the model run ended ${result.status}`)
  }
  return {
    role: "assistant",
    content: { type: "text", text: result.text ?? "" },
    model: "toolnexus",
    stopReason: "endTurn",
  }
}
