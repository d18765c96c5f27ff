import type { Context, Link, Span, Tracer } from "@opentelemetry/api"
import type { ModelToolCall, ModelTurn } from "../providers/model-turn.js"
import type { Message, Request, ToolResult, Usage } from "../types.js"
import {
  type OtelModule,
  type TelemetryOptions,
  globalTracerRegistered,
  loadOtel,
  otelLoaded,
} from "./otel-api.js"
import { carrierOf, linkedContext, withTrace } from "./trace-carrier.js"

// OpenTelemetry GenAI semantic conventions (gen_ai.*) and the span kinds / status codes of the API.
const INTERNAL = 0
const CLIENT = 2
const ERROR = 2
const SCOPE = "@toolnexus/core"

/** @internal What the client knows about the endpoint a run's spans describe. */
export interface TracedEndpoint {
  /** `gen_ai.provider.name`: "openai", "anthropic", … */
  provider: string
  model: string
  /** The endpoint URL, for `server.address` / `server.port`. */
  url?: string
}

/**
 * @internal The spans of one run: `invoke_agent` around it, `chat <model>` per LLM request,
 * `execute_tool <name>` per tool call. Created only while tracing is on, so the loop pays a
 * single `undefined` check per step otherwise.
 */
export class RunTracing {
  readonly #api: OtelModule
  readonly #tracer: Tracer
  readonly #span: Span
  readonly #context: Context
  readonly #endpoint: TracedEndpoint
  readonly #content: boolean

  private constructor(
    api: OtelModule,
    tracer: Tracer,
    span: Span,
    context: Context,
    endpoint: TracedEndpoint,
    content: boolean,
  ) {
    this.#api = api
    this.#tracer = tracer
    this.#span = span
    this.#context = context
    this.#endpoint = endpoint
    this.#content = content
  }

