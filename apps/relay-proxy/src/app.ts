import { randomUUID } from "node:crypto"
import {
  AnswerConflictError,
  AnswerExpiredError,
  AnswerMismatchError,
  type Client,
  ConfigError,
  EngineRunError,
  type EndpointStyle,
  type HostRelayOptions,
  type JSONSchema,
  type Logger,
  type Message,
  type Prompt,
  type RunHost,
  type RunResult,
  type RuntimeEvent,
  type StreamEvent,
  type StreamListener,
  ToolnexusError,
  UnknownRequestError,
  hostAgent,
} from "@toolnexus/core"
import { ClaimLostError, type DurableStore, createMemoryStore, createStoreHost } from "@toolnexus/durable"
import { type Context, Hono } from "hono"
import { bodyLimit } from "hono/body-limit"
import { callerOf } from "./caller-auth.js"
import { type CallerParams, checkToolChoice, parseCallerParams, withCallerParams } from "./caller-params.js"
import { type EventWriter, chatChunkWriter, chatCompletion } from "./chat-response.js"
import {
  type ProposedTurn,
  failedForGood,
  findContinuation,
  haltOf,
  recordDelivery,
  rememberHalt,
  settleHalt,
} from "./continuation.js"
import { eventStream } from "./event-stream.js"
import { forgetResponse, rememberResponse, storedResponse } from "./item-store.js"
import {
  type ChatMessage,
  type ChatToolDeclaration,
  parseChatRequest,
  toUpstreamMessages,
  trailingToolMessages,
} from "./openai-shapes.js"
import { ProxyError, badRequest, conflict, errorBody, expiredError, failedTooOften } from "./proxy-error.js"
import { type CallerCall, type RelayTurn, relayTurn } from "./relay-turn.js"
import { parseResponsesRequest } from "./responses-request.js"
import {
  type MessageLayout,
  outputItems,
  responseEventWriter,
  responseIdentity,
  responseObject,
} from "./responses-output.js"
import { upstreamError } from "./upstream-error.js"

/** What both forms of {@link RelayProxyOptions} take. */
export interface RelayProxyCommonOptions {
  /** The upstream's style, which decides the stored transcript's message shape; default "openai". */
  style?: EndpointStyle
  /** The upstream model id, listed by `GET /v1/models`; without it the list is empty. */
  model?: string
  /** Bearer keys a caller must present (`Authorization: Bearer <key>`); none = no authentication. */
  apiKeys?: string[]
  /** The largest request body accepted, in bytes; default 1 MiB. Larger ⇒ 413. */
  maxBodyBytes?: number
  /** Strings (e.g. the upstream API key) that must never appear in an error body; replaced by `***`. */
  secrets?: string[]
  /** Tool results arriving later than this after the request that halted on them are refused (410 `answer_expired`); default never. */
  pendingTtlMs?: number
  /**
   * Where the proxy reports what no caller sees in full: failures (5xx, upstream errors) at
   * `error` with their code, refused tool results (409 conflict, 410 expired) at `info`, never
   * with a stack. Secrets are scrubbed as in error bodies.
   */
  logger?: Logger
  /** The clock `pendingTtlMs` deadlines are counted from, in epoch ms; default `Date.now`. */
  now?: () => number
}

/**
 * The proxy over a host (§17): each conversation is a run of `agent` on `host`, started with
 * the caller's history, tools (relay tools, besides the agent's own toolkit) and output
 * schema (`HostStartOptions.relay`), and resumed by `host.deliverAnswer` with the caller's
 * results. The host must honour `relay` (a store host does; an engine refuses it).
 */
export interface RelayProxyHostOptions extends RelayProxyCommonOptions {
  /** The host the conversations run on (`createStoreHost`); its `agent` has the upstream model's client. */
  host: RunHost
  /** The host's client agent a conversation is a run of. */
  agent: string
  /**
   * Where the caller-facing tool-call index and returned Responses items live (any durable
   * store, the host's own included); share it to share them between proxies. Default: this
   * process's memory, forgotten on a restart (the host keeps the runs, not the caller's ids).
   */
  store?: DurableStore
}

