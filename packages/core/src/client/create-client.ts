import { systemText } from "../skills/system-text.js"
import { ConfigError, LLMResponseError, ToolnexusError } from "../errors.js"
import type { ModelTurn } from "../providers/model-turn.js"
import { anthropicWire } from "../providers/anthropic.js"
import { openaiWire } from "../providers/openai.js"
import { responsesWire } from "../providers/responses.js"
import { readSSE } from "../providers/sse.js"
import type { WireFormat } from "../providers/wire-format.js"
import { type Client, type ClientBaseOptions, buildClient } from "./client.js"
import {
  type TranslateRequest,
  type TranslateResult,
  translateBody,
  translateInput,
  translateResult,
  translatedTurn,
  withRequestParams,
} from "./translate.js"
import type { Message, Tool } from "../types.js"
import type { ModelCall } from "./loop.js"
import { headerRedactor } from "./redact.js"
import {
  type Attempt,
  type LLMErrorInfo,
  type RetryPolicy,
  httpErrorOf,
  retryFirst,
  withRetries,
} from "./retry.js"
import { type HttpReply, fetchTransport, transportError, undiciTransport } from "./transport.js"

/** Options of {@link createClient}. */
export interface ClientOptions extends ClientBaseOptions {
  /**
   * The endpoint's http(s) base URL, e.g. `https://api.openai.com/v1`; the style appends
   * `/chat/completions`, `/responses` or `/messages` (`/v1/messages` when it does not end in `/v1`).
   */
  baseUrl: string
  /**
   * The wire format: OpenAI chat completions, Anthropic messages, or the OpenAI Responses API
   * (`POST {baseUrl}/responses`, stateless).
   */
  style: "openai" | "anthropic" | "openai-responses"
  /**
   * Else OPENAI_API_KEY / OPENROUTER_API_KEY (openai, openai-responses) or ANTHROPIC_API_KEY
   * (anthropic). A remote (non-loopback) `baseUrl` needs a key, unless `headers` carry the
   * credential or a custom `fetch` sends the requests.
   */
  apiKey?: string
  /** Extra request headers; their values never appear in errors. */
  headers?: Record<string, string>
  /** Retries of 408/409/429/5xx, network errors and transient stream errors; default 2. */
  retries?: number
  /** Base of the exponential backoff; default 500 ms. */
  retryBaseMs?: number
  /** The longest delay a provider's `retry-after-ms` / `Retry-After` may impose; default 60 s. */
  maxRetryDelayMs?: number
  /** Per-request timeout; default none. A timeout aborts the request and is never retried. */
  timeoutMs?: number
  /**
   * Decides after each failed LLM request whether to retry it; default: retry when
   * `info.retryable`. Aborts, output already delivered and spent `retries` are never retried.
   */
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
  const apiKey = opts.apiKey ?? envKey(wire)
  // Checked further only without a key or a custom `fetch` (which may add one itself).
  if (!apiKey && !opts.fetch) assertCredential(opts, wire)
  // The set-up is in helpers of their own: V8 optimizes a function once the bytecode it has run
  // adds up, so a body this size, run once per client, was compiled inside the first thousand
  // clients of a host making one per run; the helpers each run a fraction of it.
  const headers = requestHeaders(wire, apiKey, opts.headers)
  const redact = headerRedactor(headers, opts.headers ? Object.keys(opts.headers) : [])
  const transport = opts.fetch ? fetchTransport(opts.fetch, url) : undiciTransport(url)
  const policy = retryPolicy(opts)
  const { model, systemPrompt, requestParams, bodyTransform, llmGate } = opts