  /**
   * Starts the run span when tracing is on: a tracer was given, or a global tracer provider
   * is registered. Otherwise resolves `undefined` without importing anything.
   */
  static start(
    telemetry: TelemetryOptions | undefined,
    endpoint: TracedEndpoint,
    conversationId: string | undefined,
    resumes?: Request,
  ): RunTracing | undefined | Promise<RunTracing | undefined> {
    if (telemetry?.enabled === false) return undefined
    if (telemetry?.tracer === undefined && !globalTracerRegistered()) return undefined
    // Made only when tracing: an untraced run allocates nothing here.
    const run = { conversationId, resumes }
    const api = otelLoaded()
    if (api) return RunTracing.#open(api, telemetry, endpoint, run)
    return loadOtel().then((mod) => (mod ? RunTracing.#open(mod, telemetry, endpoint, run) : undefined))
  }

  static #open(
    api: OtelModule,
    telemetry: TelemetryOptions | undefined,
    endpoint: TracedEndpoint,
    run: { conversationId?: string; resumes?: Request },
  ): RunTracing | undefined {
    const tracer = (telemetry?.tracer as Tracer | undefined) ?? api.trace.getTracer(SCOPE)
    const parent = (telemetry?.parentContext as Context | undefined) ?? api.context.active()
    const name = telemetry?.agentName
    const attributes: Record<string, string> = {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.provider.name": endpoint.provider,
      "gen_ai.request.model": endpoint.model,
    }
    if (name !== undefined) attributes["gen_ai.agent.name"] = name
    if (telemetry?.agentId !== undefined) attributes["gen_ai.agent.id"] = telemetry.agentId
    if (run.conversationId !== undefined) attributes["gen_ai.conversation.id"] = run.conversationId
    const links: Link[] = []
    const linked = linkedContext(api, run.resumes)
    if (linked && run.resumes) {
      // The run that asked: one decision, traced from the question to the resumed work.
      links.push({ context: linked, attributes: { "toolnexus.request.id": run.resumes.id } })
    }
    const span = tracer.startSpan(
      name === undefined ? "invoke_agent" : `invoke_agent ${name}`,
      { kind: INTERNAL, attributes, links },
      parent,
    )
    // A run span that is not recorded (a no-op tracer, a sampled-out trace) would only have
    // unrecorded children: the run then goes on untraced, at no further cost.
    if (!span.isRecording()) {
      span.end()
      return undefined
    }
    if (run.resumes) span.setAttribute("toolnexus.resumed.request.id", run.resumes.id)
    const context = api.trace.setSpan(parent, span)
    return new RunTracing(api, tracer, span, context, endpoint, telemetry?.captureContent === true)
  }

  /** Runs one LLM request inside a `chat <model>` span. */
  async chat(messages: readonly Message[], call: () => Promise<ModelTurn>): Promise<ModelTurn> {
    const { model, provider, url } = this.#endpoint
    const span = this.#tracer.startSpan(
      `chat ${model}`,
      {
        kind: CLIENT,
        attributes: {
          "gen_ai.operation.name": "chat",
          "gen_ai.provider.name": provider,
          "gen_ai.request.model": model,
        },
      },
      this.#context,
    )
    if (url !== undefined) setServer(span, url)
    if (this.#content && span.isRecording())
      span.setAttribute("gen_ai.input.messages", JSON.stringify(messages))
    try {
      const reply = await this.#api.context.with(this.#api.trace.setSpan(this.#context, span), call)
      span.setAttributes({
        "gen_ai.response.finish_reasons": [reply.finishReason],
        "gen_ai.usage.input_tokens": reply.usage.promptTokens,
        "gen_ai.usage.output_tokens": reply.usage.completionTokens,
      })
      if (this.#content && span.isRecording())
        span.setAttribute("gen_ai.output.messages", JSON.stringify(reply.messages))
      return reply
    } catch (error) {
      failed(span, error)
      throw error
    } finally {
      span.end()
    }
  }

  /** Runs one tool call inside an `execute_tool <name>` span; `run` gets the span's context. */
  async tool<O extends { request?: Request; result: ToolResult }>(
    call: ModelToolCall,
    run: (traceContext: unknown) => Promise<O> | O,
  ): Promise<O> {
    const span = this.#tracer.startSpan(
      `execute_tool ${call.name}`,
      {
        kind: INTERNAL,
        attributes: {
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": call.name,
          "gen_ai.tool.call.id": call.id,
          "gen_ai.tool.type": "function",
        },
      },
      this.#context,
    )
    if (this.#content && span.isRecording()) span.setAttribute("gen_ai.tool.call.arguments", call.arguments)
    const context = this.#api.trace.setSpan(this.#context, span)
    try {
      const outcome = await this.#api.context.with(context, run, undefined, context)
      if (outcome.request) {
        // A suspension is not a failure: the status stays unset.
        span.setAttribute("toolnexus.tool.outcome", "pending")
        span.setAttribute("toolnexus.request.id", outcome.request.id)
      } else {
        span.setAttribute("toolnexus.tool.outcome", outcome.result.isError ? "error" : "ok")
        if (outcome.result.isError)
          span.setStatus({ code: ERROR, message: "the tool returned an error result" })
        if (this.#content && span.isRecording())
          span.setAttribute("gen_ai.tool.call.result", outcome.result.output)
      }
      return outcome
    } catch (error) {
      failed(span, error)
      throw error
    } finally {
      span.end()
    }
  }

  /** Records a suspension answered inline (a `waitFor`) as a span event; the run goes on. */
  asked(request: Request): void {
    this.#span.addEvent("toolnexus.suspension", {
      "toolnexus.request.id": request.id,
      "toolnexus.request.kind": request.kind,
      "toolnexus.suspension.inline": true,
    })
  }

  /**
   * Records the run's halt as a span event and returns the request carrying this run's trace
   * context under `data.trace`, so the resuming run links to it.
   */
  suspend(request: Request): Request {
    this.#span.addEvent("toolnexus.suspension", {
      "toolnexus.request.id": request.id,
      "toolnexus.request.kind": request.kind,
    })
    return withTrace(request, carrierOf(this.#span.spanContext()))
  }

  /** Ends the run span with the run's outcome. */
  end(outcome: { status: string; turns: number; usage: Usage } | { error: unknown }): void {
    const span = this.#span
    if ("error" in outcome) failed(span, outcome.error)
    else {
      span.setAttributes({
        "toolnexus.run.status": outcome.status,
        "toolnexus.run.turns": outcome.turns,
        "gen_ai.usage.input_tokens": outcome.usage.promptTokens,
        "gen_ai.usage.output_tokens": outcome.usage.completionTokens,
      })
    }
    span.end()
  }
}

function failed(span: Span, error: unknown): void {
  const err = error as { name?: unknown; code?: unknown; message?: unknown }
  const type = typeof err?.code === "string" ? err.code : typeof err?.name === "string" ? err.name : "Error"
  span.setAttribute("error.type", type)
  span.setStatus({ code: ERROR, message: typeof err?.message === "string" ? err.message : String(error) })
}

function setServer(span: Span, url: string): void {
  try {
    const parsed = new URL(url)
    span.setAttribute("server.address", parsed.hostname)
    const port = parsed.port === "" ? (parsed.protocol === "https:" ? 443 : 80) : Number(parsed.port)
    span.setAttribute("server.port", port)
  } catch {
    // An unparsable URL fails the request itself; the span just lacks the server attributes.
  }
}
