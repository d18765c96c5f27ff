import { AgentCard } from "@a2a-js/sdk"
import { LegacyJsonRpcTransportHandler } from "@a2a-js/sdk/compat/v0_3/server"
import { JsonRpcTransportHandler, ServerCallContext } from "@a2a-js/sdk/server"
import {
  idOf,
  isAsyncIterable,
  isJsonType,
  isRpcRequest,
  ownerOf,
  readLimited,
  rpcError,
  scrub,
  sse,
  tooLarge,
  versionHeader,
  versionOf,
} from "./json-rpc-http.js"
import type { RuntimeOptions } from "@toolnexus/agents"
import { type Client, ConfigError, type Logger, type RunHost, type Toolkit, hostAgent } from "@toolnexus/core"
import type { DurableStore } from "@toolnexus/durable"
import { type A2ACardInfo, agentCardJson } from "./agent-card.js"
import { OWNER_STATE_KEY } from "./task-message.js"
import { type TaskStore, isLegacyRunId, memoryTaskStore } from "./task-record.js"
import { TaskService } from "./task-service.js"

/** Options of {@link serveA2A}. */
export interface ServeA2AOptions {
  /** What the agent card says about the agent. */
  card: A2ACardInfo
  /**
   * The host every task runs on (`createStoreHost`, `connectRestate`, `connectDbos`): a task is
   * run `a2a.<taskId>` of `agent`, its answer goes through `host.deliverAnswer`, CancelTask is
   * `host.cancel`. The shorthand below (`client` or `runtime`) builds a store host instead.
   */
  host?: RunHost
  /** With `host`: the host's agent a task starts. With `runtime`: the registry's def a task spawns. */
  agent?: string
  /** Shorthand: a conversation per task (`client.ask(text, {id: "a2a.<taskId>"})`) on `store`. */
  client?: Client
  /** The tools of each `client` run; not used with `runtime`. */
  toolkit?: Toolkit
  /** Shorthand: a tree per task, def `agent` of this runtime's registry, in a runtime of namespace `a2a.<taskId>`. */
  runtime?: Omit<RuntimeOptions, "store" | "namespace">
  /**
   * Where task records live (snapshot `a2a/task/<id>`); with the shorthand also the runs (default:
   * the client's own store). With `host` and no `store`, task records live in this process's
   * memory and are forgotten on a restart: give the host's store (or any durable store) to keep
   * them.
   */
  store?: DurableStore
  /** With tokens, every POST needs `Authorization: Bearer <one of them>`; a task belongs to its token. */
  bearerTokens?: string[]
  /** A request body over this many bytes is refused with HTTP 413, unread (default 1 MiB). */
  maxBodyBytes?: number
  /** The path the agent is served under (default `""`, the origin's root). */
  basePath?: string
  /**
   * Failed runs at `error` with their code (never their message); refused messages (an answer
   * decided elsewhere or expired, text for an approval, an unknown task) at `info`, never a stack.
   * The shorthand's store host logs to it too.
   */
  logger?: Logger
}

/** A Fetch-API A2A server: mount `fetch` on any server (`Bun.serve`, Hono, a Node adapter). */
export interface A2AHandler {
  /**
   * Answers one HTTP request: `GET <basePath>/.well-known/agent-card.json` gives the card, a
   * JSON-RPC `POST <basePath>` runs the method (an SSE stream for streaming ones); other paths
   * get 404. Never rejects: an unexpected failure is a JSON-RPC `Internal error` response.
   */
  fetch(request: Request): Promise<Response>
  /**
   * Ends the streams and stops waiting on runs; the shorthand's own store host is closed (its
   * runs in flight aborted, their last saved state answerable). A given `host` and the store
   * stay open (they are the caller's).
   */
  close(): Promise<void>
}

const CARD_PATH = "/.well-known/agent-card.json"
const METHODS_V1 = new Set([
  "SendMessage",
  "SendStreamingMessage",
  "GetTask",
  "CancelTask",
  "SubscribeToTask",
  "ListTasks",
  "GetExtendedAgentCard",
  "CreateTaskPushNotificationConfig",
  "GetTaskPushNotificationConfig",
  "ListTaskPushNotificationConfigs",
  "DeleteTaskPushNotificationConfig",
])
const METHODS_V03 = new Set([
  "message/send",
  "message/stream",
  "tasks/get",
  "tasks/cancel",
  "tasks/resubscribe",
  "tasks/pushNotificationConfig/set",
  "tasks/pushNotificationConfig/get",
  "tasks/pushNotificationConfig/list",
  "tasks/pushNotificationConfig/delete",
  "agent/getAuthenticatedExtendedCard",
])
const PUSH_V1 = /PushNotificationConfig/
const PUSH_V03 = /^tasks\/pushNotificationConfig\//

