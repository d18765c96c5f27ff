import { randomUUID } from "node:crypto"
import {
  type AuthInfo,
  type McpServerFactory,
  WebStandardStreamableHTTPServerTransport,
  isInitializeRequest,
  legacyStatelessFallback,
} from "@modelcontextprotocol/server"
import { ConfigError } from "@toolnexus/core"

/** How 2025-11-25 sessions over HTTP are kept; see `createMcpServer`'s `sessions` option. */
export interface McpSessionOptions {
  /**
   * The most sessions open at once in this process; an `initialize` beyond it is answered
   * 503 (after idle ones have expired). Default 1000.
   */
  max?: number
  /**
   * The most sessions one authenticated principal may hold open at once; an `initialize`
   * beyond it is answered 429, so one caller cannot take every slot of `max` from the others
   * (its idle sessions expire, a `DELETE` ends one at once). Default 100. Callers without
   * `authenticate` all share the principal `"anonymous"`, which only `max` bounds.
   */
  maxPerPrincipal?: number
  /**
   * A session no request has used for this long (ms) ends: its streams close and its id
   * answers 404, so the client starts a new one. Default 30 minutes.
   */
  idleMs?: number
  /** The time idleness is measured by; default the system clock (tests pass a virtual one). */
  clock?: {
    /** The current time, in ms since the epoch. */
    now(): number
  }
}

const DEFAULT_MAX_SESSIONS = 1000
const DEFAULT_MAX_PER_PRINCIPAL = 100
const DEFAULT_IDLE_MS = 30 * 60 * 1000
/** The longest between two background sweeps (a request sweeps too). */
const SWEEP_EVERY_MAX_MS = 60 * 1000

interface Session {
  transport: WebStandardStreamableHTTPServerTransport
  close(): Promise<void>
  principal: string
  lastSeen: number
}

/** One request's caller and body, as `createMcpServer`'s `fetch` established them. */
interface Caller {
  principal: string
  authInfo: AuthInfo
  /** The POST body, parsed (undefined: none, or not JSON: the transport answers it). */
  parsedBody?: unknown
  /** No `authenticate` named the caller: every such caller shares one principal. */
  anonymous?: boolean
}

/** 2025-11-25 serving over HTTP: sessions for clients that `initialize`, stateless otherwise. @internal */
export interface LegacySessions {
  /** Serves one 2025-era request: on its session, opening one (`initialize`), or statelessly. */
  fetch(req: Request, caller: Caller): Promise<Response>
  /** Ends every session (their streams close) and the sweep. */
  close(): Promise<void>
}

/**
 * 2025-11-25 clients over streamable HTTP. An `initialize` opens a session: one official server
 * instance on a stateful transport, so the capabilities the client declared are known to its
 * later requests, and requests to the client (elicitation, sampling: the SDK's legacy
 * input-required shim, the same path as stdio) and notifications (`resources/updated`) reach it
 * on the session's streams. Sessions live in this process (a client must come back to it: sticky
 * routing), bound to the principal that opened them (anyone else gets the 404 of an unknown
 * id), bounded in number and ended when idle. A request without a session id and without
 * `initialize` is served statelessly, by any instance, as before.
 *
 * @internal
 */