/** The round-3 form: shorthand for a `createStoreHost` of one agent (`client`) on `store`. */
export interface RelayProxyShorthandOptions extends RelayProxyCommonOptions {
  /**
   * The upstream model, on `store` (`createClient({ ..., store })`). Give it no `waitFor` (the
   * proxy relies on runs halting on relay calls) and `retries: 0`: the caller's SDK retries,
   * and retries here would multiply its attempts.
   */
  client: Client
  /** Where halted conversations, the tool-call index and returned items live; share it to share them. */
  store: DurableStore
  /** Lease of the claim held while a conversation resumes (renewed every third of it); default 30 s. */
  claimLeaseMs?: number
  /**
   * Resume attempts (claims) of one set of tool results before the conversation is `failed`
   * and further results are refused (409) until `retryFailed`; default 3.
   */
  claimMaxAttempts?: number
}

/** Options of {@link createRelayProxy}: `{ host, agent }`, or the shorthand `{ client, store }`. */
export type RelayProxyOptions = RelayProxyHostOptions | RelayProxyShorthandOptions

/** The HTTP header naming the stored conversation a response belongs to (for logs and debugging). */
export const CONVERSATION_HEADER = "x-relay-conversation"

/** The default of {@link RelayProxyOptions.maxBodyBytes}: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024

type Env = { Variables: { caller: string | undefined } }

/** One caller request, whichever endpoint it came to. */
interface RelayRequest {
  messages: ChatMessage[]
  /** `undefined` when the request declared none (a continuation then uses the stored ones). */
  tools: ChatToolDeclaration[] | undefined
  /** The JSON Schema a structured answer must match. */
  output: JSONSchema | undefined
  params: CallerParams
}

/** Who asks, the signal that aborts the upstream call when the caller hangs up, and who listens. */
interface CallerContext {
  caller: string | undefined
  signal: AbortSignal
  /** Hears the run's events (a streamed request); with it the upstream is asked with streaming requests. */
  onEvent?: StreamListener
  /** Told the stored conversation as soon as it is known (a continuation, before the model is asked). */
  onConversation?: (conversation: string) => void
}

/** What a relayed request produced: the turn to render, and the conversation when one is stored. */
interface Relayed {
  conversation?: string
  turn: RelayTurn
}

/**
 * Creates the OpenAI-compatible relay proxy. `POST /v1/chat/completions` and `POST /v1/responses`
 * run the caller's conversation on the upstream model with the caller's tools as relay tools: a
 * model turn that calls them comes back as tool calls, and the caller's tool results resume the
 * stored run from that turn, without asking the model again. `GET /v1/models` lists the model.
 *
 * @example
 * const store = await openStore("sqlite:./.data/relay.db")
 * const client = createClient({ baseUrl: "https://api.openai.com/v1", style: "openai", model: "gpt-4.1", retries: 0, store })
 * serve({ fetch: createRelayProxy({ client, store, model: "gpt-4.1" }).fetch, port: 8787 })
 */