  // Not async: handing back the retry loop's promise saves the extra ticks of a returned promise.
  function callOnce(call: ModelCall): Promise<ModelTurn> {
    let payload: string
    try {
      let body = wire.body({
        model,
        system: systemText(systemPrompt, call.skillsPrompt),
        messages: call.messages,
        tools: call.tools,
        stream: call.stream,
        params: requestParams,
        output: call.output,
      })
      if (bodyTransform) body = bodyTransform(body)
      payload = JSON.stringify(body)
    } catch (error) {
      return Promise.reject(error)
    }
    // Under a timeout (or already aborted) every attempt is `withRetries`' loop's. Else the first
    // attempt is the request's promise and retries itself when it fails (`first`): no `then`
    // layer, closure and promise of `withRetries` per request.
    if (policy.timeoutMs !== undefined || call.signal?.aborted)
      return withRetries(policy, call.signal, (attempt) => attemptOnce(call, payload, attempt, false))
    return attemptOnce(call, payload, { signal: call.signal, delivered: false }, true)
  }

  async function attemptOnce(
    call: ModelCall,
    payload: string,
    attempt: Attempt,
    first: boolean,
  ): Promise<ModelTurn> {
    try {
      let reply: HttpReply
      // A failure to send, mapped here (see `Transport`), in this frame.
      try {
        reply = await transport({ headers, body: payload, signal: attempt.signal })
      } catch (error) {
        throw transportError(error, attempt.signal)
      }
      if (reply.status < 200 || reply.status >= 300)
        throw httpErrorOf(reply, await reply.text().catch(() => ""))
      if (!call.stream) return wire.parse(parseJSON(await reply.text()))
      return await readStream(call, reply, attempt)
    } catch (error) {
      // Scrubbed before `onError` or the caller sees it.
      const failed = ToolnexusError.isInstance(error) ? redact(error as ToolnexusError) : error
      if (!first) throw failed
      return retryFirst(policy, call.signal, failed, attempt, (next) =>
        attemptOnce(call, payload, next, false),
      )
    }
  }

  /** Feeds a streamed reply to the call's listeners; output handed over is never repeated by a retry. */
  async function readStream(call: ModelCall, reply: HttpReply, attempt: Attempt): Promise<ModelTurn> {
    const { onText, onRefusal, onReasoning } = call
    const stream = wire.streamAccumulator({
      onText: onText
        ? (delta) => {
            attempt.delivered = true
            onText(delta)
          }
        : undefined,
      onRefusal: onRefusal
        ? (delta) => {
            attempt.delivered = true
            onRefusal(delta)
          }
        : undefined,
      onReasoning: onReasoning
        ? (delta) => {
            attempt.delivered = true
            onReasoning(delta)
          }
        : undefined,
    })
    try {
      for await (const event of readSSE(reply.chunks())) stream.accept(event)
    } catch (error) {
      await reply.discard().catch(() => {})
      throw error
    }
    return stream.finish()
  }

  /** The one request of `translate`: hooks once, the shared retries and transport. */
  async function translate(req: TranslateRequest): Promise<TranslateResult> {
    if (typeof req !== "object" || req === null || !Array.isArray(req.messages)) {
      throw new ConfigError("translate needs { messages: [...] } (OpenAI chat messages)")
    }
    let { messages, tools } = translateInput(wire.style, systemPrompt, req)
    const hooks = opts.hooks
    if (hooks?.beforeLLM) {
      const changed = await hooks.beforeLLM({
        messages: messages as Message[],
        tools: tools as Tool[],
        model,
        turn: 1,
      })
      if (changed?.messages) messages = changed.messages as unknown[]
      if (changed?.tools) tools = changed.tools as unknown[]
    }
    let body = withRequestParams(
      translateBody(wire.style, model, systemPrompt, req, messages, tools),
      requestParams,
    )
    if (bodyTransform) body = bodyTransform(body)
    const payload = JSON.stringify(body)
    const data = await withRetries(policy, req.signal, async (attempt) => {
      try {
        let reply: HttpReply
        try {
          reply = await transport({ headers, body: payload, signal: attempt.signal })
        } catch (error) {
          throw transportError(error, attempt.signal)
        }
        if (reply.status < 200 || reply.status >= 300)
          throw httpErrorOf(reply, await reply.text().catch(() => ""))
        return parseJSON(await reply.text()) as Record<string, unknown>
      } catch (error) {
        throw ToolnexusError.isInstance(error) ? redact(error as ToolnexusError) : error
      }
    })
    if (typeof data !== "object" || data === null)
      throw new LLMResponseError("the LLM endpoint answered with no JSON object")
    const result = translateResult(wire.style, data, model)
    // The hook sees the turn as the loop's hooks do; the provider's reply stays on `result.raw`.
    await hooks?.afterLLM?.({ response: translatedTurn(result), model, turn: 1 })
    return result
  }

