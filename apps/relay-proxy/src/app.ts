import { randomUUID } from "node:crypto"
import {
  AnswerConflictError,
  AnswerMismatchError,
  type Client,
  ConfigError,
  type EndpointStyle,
  type RunResult,
  type Toolkit,
  ToolnexusError,
  UnknownRequestError,
  createToolkit,
  relayCallsOf,
  relayTool,
} from "@toolnexus/core"
import { type DurableStore, runWithAnswer } from "@toolnexus/durable"
import { Hono } from "hono"
import { findContinuation, forgetHalt, rememberHalt } from "./continuation.js"
import {
  type ChatRequest,
  type ChatToolDeclaration,
  chatCompletion,
  parseChatRequest,
  toUpstreamMessages,
  trailingToolMessages,
} from "./openai-shapes.js"
import { ProxyError, badRequest, errorBody } from "./proxy-error.js"

/** Options of {@link createRelayProxy}. */
export interface RelayProxyOptions {
  /** The upstream model. Give it no `waitFor`: the proxy relies on runs halting on relay calls. */
  client: Client
  /** Where halted conversations and the tool-call index live; share it to share conversations. */
  store: DurableStore
  /** The client's upstream style, which decides the stored transcript's message shape; default "openai". */
  style?: EndpointStyle
  /** Strings (e.g. the upstream API key) that must never appear in an error body; replaced by `***`. */
  secrets?: string[]
  /** Tool results arriving later than this after the tool calls went out are refused (409); default never. */
  pendingTtlMs?: number
  /** Lease of the claim held while a conversation resumes; default the store's (30 s). */
  claimLeaseMs?: number
}

/** The HTTP header naming the stored conversation a response belongs to (for logs and debugging). */
export const CONVERSATION_HEADER = "x-relay-conversation"

/**
 * Creates the OpenAI-compatible relay proxy: `POST /v1/chat/completions` runs the caller's
 * conversation on the upstream model with the caller's tools as relay tools. A model turn that
 * calls them comes back as `tool_calls`; the caller's `role: "tool"` follow-up resumes the stored
 * run from that turn, without asking the model again.
 *
 * @example
 * const store = await openStore("sqlite:./.data/relay.db")
 * const client = createClient({ baseUrl: "https://api.openai.com/v1", style: "openai", model: "gpt-4.1" })
 * serve({ fetch: createRelayProxy({ client, store }).fetch, port: 8787 })
 */