export function createRelayProxy(opts: RelayProxyOptions): Hono<Env> {
  const { host, agent, store } = hostOf(opts)
  const style = opts.style ?? "openai"
  const secrets = (opts.secrets ?? []).filter((s) => s.length > 0)
  const maxBodyBytes = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  const now = opts.now ?? Date.now
  const { logger } = opts
  const app = new Hono<Env>()

  /** A caller's new conversation: the whole request is the history, ending in its user turn. */
  async function start(request: RelayRequest, { caller, signal, onEvent }: CallerContext): Promise<Relayed> {
    const { messages } = request
    const tools = request.tools ?? []
    checkToolChoice(request.params, tools)
    const last = messages.at(-1)!
    if (last.role !== "user") {
      throw badRequest(
        "the last message must be a user message, or tool results answering tool calls this proxy returned",
        "messages",
      )
    }
    const conversation = `conv-${randomUUID()}`
    const { history, input } = splitTurn(toUpstreamMessages(messages, style), last.content)
    const relay = relayOf(request, tools, onEvent !== undefined, history)
    const listen = hostListener(onEvent)
    await hosted(() => host.start(agent, conversation, input, { relay, signal, onEvent: listen }))
    const result = await hosted(() => host.result(conversation) as Promise<RunResult>)
    if (result.status !== "pending" || !result.pending) return { turn: relayTurn(result, []) }
    return { conversation, turn: await halted(conversation, result, tools, caller) }
  }

  /** A follow-up carrying tool results: resume the stored run from its halted turn. */
  async function resume(
    toolMessages: Extract<ChatMessage, { role: "tool" }>[],
    request: RelayRequest,
    { caller, signal, onEvent, onConversation }: CallerContext,
  ): Promise<Relayed> {
    const results = toolMessages.map((m) => ({ id: m.toolCallId, output: m.content }))
    const followed = await findContinuation({ index: store, host }, results, caller)
    // The same results again (a retry whose response was lost): the same turn, no model call.
    if ("replay" in followed) return { conversation: followed.conversation, turn: followed.replay }
    const found = followed.continuation
    const { conversation } = found
    onConversation?.(conversation)
    const tools = request.tools ?? found.tools
    checkToolChoice(request.params, tools)
    let result: RunResult
    if (found.applied) {
      // These results were applied by a delivery that never answered (its process died and a
      // sweep finished the run): what the run did with them is the turn, asked of no model.
      result = (await hosted(() => host.result(conversation, { signal }))) as RunResult
    } else {
      await recordDelivery(store, found)
      try {
        // The host's exactly-once delivery: its claim makes a duplicate delivery of the same
        // results (a client retry racing the first) resume the run once, a heartbeat keeps it
        // while the model answers, settled calls are checkpointed under it, and a failed attempt
        // releases it with the results kept, so the caller's retry (e.g. after a 429) resumes.
        await hosted(() =>
          host.deliverAnswer(found.answer, {
            relay: relayOf(request, tools, onEvent !== undefined),
            signal,
            onEvent: hostListener(onEvent),
          }),
        )
        result = (await host.result(conversation)) as RunResult
      } catch (error) {
        throw await refusedResume(error, found.answer.id)
      }
    }
    const proposed =
      result.status === "pending" && result.pending !== undefined
        ? nextHalt(result, tools, caller)
        : { turn: relayTurn(result, []) }
    return { conversation, turn: await settleHalt(store, found, proposed) }
  }

  /**
   * What a call gives the run besides its input: the caller's tools as relay tools, its output
   * schema, the deadline of the request it may halt on (`pendingTtlMs`, judged by the host's
   * one expiry rule) and, for a start, the history.
   */
  function relayOf(
    request: RelayRequest,
    tools: ChatToolDeclaration[],
    streamed: boolean,
    history?: HostRelayOptions["history"],
  ): HostRelayOptions {
    return {
      tools: tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters })),
      // A caller that wants one answer gets one upstream request, not a stream.
      stream: streamed,
      ...(history !== undefined ? { history } : {}),
      ...(request.output !== undefined ? { output: request.output } : {}),
      ...(opts.pendingTtlMs !== undefined
        ? { expiresAt: new Date(now() + opts.pendingTtlMs).toISOString() }
        : {}),
    }
  }

  /**
   * The caller's answer to a resume the host refused: 410 when the results come after the
   * request's `expiresAt` (every door's contract for an expired answer), else 409, retryable
   * unless the results failed too often.
   */
  async function refusedResume(error: unknown, requestId: string): Promise<unknown> {
    if (AnswerExpiredError.isInstance(error)) return expiredError(error.requestId, error.expiresAt)
    // A lost claim leaves the results with the claim: a retry resumes with them.
    const refused =
      AnswerConflictError.isInstance(error) ||
      UnknownRequestError.isInstance(error) ||
      ClaimLostError.isInstance(error)
    if (!refused) return error
    if (await failedForGood(host, requestId)) return failedTooOften()
    // Another delivery of these results is running: a retry in a moment gets its turn replayed.
    return new ProxyError(
      409,
      "conflict_error",
      "these tool results are being applied by another request; retry to get its answer",
      { param: "messages", headers: { "retry-after": "1" }, retryable: true },
    )
  }

  /** Indexes a halted run's relay calls under fresh caller ids and summarises the turn. */
  async function halted(
    conversation: string,
    result: RunResult,
    tools: ChatToolDeclaration[],
    caller: string | undefined,
  ): Promise<RelayTurn> {
    const calls: CallerCall[] = await rememberHalt(store, conversation, result.pending!, tools, { caller })
    return haltedTurn(result, calls)
  }

  /** A resumed run's new halt as the caller will see it (fresh caller ids), not indexed yet. */
  function nextHalt(
    result: RunResult,
    tools: ChatToolDeclaration[],
    caller: string | undefined,
  ): ProposedTurn {
    const { calls, entry } = haltOf(result.pending!, tools, { caller })
    return { turn: haltedTurn(result, calls), halt: entry }
  }

  /** Runs one caller request: a continuation when its messages end in tool results, else a new conversation. */
  async function relay(
    c: Context<Env>,
    request: RelayRequest,
    listen: Partial<CallerContext> = {},
  ): Promise<Relayed> {
    const context = { caller: c.get("caller"), signal: c.req.raw.signal, ...listen }
    const toolMessages = trailingToolMessages(request.messages)
    const relayed = await withCallerParams(request.params, () =>
      toolMessages.length > 0 ? resume(toolMessages, request, context) : start(request, context),
    )
    // The caller's model id is echoed, as a provider echoes the alias it was asked for.
    const model = request.params.model
    return model === undefined ? relayed : { ...relayed, turn: { ...relayed.turn, model } }
  }

  app.use("/v1/*", async (c, next) => {
    c.set("caller", callerOf(c.req.header("authorization"), opts.apiKeys))
    await next()
  })
  app.post(
    "/v1/*",
    bodyLimit({
      maxSize: maxBodyBytes,
      onError: () => {
        throw new ProxyError(413, "invalid_request_error", `the request body exceeds ${maxBodyBytes} bytes`, {
          code: "request_too_large",
          retryable: false,
        })
      },
    }),
  )

  /**
   * Streams one request's answer: text and refusal deltas as the upstream writes them, the rest
   * once the turn is done (`finish`). Nothing is sent before the first delta, so a failure up to
   * then is still an HTTP error status; a later one ends the stream with an error event.
   */
  function streamed<W extends EventWriter>(
    c: Context<Env>,
    request: RelayRequest,
    writerFor: (send: (frame: string) => void) => W,
    finish: (relayed: Relayed, writer: W) => Promise<void> | void,
  ): Promise<Response> {
    let writer: W | undefined
    let conversation: string | undefined
    // A structured answer may be replaced by its corrective turn, so it is sent once final.
    const onEvent: StreamListener | undefined =
      request.output === undefined
        ? (ev) => {
            if (ev.type === "text" || ev.type === "refusal") writer?.delta(ev.type, ev.delta)
          }
        : undefined
    return eventStream(
      async (send) => {
        writer = writerFor(send)
        const relayed = await relay(c, request, { onEvent, onConversation: (id) => (conversation = id) })
        conversation = relayed.conversation
        await finish(relayed, writer)
      },
      {
        headers: (): Record<string, string> =>
          conversation === undefined ? {} : { [CONVERSATION_HEADER]: conversation },
        lateFailure: (error) => writer?.fail(renderError(error, c).body.error),
      },
    )
  }

  app.post("/v1/chat/completions", async (c) => {
    const body = await jsonBody(c)
    const request = { ...parseChatRequest(body), params: parseCallerParams(body, style) }
    if (request.stream) {
      const model = request.params.model ?? opts.model
      const writerFor = (send: (frame: string) => void) =>
        chatChunkWriter(send, { includeUsage: request.includeUsage, model })
      return streamed(c, request, writerFor, ({ turn }, writer) => writer.finish(turn))
    }
    const { conversation, turn } = await relay(c, request)
    if (conversation !== undefined) c.header(CONVERSATION_HEADER, conversation)
    return c.json(chatCompletion(turn))
  })

  app.post("/v1/responses", async (c) => {
    const caller = c.get("caller")
    const body = await jsonBody(c)
    const parsed = await parseResponsesRequest(body, store, caller)
    const request = { ...parsed, params: parseCallerParams(body, style) }
    const echo = {
      instructions: request.instructions,
      previousResponseId: request.previousResponseId,
      tools: request.tools ?? [],
      store: request.store,
    }
    const identity = responseIdentity()
    /** The finished response, kept (with its items) unless the request said `store: false`. */
    const respond = async (turn: RelayTurn, message?: MessageLayout) => {
      const output = outputItems(turn, message)
      const response = responseObject(turn, output, echo, identity)
      if (request.store) await rememberResponse(store, response, [...request.items, ...output], caller)
      return response
    }
    if (request.stream) {
      // The opening frames describe the response before its turn: no output, no usage yet.
      const opening = responseObject(emptyTurn(request.params.model ?? opts.model), [], echo, identity)
      const writerFor = (send: (frame: string) => void) => responseEventWriter(send, opening)
      return streamed(c, request, writerFor, async ({ turn }, writer) => {
        // Kept before it is announced complete: its items must resolve once the caller has them.
        writer.finish(turn, await respond(turn, writer.layout()))
      })
    }
    const { conversation, turn } = await relay(c, request)
    if (conversation !== undefined) c.header(CONVERSATION_HEADER, conversation)
    return c.json(await respond(turn))
  })

  // `responses.retrieve`: a response kept because its request did not say `store: false`.
  app.get("/v1/responses/:id", async (c) =>
    c.json(await storedResponse(store, c.req.param("id"), c.get("caller"))),
  )

  // `responses.delete`: the caller's way to drop what it no longer needs (nothing expires on its own).
  app.delete("/v1/responses/:id", async (c) => {
    const id = c.req.param("id")
    await forgetResponse(store, id, c.get("caller"))
    return c.json({ id, object: "response", deleted: true })
  })

  app.get("/v1/models", (c) => c.json({ object: "list", data: opts.model ? [modelEntry(opts.model)] : [] }))
  app.get("/v1/models/:id", (c) => {
    const id = c.req.param("id")
    if (id !== opts.model) {
      throw new ProxyError(404, "invalid_request_error", `the model ${JSON.stringify(id)} does not exist`, {
        code: "model_not_found",
        param: "model",
      })
    }
    return c.json(modelEntry(id))
  })

  app.get("/healthz", (c) => c.json({ ok: true }))

  app.notFound((c) => {
    const error = new ProxyError(404, "invalid_request_error", `no route for ${c.req.method} ${c.req.path}`)
    return c.json(errorBody(error), 404)
  })

  /**
   * The proxy's answer to a failure: its status and headers, and the body with secrets
   * scrubbed. Also reported to `logger`: failures at `error`, refused results at `info`.
   */
  function renderError(err: unknown, c: Context<Env>) {
    const error = toProxyError(err, c.req.raw.signal.aborted)
    const body = errorBody(error)
    body.error.message = secrets.reduce((text, secret) => text.replaceAll(secret, "***"), error.message)
    if (logger) {
      const code = ToolnexusError.isInstance(err) ? err.code : (error.code ?? undefined)
      const data = { status: error.status, path: c.req.path, ...(code ? { code } : {}) }
      const line = `${c.req.method} ${c.req.path} ${error.status}: ${body.error.message}`
      if (error.status >= 500) logger.error(line, data)
      else if (error.status === 409 || error.status === 410) logger.info(`refused: ${line}`, data)
    }
    return { error, body }
  }

  app.onError((err, c) => {
    const { error, body } = renderError(err, c)
    return new Response(JSON.stringify(body), {
      status: error.status,
      headers: { "content-type": "application/json", ...error.headers },
    })
  })

  return app
}