/** The name of the agent the shorthand's store host serves. */
const SHORTHAND_AGENT = "a2a"

/**
 * Serves a toolnexus agent as an A2A agent (JSON-RPC; A2A 1.0, and v0.3 when a request says
 * so or says nothing), over one `RunHost`: each task is a run of `agent`; a run that halts
 * puts the task `input-required` (`auth-required` for a login) with the prompt and the
 * Request, and the next message on the task is its Answer, applied once across processes
 * through `host.deliverAnswer`. An approval takes only a data part `{answer: {ok, …}}`: a
 * text-only reply to it is refused (`-32602`), so "no" can never approve. The round-3 options
 * (`client` + `toolkit`, or `runtime` + `agent`, on `store`) build a `createStoreHost`.
 *
 * @param opts - the card, the host and agent (or the shorthand), tokens, limits and a logger.
 * @returns the handler; `fetch` never throws.
 * @throws ConfigError for a missing card name or agent, `host` given with the shorthand, a
 *   shorthand that names neither `client` nor `runtime` + `agent`, or a `store` (the client's,
 *   with the shorthand) without snapshots to keep tasks in. The shorthand's store host is
 *   built on first use (`@toolnexus/durable` is loaded then): a store it refuses (not durable,
 *   not the client's) fails each request with an internal error, logged at `error`.
 * @example
 * ```ts
 * const handler = serveA2A({ card: { name: "travel" }, host, agent: "travel", store })
 * // Bun.serve({ fetch: handler.fetch }) or any Fetch-API server
 * ```
 */
export function serveA2A(opts: ServeA2AOptions): A2AHandler {
  const { card, bearerTokens, maxBodyBytes = 1_048_576, logger } = opts
  if (!card?.name) throw new ConfigError("serveA2A: `card.name` is required")
  if (bearerTokens && bearerTokens.length === 0) throw new ConfigError("serveA2A: `bearerTokens` is empty")
  const served = opts.host ? givenHost(opts) : shorthandHost(opts)
  const basePath = (opts.basePath ?? "").replace(/\/+$/, "")
  // The card as the SDK's handlers see it; the one served takes the request's origin as url.
  const sdkCard = AgentCard.fromJSON(
    agentCardJson(card, card.url ?? (basePath || "/"), "1.0", !!bearerTokens),
  )
  const service = new TaskService({ ...served, card: sdkCard, logger })
  const v1 = new JsonRpcTransportHandler(service)
  const legacy = new LegacyJsonRpcTransportHandler(service)
  const tokens = bearerTokens?.map((t) => Buffer.from(t))

  async function handle(request: Request): Promise<Response> {
    const url = new URL(request.url)
    const path = url.pathname.replace(/\/+$/, "")
    const version = versionOf(request.headers.get("a2a-version"))
    if (path === `${basePath}${CARD_PATH}`) {
      if (request.method !== "GET") return new Response(null, { status: 405, headers: { allow: "GET" } })
      const served = card.url ?? `${url.origin}${basePath}`
      const shape = version === "1.0" ? "1.0" : "0.3"
      return Response.json(agentCardJson(card, served, shape, tokens !== undefined))
    }
    if (path !== basePath) return new Response(null, { status: 404 })
    if (request.method !== "POST") return new Response(null, { status: 405, headers: { allow: "POST" } })
    let owner: string | undefined
    if (tokens) {
      owner = ownerOf(request.headers.get("authorization"), tokens)
      if (!owner)
        return new Response(null, { status: 401, headers: { "www-authenticate": 'Bearer realm="a2a"' } })
    }
    const declared = Number(request.headers.get("content-length") ?? Number.NaN)
    if (Number.isFinite(declared) && declared > maxBodyBytes) return tooLarge()
    const body = await readLimited(request, maxBodyBytes)
    if (body === undefined) return tooLarge()
    if (!isJsonType(request.headers.get("content-type")))
      return rpcError(null, -32005, "Content type not supported")
    let parsed: unknown
    try {
      parsed = JSON.parse(body)
    } catch {
      return rpcError(null, -32700, "Parse error")
    }
    const id = idOf(parsed)
    if (!isRpcRequest(parsed)) return rpcError(id, -32600, "Invalid Request")
    if (version === undefined) return rpcError(id, -32009, "A2A version not supported (1.0 and 0.3 are)")
    const methods = version === "1.0" ? METHODS_V1 : METHODS_V03
    const method = (parsed as { method: string }).method
    if (!methods.has(method)) return rpcError(id, -32601, `Method not found: ${method}`)
    if ((version === "1.0" ? PUSH_V1 : PUSH_V03).test(method))
      return rpcError(id, -32003, "Push notifications are not supported")
    const context = new ServerCallContext({ requestedVersion: version })
    if (owner) context.state.set(OWNER_STATE_KEY, owner)
    const outcome = await (version === "1.0" ? v1 : legacy).handle(parsed as Record<string, unknown>, context)
    if (isAsyncIterable(outcome)) return sse(outcome, id, version === "1.0")
    return Response.json(scrub(outcome), { headers: versionHeader(version) })
  }

  return {
    async fetch(request) {
      try {
        return await handle(request)
      } catch {
        // Nothing of an unexpected failure leaves the process.
        return rpcError(null, -32603, "Internal error")
      }
    },
    async close() {
      await service.close()
      await served.close()
    },
  }
}

