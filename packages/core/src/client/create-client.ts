import { ConfigError, LLMResponseError } from "../errors.js"
import type { ModelTurn } from "../providers/model-turn.js"
import { anthropicWire } from "../providers/anthropic.js"
import { openaiWire } from "../providers/openai.js"
import { readSSE } from "../providers/sse.js"
import type { WireFormat } from "../providers/wire-format.js"
import { type Client, type ClientBaseOptions, type ModelRequest, buildClient } from "./client.js"
import { type LLMErrorInfo, sendWithRetries } from "./retry.js"
import { fetchTransport, transportError, undiciTransport } from "./transport.js"

/** Options of {@link createClient}. */
export interface ClientOptions extends ClientBaseOptions {
  baseUrl: string
  style: "openai" | "anthropic"
  /** Else OPENAI_API_KEY / OPENROUTER_API_KEY (openai) or ANTHROPIC_API_KEY (anthropic). */
  apiKey?: string
  headers?: Record<string, string>
  /** Retries of 429/500/502/503/504 and network errors; default 2. */
  retries?: number
  /** Base of the exponential backoff; default 500 ms. */
  retryBaseMs?: number
  /** Per-request timeout; default none. A timeout aborts the request and is never retried. */
  timeoutMs?: number
  onError?: (info: LLMErrorInfo) => "retry" | "fail"
  /** The transport seam (mocks, proxies, record/replay); default undici with keep-alive. */
  fetch?: typeof fetch
  /** Extra body fields sent on every request (temperature, max_tokens, …). */
  requestParams?: Record<string, unknown>
  /** Rewrites each request body just before it is sent. */
  bodyTransform?: (body: Record<string, unknown>) => Record<string, unknown>
  /**
   * Wraps each LLM HTTP call (not a whole run), e.g. to bound concurrent calls across many
   * clients; it must call `call` once and pass its outcome through.
   */
  llmGate?: <T>(call: () => Promise<T>) => Promise<T>
}

/**
 * Creates a client of an OpenAI- or Anthropic-style endpoint.
 *
 * @throws ConfigError for missing or invalid options.
 * @example
 * const client = createClient({ baseUrl: "https://api.openai.com/v1", style: "openai", model: "gpt-4.1-mini" })
 * const result = await client.run("What is 2 + 2?")
 */
export function createClient(opts: ClientOptions): Client {
  const wire = wireOf(opts)
  const url = wire.endpoint(opts.baseUrl)
  const apiKey = opts.apiKey ?? envKey(wire.style)
  // Header names are case-insensitive: a user's `Authorization` replaces our `authorization`.
  const headers = { ...wire.headers(apiKey) }
  for (const [name, value] of Object.entries(opts.headers ?? {})) headers[name.toLowerCase()] = value
  const transport = opts.fetch ? fetchTransport(opts.fetch) : undiciTransport
  const policy = {
    retries: nonNegative("retries", opts.retries, 2),
    retryBaseMs: nonNegative("retryBaseMs", opts.retryBaseMs, 500),
    timeoutMs: opts.timeoutMs === undefined ? undefined : nonNegative("timeoutMs", opts.timeoutMs, 0),
    onError: opts.onError,
  }
  const { model, systemPrompt, requestParams, bodyTransform, llmGate } = opts

  async function callOnce(call: ModelRequest): Promise<ModelTurn> {
    let body = wire.body({
      model,
      system: systemPrompt,
      messages: call.messages,
      tools: call.tools,
      stream: call.stream,
      params: requestParams,
    })
    if (bodyTransform) body = bodyTransform(body)
    const sent = await sendWithRetries(transport, url, headers, JSON.stringify(body), policy, call.signal)
    try {
      if (!call.stream) return wire.parse(parseJSON(await sent.reply.text()))
      const stream = wire.streamAccumulator()
      for await (const event of readSSE(sent.reply.chunks())) {
        const delta = stream.accept(event)
        if (delta !== undefined) call.onText?.(delta)
      }
      return stream.finish()
    } catch (error) {
      throw LLMResponseError.isInstance(error) ? error : transportError(error, sent.signal)
    } finally {
      sent.release()
    }
  }

  return buildClient(
    {
      model,
      dialect: wire.dialect,
      endpoint: { provider: wire.style, model, url },
      callModel: (call) => (llmGate ? llmGate(() => callOnce(call)) : callOnce(call)),
    },
    opts,
  )
}

function wireOf(opts: ClientOptions): WireFormat {
  if (typeof opts !== "object" || opts === null) throw new ConfigError("createClient needs an options object")
  if (typeof opts.baseUrl !== "string" || !/^https?:\/\//.test(opts.baseUrl)) {
    throw new ConfigError(`baseUrl must be an http(s) URL, got ${JSON.stringify(opts.baseUrl)}`)
  }
  if (typeof opts.model !== "string" || opts.model === "")
    throw new ConfigError("model must be a non-empty string")
  if (opts.style === "openai") return openaiWire
  if (opts.style === "anthropic") return anthropicWire
  throw new ConfigError(`style must be "openai" or "anthropic", got ${JSON.stringify(opts.style)}`)
}

function envKey(style: "openai" | "anthropic"): string | undefined {
  const env = process.env
  return style === "anthropic" ? env.ANTHROPIC_API_KEY : (env.OPENAI_API_KEY ?? env.OPENROUTER_API_KEY)
}

function nonNegative(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    throw new ConfigError(`${name} must be a non-negative number, got ${JSON.stringify(value)}`)
  }
  return value
}

function parseJSON(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw new LLMResponseError(
      `the LLM endpoint answered with a body that is not JSON: ${text.slice(0, 200)}`,
    )
  }
}
