import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import type { EndpointStyle } from "../types.js"
import { buildRequestView, type FakeRequestView } from "./request-view.js"
import {
  anthropicMessage,
  anthropicStreamFrames,
  errorBody,
  formatSse,
  openaiCompletion,
  openaiStreamFrames,
  responsesObject,
  responsesStreamFrames,
  type SseFrame,
  type WireReply,
  type WireToolCall,
} from "./wire.js"

/** A tool call the fake model makes. */
export interface FakeToolCall {
  /** The call id; generated (`call_…` / `toolu_…`, unique per server) when absent. */
  id?: string
  /** The name of the tool called, as the client's toolkit knows it. */
  name: string
  /**
   * The arguments: an object is serialised as JSON; a string is the raw text the "model" produced
   * and may be invalid JSON. OpenAI receives the string verbatim. Anthropic streams it verbatim as
   * `partial_json`; non-streaming Anthropic needs an object `input`, so invalid JSON becomes `{}`
   * there: invalid arguments can only be reproduced with OpenAI or with Anthropic streaming.
   */
  arguments: Record<string, unknown> | string
}

/** One scripted answer of the fake model, or a scripted failure. */
export interface FakeReply {
  /** Assistant text. With a non-2xx `status` it is the error message instead. */
  text?: string
  /** Tool calls the reply makes; default none. */
  toolCalls?: FakeToolCall[]
  /** The model refuses with this text (OpenAI `refusal`, Anthropic `stop_reason: "refusal"`, a Responses refusal part). */
  refusal?: string
  /**
   * The reply is cut off: `maxOutputTokens` (OpenAI `length`, Anthropic `max_tokens`, Responses
   * `incomplete` / `max_output_tokens`) or `contentFilter` (OpenAI `content_filter`, Responses
   * `incomplete` / `content_filter`; Anthropic, which has no such stop, `refusal`).
   */
  cutOff?: "maxOutputTokens" | "contentFilter"
  /**
   * A streaming request gets a stream that opens with this error event, in the style's own shape
   * (e.g. `{ type: "overloaded_error" }`); a non-streaming one is answered normally.
   */
  streamError?: {
    /** The provider's error type, e.g. `overloaded_error` (transient types are retried by a client). */
    type: string
    /** The error event's message text; default none. */
    message?: string
  }
  /** Reported token usage; defaults to 10 prompt and 5 completion tokens. */
  usage?: {
    /** Input tokens reported; default 10. */
    promptTokens?: number
    /** Output tokens reported; default 5. */
    completionTokens?: number
  }
  /** HTTP status (default 200); non-2xx sends an error body in the style's own shape (or `rawBody`). */
  status?: number
  /** Extra response headers, e.g. `{ "retry-after": "1" }`; they override the defaults. */
  headers?: Record<string, string>
  /**
   * Sent verbatim with `status`, for malformed replies (non-JSON, missing `choices`, broken SSE).
   * Its content type defaults to `text/event-stream` for a 2xx answer to a streaming request, else
   * `application/json`.
   */
  rawBody?: string
  /** Wait this long before answering; the wait ends early if the client disconnects. */
  delayMs?: number
  /** Never answer (abort and timeout tests); released when the client disconnects or on `close()`. */
  hang?: boolean
  /** Destroy the socket without a response (network-error tests). */
  dropConnection?: boolean
}

/** A reply, or a function computing one from the request it answers. */
export type FakeReplySource = FakeReply | ((req: FakeRequestView) => FakeReply)

/** A reply given whenever a request matches, up to `times` times. */
export interface FakeRule {
  /** A string (substring) or RegExp tested against `lastUserText`, or a predicate on the request. */
  match: string | RegExp | ((req: FakeRequestView) => boolean)
  /** The reply to a matching request, or a function computing it from the request. */
  reply: FakeReplySource
  /** How many requests the rule may answer; unlimited when absent. */
  times?: number
}

/** Options of {@link createFakeLLMServer}. */
export interface FakeLLMServerOptions {
  /** Rules, tried in order before the queue. */
  rules?: FakeRule[]
  /** Replies given in order (FIFO) to requests no rule matched. */
  replies?: FakeReplySource[]
  /** The reply when no rule matches and the queue is empty; kept by `reset()`. */
  fallback?: FakeReplySource
}

/**
 * A scripted fake LLM HTTP server speaking the OpenAI chat-completions, OpenAI Responses and
 * Anthropic messages wire formats, streaming and not, on 127.0.0.1.
 *
 * Routes: `POST /v1/chat/completions` and `POST /chat/completions` (OpenAI), `POST /v1/responses`
 * and `POST /responses` (Responses), `POST /v1/messages` (Anthropic); anything else is a 404 and a body that is not a JSON object a 400. A reply is the first
 * matching rule with uses left, else the next queued reply, else the fallback, else an HTTP 500 whose
 * message names the unscripted request.
 */