async function jsonBody(c: Context<Env>): Promise<unknown> {
  try {
    return await c.req.json()
  } catch {
    throw badRequest("the request body is not valid JSON")
  }
}

/** The turn of a run halted on `calls`. */
function haltedTurn(result: RunResult, calls: CallerCall[]): RelayTurn {
  // Only relay tools are offered, so any other halt is a bug worth a loud 500.
  if (calls.length === 0)
    throw new Error(`the run halted on a ${result.pending?.kind} request, not on tool calls`)
  return relayTurn(result, calls)
}

/** The turn a streamed response stands for before the upstream answered: nothing yet. */
function emptyTurn(model: string | undefined): RelayTurn {
  const usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 }
  return { model: model ?? "", text: "", toolCalls: [], finishReason: "stop", usage }
}

function modelEntry(id: string) {
  return { id, object: "model", created: 0, owned_by: "relay-proxy" }
}

/** The host and agent the proxy talks to, and the store of its own records. */
function hostOf(opts: RelayProxyOptions): { host: RunHost; agent: string; store: DurableStore } {
  if ("host" in opts && opts.host !== undefined) {
    const given = opts as RelayProxyHostOptions & { client?: unknown }
    if (given.client !== undefined)
      throw new ConfigError(
        "createRelayProxy: give `{ host, agent }` or the shorthand `{ client, store }`, not both",
      )
    if (typeof given.host.deliverAnswer !== "function" || typeof given.host.start !== "function")
      throw new ConfigError("createRelayProxy: `host` must be a RunHost (createStoreHost)")
    if (typeof given.agent !== "string" || given.agent === "")
      throw new ConfigError("createRelayProxy: `agent` must name the host's client agent")
    return { host: given.host, agent: given.agent, store: given.store ?? createMemoryStore() }
  }
  const { client, store } = opts as RelayProxyShorthandOptions
  if (client?.conversationStore() !== store) {
    throw new ConfigError(
      "createRelayProxy: `client` must use `store` as its conversation store (createClient({ ..., store }))",
    )
  }
  const shorthand = opts as RelayProxyShorthandOptions
  const host = createStoreHost({
    store,
    agents: [hostAgent({ name: SHORTHAND_AGENT, client })],
    ...(shorthand.claimLeaseMs !== undefined ? { leaseMs: shorthand.claimLeaseMs } : {}),
    ...(shorthand.claimMaxAttempts !== undefined ? { maxAttempts: shorthand.claimMaxAttempts } : {}),
    // No sweeps: a caller's retry of its results resumes a run whose worker died, as in round 3;
    // an expired request stays open (refused 410) rather than resumed with nobody to read it.
    sweepEveryMs: false,
    // The proxy logs refusals and failures itself: the host's lines would repeat them.
  })
  return { host, agent: SHORTHAND_AGENT, store }
}

