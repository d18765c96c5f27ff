import type { RuntimeOptions } from "@toolnexus/agents"
import type { Client, ConversationStore, Logger, RunHost, Toolkit } from "@toolnexus/core"

/** What both forms of {@link ChatHandlerOptions} share: how posts are read, refused and logged. */
export interface ChatDoorOptions {
  /**
   * The conversation a chat id maps to; default the chat id itself (1–200 characters). The
   * place to scope chats to users: a `Response` it returns (a 401) is sent as is. Over a host
   * the conversation id is the run id.
   */
  conversationId?: (chatId: string, req: Request) => string | Response | Promise<string | Response>
  /**
   * Origins (`https://app.example.com`) besides the request's own whose pages may post. A post
   * whose `Origin` header is neither is refused with 403 `TNX_CROSS_SITE`, and a post that is
   * not `application/json` with 415 `TNX_UNSUPPORTED_MEDIA_TYPE`: a cross-site form or
   * `text/plain` post never starts a turn with the user's cookies. Posts without `Origin`
   * (servers, curl) are not checked. Behind a proxy that terminates TLS or rewrites `Host`,
   * list the public origin here.
   */
  allowedOrigins?: string[]
  /** The text of a failed run's error chunk / `RUN_ERROR` (default `<code>: <message>`, keys redacted). */
  onError?: (e: unknown) => string
  /**
   * Where the handler reports what no page shows the operator (`console` or a pino logger): a
   * run that fails at `error` (its TNX code and conversation id, keys redacted, no transcript),
   * a refused post (400, 403, 404, 409, 410, 415) at `info` with its status and code, no stack.
   * Default: nothing is logged.
   */
  logger?: Logger
}

/**
 * The handler over a host (§17): every chat is a run of `agent` on `host` (run id = the
 * conversation id). New turns are `host.send` (`host.start` for a new chat), answers
 * `host.deliverAnswer`; the host decides each request once.
 */
export interface HostedChatOptions extends ChatDoorOptions {
  /** The host running the chats: `createStoreHost` (`@toolnexus/durable`), or an engine's connection. */
  host: RunHost
  /** The hosted agent (`hostAgent({ name, client, toolkit })`) whose runs the chats are. */
  agent: string
}

/**
 * The round-3 shorthand: the handler builds a `createStoreHost` over the client's store, with
 * one client agent (`client`, `toolkit`) and, given `runtime`, one agent resuming saved runtimes.
 */
export interface ShorthandChatOptions extends ChatDoorOptions {
  /**
   * Runs the chats; its store keeps their transcripts (the only transcript trusted). A client
   * made without `store` is moved onto a durable memory store (`createMemoryStore()`) before
   * its first run, so answers are decided once; a store of its own must be a durable store.
   */
  client: Client
  /**
   * The tools of every chat's runs, new turns and resumed answers alike; the AG-UI handler adds
   * the posted frontend tools as relay tools (a toolkit tool of the same name wins).
   */
  toolkit?: Toolkit
  /** Must be `client.conversationStore()` when given (else `ConfigError`). */
  store?: ConversationStore
  /**
   * Resumes requests held by saved runtimes. A runtime's request is answered by the chat whose
   * conversation id is the runtime's key.
   */
  runtime?: RuntimeOptions
}

/**
 * Options of `createChatHandler` (AI SDK) and `createAgUiHandler` (AG-UI): `{ host, agent }`,
 * or the shorthand `{ client, toolkit?, store?, runtime? }` that builds a store host.
 */
export type ChatHandlerOptions = HostedChatOptions | ShorthandChatOptions