  return buildClient(
    {
      model,
      dialect: wire.dialect,
      // gen_ai.provider.name: both OpenAI APIs are "openai".
      endpoint: { provider: wire.style === "anthropic" ? "anthropic" : "openai", model, url },
      callModel: llmGate ? (call) => llmGate(() => callOnce(call)) : callOnce,
      translate,
      fetch: opts.fetch,
    },
    opts,
  )
}

/** The style's headers, then the user's: names are case-insensitive, so a user's `Authorization` replaces ours. */
function requestHeaders(
  wire: WireFormat,
  apiKey: string | undefined,
  own: Record<string, string> | undefined,
): Record<string, string> {
  const headers = { ...wire.headers(apiKey) }
  if (own) for (const [name, value] of Object.entries(own)) headers[name.toLowerCase()] = value
  return headers
}

function retryPolicy(opts: ClientOptions): RetryPolicy {
  return {
    retries: nonNegative("retries", opts.retries, 2),
    retryBaseMs: nonNegative("retryBaseMs", opts.retryBaseMs, 500),
    maxRetryDelayMs: nonNegative("maxRetryDelayMs", opts.maxRetryDelayMs, 60_000),
    timeoutMs: opts.timeoutMs === undefined ? undefined : nonNegative("timeoutMs", opts.timeoutMs, 0),
    onError: opts.onError,
  }
}

const WIRES: Record<string, WireFormat> = {
  openai: openaiWire,
  anthropic: anthropicWire,
  "openai-responses": responsesWire,
}

function wireOf(opts: ClientOptions): WireFormat {
  if (typeof opts !== "object" || opts === null) throw new ConfigError("createClient needs an options object")
  if (typeof opts.baseUrl !== "string" || !/^https?:\/\//.test(opts.baseUrl)) {
    throw new ConfigError(`baseUrl must be an http(s) URL, got ${JSON.stringify(opts.baseUrl)}`)
  }
  if (typeof opts.model !== "string" || opts.model === "")
    throw new ConfigError("model must be a non-empty string")
  const wire = Object.hasOwn(WIRES, opts.style) ? WIRES[opts.style] : undefined
  if (wire) return wire
  throw new ConfigError(
    `style must be "openai", "anthropic" or "openai-responses", got ${JSON.stringify(opts.style)}`,
  )
}

function envKey(wire: WireFormat): string | undefined {
  for (const name of wire.keyEnv) {
    const value = process.env[name]
    if (value) return value
  }
  return undefined
}

/** Headers that carry a credential when the user sets them. */
const CREDENTIAL_HEADERS = new Set(["authorization", "x-api-key", "api-key", "proxy-authorization"])

/**
 * A remote endpoint without a key would fail every request with 401; say so at once. Loopback
 * servers (local models, proxies, fakes) usually need none; a custom `fetch` may add it itself.
 */
function assertCredential(opts: ClientOptions, wire: WireFormat): void {
  if (isLoopback(opts.baseUrl)) return
  if (Object.keys(opts.headers ?? {}).some((name) => CREDENTIAL_HEADERS.has(name.toLowerCase()))) return
  throw new ConfigError(
    `no API key for ${opts.baseUrl}: pass apiKey or set ${wire.keyEnv.join(" or ")} ` +
      "(loopback endpoints need none)",
  )
}

function isLoopback(baseUrl: string): boolean {
  let host: string
  try {
    host = new URL(baseUrl).hostname.toLowerCase()
  } catch {
    return false
  }
  return (
    host === "localhost" ||
    host.endsWith(".localhost") ||
    host === "[::1]" ||
    host === "::1" ||
    /^127(\.\d{1,3}){3}$/.test(host)
  )
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