export interface FakeLLMServer {
  /** `http://127.0.0.1:PORT`; OpenAI and Responses clients use `${url}/v1` as base URL, Anthropic clients `url`. */
  readonly url: string
  /** Every routed request with a JSON-object body, in order of arrival. */
  readonly requests: readonly FakeRequestView[]
  /** Requests received whose response has neither finished nor lost its connection. */
  readonly inFlight: number
  /** Appends a rule after the existing ones. */
  addRule(rule: FakeRule): void
  /** Appends replies to the queue. */
  enqueue(...replies: FakeReplySource[]): void
  /** Clears rules, queue and recorded requests (the fallback stays). */
  reset(): void
  /** Stops the server, ending hanging requests and keep-alive connections. Idempotent. */
  close(): Promise<void>
}

/** Starts a {@link FakeLLMServer} on 127.0.0.1 with a random free port. */
export async function createFakeLLMServer(options: FakeLLMServerOptions = {}): Promise<FakeLLMServer> {
  const fake = new ScriptedServer(options)
  await fake.listen()
  return fake
}

const ROUTES = new Map<string, EndpointStyle>([
  ["/v1/chat/completions", "openai"],
  ["/chat/completions", "openai"],
  ["/v1/messages", "anthropic"],
  ["/v1/responses", "openai-responses"],
  ["/responses", "openai-responses"],
])

interface RuleState {
  rule: FakeRule
  used: number
}

class ScriptedServer implements FakeLLMServer {
  readonly #server: Server
  readonly #fallback: FakeReplySource | undefined
  #rules: RuleState[] = []
  #queue: FakeReplySource[] = []
  readonly #requests: FakeRequestView[] = []
  #inFlight = 0
  #ids = 0
  #url = ""
  #closing: Promise<void> | undefined

  constructor(options: FakeLLMServerOptions) {
    this.#fallback = options.fallback
    for (const rule of options.rules ?? []) this.addRule(rule)
    this.enqueue(...(options.replies ?? []))
    this.#server = createServer((req, res) => {
      this.#inFlight++
      res.once("close", () => this.#inFlight--)
      this.#handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) sendJson(res, 500, errorBody("openai", 500, `fake LLM server bug: ${err}`))
        else res.destroy()
      })
    })
  }

  get url(): string {
    return this.#url
  }

  get requests(): readonly FakeRequestView[] {
    return this.#requests
  }

  get inFlight(): number {
    return this.#inFlight
  }

  listen(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#server.once("error", reject)
      this.#server.listen(0, "127.0.0.1", () => {
        this.#server.off("error", reject)
        this.#url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`
        resolve()
      })
    })
  }

  addRule(rule: FakeRule): void {
    this.#rules.push({ rule, used: 0 })
  }

  enqueue(...replies: FakeReplySource[]): void {
    this.#queue.push(...replies)
  }

  reset(): void {
    this.#rules = []
    this.#queue = []
    // Truncate in place so arrays a test already holds stay in sync.
    this.#requests.length = 0
  }

  close(): Promise<void> {
    this.#closing ??= new Promise((resolve) => {
      this.#server.close(() => resolve())
      // Without this, close() would wait for hanging requests and idle keep-alive sockets.
      this.#server.closeAllConnections()
    })
    return this.#closing
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "/").split("?")[0]!
    const style = req.method === "POST" ? ROUTES.get(path) : undefined
    if (style === undefined) {
      const message = `fake LLM server: no route for ${req.method} ${path}`
      sendJson(res, 404, errorBody("openai", 404, message, "not_found"))
      return
    }
    let raw: string
    try {
      raw = await readBody(req)
    } catch {
      res.destroy()
      return
    }
    const body = parseObject(raw)
    if (body === undefined) {
      const message = "fake LLM server: the request body is not a JSON object"
      sendJson(res, 400, errorBody(style, 400, message))
      return
    }
    const view = buildRequestView(this.#requests.length, style, path, req.headers, body)
    this.#requests.push(view)
    let reply: FakeReply | undefined
    try {
      reply = this.#select(view)
    } catch (err) {
      const message = `fake LLM server: the reply function for request #${view.index} threw: ${err}`
      sendJson(res, 500, errorBody(style, 500, message, "reply_function_threw"))
      return
    }
    if (reply === undefined) {
      // Fail loudly: a test that forgot to script a turn should not hang or get a plausible answer.
      const message =
        `fake LLM server: no scripted reply for request #${view.index} ` +
        `(lastUserText: ${JSON.stringify(view.lastUserText)}); add a rule, enqueue a reply or set a fallback`
      sendJson(res, 500, errorBody(style, 500, message, "no_scripted_reply"))
      return
    }
    await this.#respond(view, reply, req, res)
  }

  /** Picks the reply for a request: matching rule, queue, fallback; undefined when none is scripted. */
  #select(view: FakeRequestView): FakeReply | undefined {
    const state = this.#rules.find(({ rule, used }) => (rule.times ?? Infinity) > used && matches(rule, view))
    let source: FakeReplySource | undefined
    if (state !== undefined) {
      state.used++
      source = state.rule.reply
    } else {
      source = this.#queue.shift() ?? this.#fallback
    }
    return typeof source === "function" ? source(view) : source
  }

  async #respond(view: FakeRequestView, reply: FakeReply, req: IncomingMessage, res: ServerResponse) {
    const gone = new AbortController()
    res.once("close", () => gone.abort())
    if (reply.delayMs !== undefined && reply.delayMs > 0) await sleep(reply.delayMs, gone.signal)
    if (gone.signal.aborted) return
    if (reply.dropConnection) {
      req.socket.destroy()
      return
    }
    // Nothing to do: the socket is closed by the client or by close().
    if (reply.hang) return

    const status = reply.status ?? 200
    const ok = status >= 200 && status < 300
    const extra = lowerCaseKeys(reply.headers)
    if (reply.rawBody !== undefined) {
      const type = ok && view.stream ? "text/event-stream" : "application/json"
      send(res, status, { "content-type": type, ...extra }, reply.rawBody)
      return
    }
    if (!ok) {
      const message = reply.text ?? `fake LLM server: scripted HTTP ${status}`
      sendJson(res, status, errorBody(view.style, status, message), extra)
      return
    }
    const wire = this.#toWire(view, reply)
    const format = FORMATS[view.style]
    if (!view.stream) {
      sendJson(res, status, format.reply(wire), extra)
      return
    }
    await stream(res, status, format.frames(wire), extra)
  }

  #toWire(view: FakeRequestView, reply: FakeReply): WireReply {
    const openai = view.style !== "anthropic"
    const toolCalls = (reply.toolCalls ?? []).map((call): WireToolCall => {
      const raw = typeof call.arguments === "string"
      const argumentsJson = raw ? (call.arguments as string) : JSON.stringify(call.arguments)
      return {
        id: call.id ?? `${openai ? "call_" : "toolu_"}fake${++this.#ids}`,
        name: call.name,
        argumentsJson,
        input: raw ? (parseJson(argumentsJson) ?? {}) : call.arguments,
      }
    })
    const prefix = { openai: "chatcmpl-", anthropic: "msg_", "openai-responses": "resp_" }[view.style]
    const wire: WireReply = {
      id: `${prefix}fake${++this.#ids}`,
      model: view.model,
      text: reply.text,
      toolCalls,
      promptTokens: reply.usage?.promptTokens ?? 10,
      completionTokens: reply.usage?.completionTokens ?? 5,
    }
    if (reply.refusal !== undefined) wire.refusal = reply.refusal
    if (reply.cutOff !== undefined) wire.cutOff = reply.cutOff
    if (reply.streamError !== undefined) wire.streamError = reply.streamError
    return wire
  }
}

