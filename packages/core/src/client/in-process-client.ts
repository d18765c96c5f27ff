import { systemText } from "../skills/system-text.js"
import { ConfigError, LLMResponseError } from "../errors.js"
import { realSignal } from "../internal/run-abort.js"
import { type FinishReason, type ModelTurn, parseToolArguments } from "../providers/model-turn.js"
import { openaiAssistantMessage, openaiDialect, openaiFinishReason } from "../providers/openai.js"
import type { Tool } from "../types.js"
import type { Message, Usage } from "../types.js"
import { type Client, type ClientBaseOptions, buildClient } from "./client.js"

// From process.getBuiltinModule, not an ESM import: the first ESM import of node:crypto builds
// its facade, which reads every export and so loads WebCrypto (~7 M instructions on Node 24).
const { randomUUID } = process.getBuiltinModule("node:crypto")

/** What an in-process model receives each turn: the OpenAI-shaped transcript and tools. */
export interface GenerateRequest {
  /** The client's `model` option. */
  model: string
  /**
   * The system text: `systemPrompt` and the toolkit's skill catalog, joined by a blank line;
   * absent when both are empty.
   */
  system?: string
  /** The transcript so far, in OpenAI chat message shape (without the system text). */
  messages: readonly Message[]
  /** The tools in OpenAI function format. */
  tools: unknown[]
  /** The run's LLM turn, counting from 1. */
  turn: number
  /** The run's abort signal, when the run was given one. */
  signal?: AbortSignal
}

/** What an in-process model returns for one turn. */
export interface GenerateReply {
  /** The assistant's text; default "" (a non-string counts as none). */
  content?: string
  /** The tools the model calls this turn; default none. Dropped when `refusal` is set. */
  toolCalls?: {
    /** The call's id; default a random `call_<uuid>`. */
    id?: string
    /** The name of the tool to call. */
    name: string
    /**
     * The arguments: a JSON string, or a value that is JSON-stringified (`{}` when nullish).
     * Anything but a JSON object is reported back to the model as a call error.
     */
    arguments: unknown
  }[]
  /** The turn's token counts; only `promptTokens` and `completionTokens` are read, a missing one is 0. */
  usage?: Partial<Usage>
  /** A refusal instead of an answer (kept as OpenAI's `refusal` field). */
  refusal?: string
  /** Why the turn ended (see `RunResult.finishReason`); default `tool_calls` or `stop`. */
  finishReason?: FinishReason
}

/** Options of {@link createInProcessClient}. */
export interface InProcessClientOptions extends ClientBaseOptions {
  /** The model: called once per LLM turn (no retries); a rejection rejects the run. */
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
          signal: realSignal(call.signal),
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