/** What the task service runs on, and what `close()` releases of it. */
interface Served {
  host: () => Promise<RunHost>
  agent: string
  tasks: TaskStore
  close(): Promise<void>
}

/**
 * The store task records are kept in: it needs snapshots (every durable store has them).
 *
 * @throws ConfigError for a store without them (a client's plain in-memory conversation store).
 */
function taskStoreOf(store: Partial<TaskStore> | undefined): TaskStore {
  if (typeof store?.getSnapshot !== "function" || typeof store.putSnapshot !== "function")
    throw new ConfigError(
      "serveA2A keeps its tasks in a durable store: pass `store` (e.g. a SqliteStore, createMemoryStore()) and, with `client`, create the client on it",
    )
  return store as TaskStore
}

/** `{ host, agent }`: the caller's host, closed by the caller. */
function givenHost(opts: ServeA2AOptions): Served {
  const { host, agent } = opts
  if (opts.client || opts.toolkit || opts.runtime)
    throw new ConfigError(
      "serveA2A: give `host` + `agent`, or the shorthand (`client` or `runtime`), not both",
    )
  if (typeof agent !== "string" || agent === "")
    throw new ConfigError("serveA2A: `host` needs `agent`, the name of the host's agent a task starts")
  const ready = Promise.resolve(host as RunHost)
  const tasks = opts.store === undefined ? memoryTaskStore() : taskStoreOf(opts.store)
  return { host: () => ready, agent, tasks, close: async () => {} }
}

/**
 * The round-3 options as a store host of one agent (`a2a`) on `store`. Tasks that round 3
 * parked (conversation `a2a/<taskId>`, no host record) are adopted by it on their answer.
 */
function shorthandHost(opts: ServeA2AOptions): Served {
  const { client, toolkit, runtime, agent, logger } = opts
  if (runtime || agent) {
    if (client) throw new ConfigError("serveA2A: give `client` or `runtime` + `agent`, not both")
    if (!runtime || !agent) throw new ConfigError("serveA2A: `runtime` and `agent` go together")
    if (!runtime.registry?.[agent])
      throw new ConfigError(`serveA2A: the runtime's registry has no def ${JSON.stringify(agent)}`)
    if (!opts.store) throw new ConfigError("serveA2A with `runtime` needs a durable `store`")
  } else if (!client) {
    throw new ConfigError(
      "serveA2A needs `client` (and usually `toolkit`), or `runtime` + `agent`, or `host` + `agent`",
    )
  }
  const store = (opts.store ?? client?.conversationStore()) as DurableStore
  taskStoreOf(store)
  const declared = client
    ? hostAgent({ name: SHORTHAND_AGENT, client, ...(toolkit ? { toolkit } : {}) })
    : hostAgent({ name: SHORTHAND_AGENT, runtime: { ...(runtime as object), root: agent as string } })
  let built: Promise<RunHost> | undefined
  const host = () => {
    // Loaded on first use: a2aTool's users need no durable package.
    built ??= import("@toolnexus/durable").then(({ createStoreHost }) =>
      createStoreHost({
        store,
        agents: [declared as never],
        adopt: (runId) => (isLegacyRunId(runId) ? SHORTHAND_AGENT : undefined),
        ...(logger ? { logger } : {}),
      }),
    )
    built.catch((error: unknown) =>
      logger?.error(`serveA2A: the store host could not be built: ${(error as Error)?.message}`, {
        code: (error as { code?: unknown })?.code,
      }),
    )
    return built
  }
  return {
    host,
    agent: SHORTHAND_AGENT,
    tasks: store,
    async close() {
      if (built) await (await built.catch(() => undefined))?.close()
    },
  }
}