export function createRelayProxy(opts: RelayProxyOptions): Hono {
  const { client, store } = opts
  const style = opts.style ?? "openai"
  const secrets = (opts.secrets ?? []).filter((s) => s.length > 0)
  const app = new Hono()

  /** A caller's new conversation: the whole request is the history, ending in its user turn. */
  async function start(request: ChatRequest): Promise<{ conversation?: string; result: RunResult }> {
    const last = request.messages.at(-1)!
    if (last.role !== "user") {
      throw badRequest(
        "the last message must be a user message, or tool messages answering tool calls this proxy returned",
        "messages",
      )
    }
    const tools = request.tools ?? []
    // continueRun, not run(prompt): the user turn is already the transcript's last message, and
    // appending it again as a fresh turn could put two user messages side by side for Anthropic.
    const result = await withToolkit(tools, (toolkit) =>
      client.continueRun({ toolkit, messages: toUpstreamMessages(request.messages, style) }),
    )
    if (result.status !== "pending" || !result.pending) return { result }
    // Only halted runs are stored: a finished one has nothing left to continue, and the caller
    // resends the whole history with its next user turn anyway.
    const conversation = `conv-${randomUUID()}`
    await store.save(conversation, result.messages, { pending: result.pending })
    await rememberHalt(store, conversation, result.pending, tools, opts.pendingTtlMs)
    return { conversation, result }
  }

  /** A follow-up carrying tool results: resume the stored run from its halted turn. */
  async function resume(request: ChatRequest): Promise<{ conversation: string; result: RunResult }> {
    const found = await findContinuation(store, trailingToolMessages(request.messages))
    const { conversation } = found
    const tools = request.tools ?? found.tools
    let claim: Awaited<ReturnType<DurableStore["claimAnswer"]>>
    try {
      // The claim makes a duplicate delivery of the same results (a client retry racing the
      // first) resume the run once; the loser gets a 409 instead of a second model call.
      claim = await store.claimAnswer(conversation, found.answer, { leaseMs: opts.claimLeaseMs })
    } catch (error) {
      if (AnswerConflictError.isInstance(error) || UnknownRequestError.isInstance(error)) {
        throw new ProxyError(
          409,
          "conflict_error",
          "these tool results are being applied by another request, or already were",
          "messages",
        )
      }
      throw error
    }
    let result: RunResult
    try {
      const history = (await store.get(conversation)) ?? []
      result = await withToolkit(tools, (toolkit) =>
        runWithAnswer(client, { toolkit, history, pending: claim.request, answer: claim.answer }),
      )
      await store.save(conversation, result.messages, { pending: result.pending ?? null, claim: claim.token })
    } catch (error) {
      // The claim keeps the results: the caller's retry (e.g. after a 502) resumes with them.
      await store.releaseClaim(conversation, claim.token).catch(() => {})
      throw error
    }
    await forgetHalt(store, claim.request)
    if (result.status === "pending" && result.pending) {
      await rememberHalt(store, conversation, result.pending, tools, opts.pendingTtlMs)
    }
    return { conversation, result }
  }

  app.post("/v1/chat/completions", async (c) => {
    let body: unknown
    try {
      body = await c.req.json()
    } catch {
      throw badRequest("the request body is not valid JSON")
    }
    const request = parseChatRequest(body)
    const answering = trailingToolMessages(request.messages).length > 0
    const { conversation, result } = answering ? await resume(request) : await start(request)
    if (conversation !== undefined) c.header(CONVERSATION_HEADER, conversation)
    return c.json(render(result))
  })

  app.get("/healthz", (c) => c.json({ ok: true }))

  app.notFound((c) => {
    const error = new ProxyError(404, "invalid_request_error", `no route for ${c.req.method} ${c.req.path}`)
    return c.json(errorBody(error), 404)
  })

  app.onError((err, c) => {
    const error = toProxyError(err)
    const message = secrets.reduce((text, secret) => text.replaceAll(secret, "***"), error.message)
    return c.json(
      errorBody(new ProxyError(error.status, error.type, message, error.param ?? undefined)),
      error.status,
    )
  })

  return app
}

/** Runs `body` with a toolkit of the caller's declarations as relay tools. */
async function withToolkit<T>(
  tools: ChatToolDeclaration[],
  body: (toolkit: Toolkit) => Promise<T>,
): Promise<T> {
  let toolkit: Toolkit
  try {
    toolkit = await createToolkit({
      extraTools: tools.map((t) => relayTool(t.name, t.description, t.parameters)),
    })
  } catch (error) {
    // Invalid or duplicate names are the caller's to fix, not a server fault.
    if (ConfigError.isInstance(error)) throw badRequest(`tools: ${error.message}`, "tools")
    throw error
  }
  try {
    return await body(toolkit)
  } finally {
    await toolkit.close()
  }
}

function render(result: RunResult) {
  const { model, text, usage } = result
  if (result.status === "pending") {
    const calls = result.pending ? relayCallsOf(result.pending) : []
    // Only relay tools are offered, so any other halt is a bug worth a loud 500.
    if (calls.length === 0)
      throw new Error(`the run halted on a ${result.pending?.kind} request, not on tool calls`)
    return chatCompletion({ model, text, toolCalls: calls, finishReason: "tool_calls", usage })
  }
  return chatCompletion({ model, text, finishReason: result.status === "done" ? "stop" : "length", usage })
}

const UPSTREAM_CODES = new Set(["TNX_LLM_HTTP", "TNX_LLM_RESPONSE", "TNX_NETWORK", "TNX_ABORTED"])

function toProxyError(error: unknown): ProxyError {
  if (error instanceof ProxyError) return error
  if (ToolnexusError.isInstance(error)) {
    if (UPSTREAM_CODES.has(error.code)) {
      return new ProxyError(502, "upstream_error", `the upstream model request failed: ${error.message}`)
    }
    if (AnswerMismatchError.isInstance(error) || UnknownRequestError.isInstance(error)) {
      return new ProxyError(409, "conflict_error", error.message)
    }
  }
  const message = error instanceof Error ? error.message : String(error)
  return new ProxyError(500, "server_error", `internal error: ${message}`)
}
