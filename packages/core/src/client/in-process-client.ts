import { systemText } from "../skills/system-text.js"
import { randomUUID } from "node:crypto"
import { ConfigError, LLMResponseError } from "../errors.js"
import { type FinishReason, type ModelTurn, parseToolArguments } from "../providers/model-turn.js"
import { openaiAssistantMessage, openaiDialect, openaiFinishReason } from "../providers/openai.js"
import type { Tool } from "../types.js"
import type { Message, Usage } from "../types.js"
import { type Client, type ClientBaseOptions, buildClient } from "./client.js"

/** What an in-process model receives each turn: the OpenAI-shaped transcript and tools. */
export interface GenerateRequest {
  model: string
  system?: string
  messages: readonly Message[]
  /** The tools in OpenAI function format. */
  tools: unknown[]
  turn: number
  signal?: AbortSignal
}

/** What an in-process model returns for one turn. */
export interface GenerateReply {
  content?: string
  toolCalls?: { id?: string; name: string; arguments: unknown }[]
  usage?: Partial<Usage>
  /** A refusal instead of an answer (kept as OpenAI's `refusal` field). */
  refusal?: string
  /** Why the turn ended (see `RunResult.finishReason`); default `tool_calls` or `stop`. */
  finishReason?: FinishReason
}

/** Options of {@link createInProcessClient}. */
export interface InProcessClientOptions extends ClientBaseOptions {
  generate: (req: GenerateRequest) => Promise<GenerateReply>
}

/**
 * Creates a client whose model is a function in this process (scripted demos, tests, local
 * models). The transcript uses the OpenAI message shape.
 *
 * @example
 * const client = createInProcessClient({ model: "scripted", generate: async () => ({ content: "hi" }) })
 */
export function createInProcessClient(opts: InProcessClientOptions): Client {
  if (typeof opts?.generate !== "function")
    throw new ConfigError("createInProcessClient needs a generate function")
  if (typeof opts.model !== "string" || opts.model === "")
    throw new ConfigError("model must be a non-empty string")
  const { generate, model, systemPrompt } = opts
  return buildClient(
    {
      model,
      dialect: openaiDialect,
      endpoint: { provider: "toolnexus.in_process", model },
      async callModel(call) {
        const tools = !call.tools
          ? []
          : Array.isArray(call.tools)
            ? call.tools.map(toOpenAITool)
            : call.tools.toOpenAI()
        const reply = await generate({
          model,
          system: systemText(systemPrompt, call.skillsPrompt),
          messages: call.messages,
          tools,
          turn: call.turn,
          signal: call.signal,
        })
        if (typeof reply !== "object" || reply === null)
          throw new LLMResponseError("generate returned no reply object")
        const text = typeof reply.content === "string" ? reply.content : ""
        const toolCalls = (reply.toolCalls ?? []).map((c) =>
          parseToolArguments(
            c.id ?? `call_${randomUUID()}`,
            c.name,
            typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments ?? {}),
          ),
        )
        const refusal = typeof reply.refusal === "string" ? reply.refusal : undefined
        if (text) call.onText?.(text)
        if (refusal) call.onRefusal?.(refusal)
        const turn: ModelTurn = {
          messages: [openaiAssistantMessage(text, toolCalls, refusal)],
          text,
          toolCalls: refusal === undefined ? toolCalls : [],
          finishReason: openaiFinishReason(reply.finishReason, refusal, toolCalls.length),
          usage: {
            promptTokens: reply.usage?.promptTokens ?? 0,
            completionTokens: reply.usage?.completionTokens ?? 0,
          },
        }
        if (refusal !== undefined) turn.refusal = refusal
        return turn
      },
    },
    opts,
  )
}

function toOpenAITool(t: Tool): unknown {
  return {
    type: "function",
    function: { name: t.name, description: t.description, parameters: t.inputSchema },
  }
}
