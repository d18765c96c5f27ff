import {
  type ClientCapabilities,
  type CreateMessageRequestParams,
  type CreateMessageResult,
  ProtocolError,
  ProtocolErrorCode,
} from "@modelcontextprotocol/client"
import type { Client as ModelClient, ToolContext, ToolModel } from "@toolnexus/core"
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
 * Serving the servers' `sampling/createMessage` requests with a model (`sampling: true` is
 * `{}`: the model of the client running the call). Without it, sampling is not offered and a
 * server that asks anyway is refused (method not found, or an `isError` result on 2026-07-28).
 */
export interface McpSamplingOptions {
  /**
   * The model that answers. Default: the client running the call (`ctx.client`), so an agent's
   * MCP server samples the agent's own model.
   */
  model?: ToolModel
  /** The older name of `model`. */
  client?: ModelClient
  /**
   * The most tokens a reply may take: a server asking for more gets this many. The prompt
   * names the limit, and a longer reply is cut at four characters a token (core's estimate).
   */
  maxTokens?: number
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
  const model = sampling.model ?? sampling.client ?? ctx?.client
  if (!model) {
    throw new ProtocolError(
      ProtocolErrorCode.InternalError,
      "sampling: no model answers here (the call was not made by a client's run); give sampling.model",
    )
  }
  // The limit is ours to enforce only when one is configured: the server's own maxTokens alone
  // is left to the model's settings, as before the option existed.
  const limit =
    sampling.maxTokens === undefined
      ? Number.POSITIVE_INFINITY
      : Math.min(params.maxTokens, sampling.maxTokens)
  const bounded = Number.isFinite(limit) ? `${prompt}\n\n(Answer in at most ${limit} tokens.)` : prompt
  const result = await model.run(bounded, ctx?.signal ? { signal: ctx.signal } : {})
  if (result.status !== "done") {
    throw new ProtocolError(ProtocolErrorCode.InternalError, `sampling: the model run ended ${result.status}`)
  }
  const text = result.text ?? ""
  return {
    role: "assistant",
    content: { type: "text", text: Number.isFinite(limit) ? text.slice(0, limit * 4) : text },
    model: "toolnexus",
    stopReason: "endTurn",
  }
}