/**
 * The run's input and its history from the caller's transcript in the upstream's shape: the
 * last user turn is the input, what precedes it the history. An Anthropic user turn that
 * merged several messages (a system note, tool results) keeps its text blocks as the input's
 * parts; tool results beside them stay a turn of the history (Anthropic combines the two).
 */
function splitTurn(upstream: Message[], text: string): { history: Message[]; input: Prompt } {
  const history = upstream.slice(0, -1)
  const last = upstream.at(-1) as { content?: unknown } | undefined
  if (!Array.isArray(last?.content)) return { history, input: text }
  const blocks = last.content as { type: string; text?: string }[]
  const texts = blocks.filter((b) => b.type === "text")
  if (texts.length === blocks.length && texts.length > 1)
    return { history, input: texts.map((b) => ({ type: "text" as const, text: b.text ?? "" })) }
  const before = blocks.slice(0, -1)
  if (before.length === 0) return { history, input: text }
  return { history: [...history, { ...(last as Message), content: before } as Message], input: text }
}

/** A run's events for a stream listener: a client agent's run emits stream events only. */
function hostListener(listener: StreamListener | undefined) {
  return listener && ((ev: StreamEvent | RuntimeEvent) => listener(ev as StreamEvent))
}

/** The name of the shorthand host's one agent. */
const SHORTHAND_AGENT = "relay"

/**
 * Runs a host call, giving the caller what it refused in the caller's terms: an invalid tool
 * declaration (a `ConfigError` of its relay tools) is a 400 on `tools`, and a started run's
 * failure is the failure itself (an upstream 429 stays a 429).
 */
async function hosted<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call()
  } catch (error) {
    if (ConfigError.isInstance(error) && error.message.startsWith("relay tools: "))
      throw badRequest(`tools: ${error.message.slice("relay tools: ".length)}`, "tools")
    if (EngineRunError.isInstance(error) && (error as { cause?: unknown }).cause !== undefined)
      throw (error as { cause?: unknown }).cause
    throw error
  }
}

function toProxyError(error: unknown, callerGone: boolean): ProxyError {
  if (error instanceof ProxyError) return error
  if (ToolnexusError.isInstance(error)) {
    const upstream = upstreamError(error, callerGone)
    if (upstream) return upstream
    if (AnswerMismatchError.isInstance(error) || UnknownRequestError.isInstance(error)) {
      return conflict(error.message)
    }
  }
  const message = error instanceof Error ? error.message : String(error)
  return new ProxyError(500, "server_error", `internal error: ${message}`)
}