export function createLegacySessions(
  factory: McpServerFactory,
  opts: McpSessionOptions & { maxBodyBytes: number },
): LegacySessions {
  const max = opts.max ?? DEFAULT_MAX_SESSIONS
  const idleMs = opts.idleMs ?? DEFAULT_IDLE_MS
  const perPrincipal = opts.maxPerPrincipal ?? DEFAULT_MAX_PER_PRINCIPAL
  if (!(Number.isInteger(max) && max > 0))
    throw new ConfigError("createMcpServer: sessions.max must be a positive integer")
  if (!(Number.isInteger(perPrincipal) && perPrincipal > 0))
    throw new ConfigError("createMcpServer: sessions.maxPerPrincipal must be a positive integer")
  if (!(Number.isInteger(idleMs) && idleMs > 0))
    throw new ConfigError("createMcpServer: sessions.idleMs must be a positive integer")
  const now = opts.clock ? () => opts.clock!.now() : Date.now
  const stateless = legacyStatelessFallback(factory, undefined, { maxRequestBodySize: opts.maxBodyBytes })
  // Least recently used first: a touch moves a session to the end, so a sweep stops at the
  // first one still fresh.
  const sessions = new Map<string, Session>()
  let opening = 0
  // Sessions open or opening per principal: counted at the door so that concurrent
  // initializes cannot pass the cap together.
  const held = new Map<string, number>()
  const hold = (principal: string, by: number): void => {
    const n = (held.get(principal) ?? 0) + by
    if (n > 0) held.set(principal, n)
    else held.delete(principal)
  }
  let timer: ReturnType<typeof setInterval> | undefined

  const end = (id: string): Promise<void> => {
    const session = sessions.get(id)
    if (session === undefined) return Promise.resolve()
    sessions.delete(id)
    hold(session.principal, -1)
    return session.close()
  }
  const sweep = (): void => {
    const cutoff = now() - idleMs
    for (const [id, session] of sessions) {
      if (session.lastSeen > cutoff) break
      void end(id)
    }
  }

  async function open(req: Request, caller: Caller): Promise<Response> {
    if (sessions.size + opening >= max)
      return rpcError(503, -32000, "too many open sessions on this server; retry later")
    if (caller.anonymous !== true && (held.get(caller.principal) ?? 0) >= perPrincipal)
      return rpcError(429, -32000, "too many open sessions for this caller; end one (DELETE) or retry later")
    opening++
    hold(caller.principal, 1)
    let opened: Session | undefined
    try {
      const server = await factory({ era: "legacy", authInfo: caller.authInfo, requestInfo: req })
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        maxRequestBodySize: opts.maxBodyBytes,
        onsessioninitialized: (id) => {
          opened = {
            transport,
            principal: caller.principal,
            lastSeen: now(),
            close: async () => {
              await transport.close().catch(() => {})
              await server.close().catch(() => {})
            },
          }
          sessions.set(id, opened)
          timer ??= setInterval(sweep, Math.min(idleMs, SWEEP_EVERY_MAX_MS))
          timer.unref?.()
        },
        // DELETE: the transport closes itself after this.
        onsessionclosed: (id) => end(id),
      })
      await server.connect(transport)
      const res = await transport.handleRequest(req, options(caller))
      // A refused initialize (malformed, say) opened no session: nothing stays behind.
      if (opened === undefined) {
        await transport.close().catch(() => {})
        await server.close().catch(() => {})
      }
      return res
    } finally {
      opening--
      // An initialize that opened no session gives its place back.
      if (opened === undefined) hold(caller.principal, -1)
    }
  }

  return {
    async fetch(req, caller) {
      sweep()
      const id = req.headers.get("mcp-session-id")
      if (id === null) {
        if (req.method.toUpperCase() === "POST" && isInitializeRequest(caller.parsedBody))
          return open(req, caller)
        return stateless(req, options(caller))
      }
      const session = sessions.get(id)
      // Another principal's session is answered as an unknown one: its existence is not told.
      if (session === undefined || session.principal !== caller.principal)
        return rpcError(404, -32001, "Session not found")
      session.lastSeen = now()
      sessions.delete(id)
      sessions.set(id, session)
      return session.transport.handleRequest(req, options(caller))
    },
    async close() {
      if (timer !== undefined) clearInterval(timer)
      timer = undefined
      await Promise.all([...sessions.keys()].map(end))
    },
  }
}

function options(caller: Caller): { authInfo: AuthInfo; parsedBody?: unknown } {
  return caller.parsedBody === undefined
    ? { authInfo: caller.authInfo }
    : { authInfo: caller.authInfo, parsedBody: caller.parsedBody }
}

/** A JSON-RPC error answer without an id, as the SDK's transports answer session errors. */
export function rpcError(status: number, code: number, message: string): Response {
  return Response.json({ jsonrpc: "2.0", error: { code, message }, id: null }, { status })
}