/** Each style's reply body and stream frames. */
const FORMATS: Record<
  EndpointStyle,
  { reply(wire: WireReply): unknown; frames(wire: WireReply): SseFrame[] }
> = {
  openai: { reply: openaiCompletion, frames: openaiStreamFrames },
  anthropic: { reply: anthropicMessage, frames: anthropicStreamFrames },
  "openai-responses": { reply: responsesObject, frames: responsesStreamFrames },
}

function matches(rule: FakeRule, view: FakeRequestView): boolean {
  const { match } = rule
  if (typeof match === "string") return view.lastUserText.includes(match)
  if (typeof match === "function") return match(view)
  // A global or sticky RegExp keeps state between test() calls; start from 0 every time.
  match.lastIndex = 0
  return match.test(view.lastUserText)
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString("utf8")
}

function parseJson(raw: string): unknown {
  try {
    return JSON.parse(raw)
  } catch {
    return undefined
  }
}

function parseObject(raw: string): Record<string, any> | undefined {
  const value = parseJson(raw)
  return typeof value === "object" && value !== null && !Array.isArray(value) ? value : undefined
}

function lowerCaseKeys(headers: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers ?? {})) out[name.toLowerCase()] = value
  return out
}

function send(res: ServerResponse, status: number, headers: Record<string, string>, body: string): void {
  res.writeHead(status, { "content-length": String(Buffer.byteLength(body)), ...headers })
  res.end(body)
}

function sendJson(res: ServerResponse, status: number, body: unknown, extra: Record<string, string> = {}) {
  send(res, status, { "content-type": "application/json", ...extra }, JSON.stringify(body))
}

async function stream(
  res: ServerResponse,
  status: number,
  frames: SseFrame[],
  extra: Record<string, string>,
) {
  res.writeHead(status, { "content-type": "text/event-stream", "cache-control": "no-cache", ...extra })
  for (const frame of frames) {
    if (res.destroyed) return
    res.write(formatSse(frame))
    // Yield between frames so clients see the stream arrive in several reads, as over a real network.
    await new Promise((resolve) => setImmediate(resolve))
  }
  res.end()
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms)
    signal.addEventListener("abort", done, { once: true })
    function done() {
      clearTimeout(timer)
      signal.removeEventListener("abort", done)
      resolve()
    }
  })
}
