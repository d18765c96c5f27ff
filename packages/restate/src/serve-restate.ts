import http2 from "node:http2"
import type { AddressInfo } from "node:net"
import type { EngineAgent } from "@toolnexus/agents"
import { ConfigError, type Logger } from "@toolnexus/core"
import { namespaceOf } from "./protocol.js"
import { buildServices } from "./services.js"
import { installWithResolvers } from "./with-resolvers.js"

/** Options of {@link serveRestate}. */
export interface ServeRestateOptions {
  /** The agents this process runs, with distinct names. */
  agents: EngineAgent[]
  /** The port of this worker's endpoint (0: any free port). */
  port: number
  /** The interface to bind; default 127.0.0.1. */
  host?: string
  /** The Restate admin URL (e.g. `http://127.0.0.1:9070`): the endpoint is registered there. */
  admin?: string
  /** Names the workflow (`<namespace>`) and its objects (`<namespace>_requests`, `_runs`, `_events`); default `toolnexus`. */
  namespace?: string
  /**
   * The Restate ingress URL (e.g. `http://127.0.0.1:8080`): the workers append their runs'
   * events there (`<namespace>_events`), for `connectRestate`'s `events` and `onEvent`.
   * Without it no events are logged (those streams end empty).
   */
  ingress?: string
  /**
   * Refused answers (a duplicate, a late one) at `info`, never with a stack; failed runs at
   * `error` with their code. The SDK's own log lines go here too, without stacks (its `error`
   * and `warn` as such, the rest at `debug`).
   */
  logger?: Logger
}

/** A running Restate worker endpoint. */
export interface RestateWorker {
  /** The endpoint's URL, as registered with the admin API. */
  readonly url: string
  /** Stops the endpoint; invocations in flight are retried by Restate elsewhere or later. */
  close(): Promise<void>
}

/**
 * Serves `agents` as a Restate endpoint (HTTP/2, cleartext) and, with `admin`, registers it.
 * The SDK is loaded here, after a `Promise.withResolvers` stand-in on Node 20.
 *
 * @throws ConfigError for an empty or duplicate agent list or a bad namespace.
 * @example
 * const worker = await serveRestate({ agents: [agent], port: 29080, admin: "http://127.0.0.1:9070" })
 */
export async function serveRestate(opts: ServeRestateOptions): Promise<RestateWorker> {
  const { agents, port, host = "127.0.0.1", admin } = opts
  const namespace = namespaceOf(opts.namespace)
  if (!Array.isArray(agents) || agents.length === 0)
    throw new ConfigError("serveRestate needs at least one agent")
  const names = new Set(agents.map((a) => a.name))
  if (names.size !== agents.length) throw new ConfigError("serveRestate: two agents share a name")
  installWithResolvers()
  const sdk = await import("@restatedev/restate-sdk")
  const { logger } = opts
  const ingress = opts.ingress?.replace(/\/+$/, "")
  const { workflow, requests, runs, events } = buildServices(sdk, agents, namespace, { logger, ingress })
  const handler = sdk.createEndpointHandler({
    services: [workflow, requests, runs, events],
    ...(logger ? { logger: sdkLogger(logger, sdk.TerminalError) } : {}),
  })
  const server = http2.createServer(handler)
  const sessions = new Set<http2.ServerHttp2Session>()
  server.on("session", (session) => {
    sessions.add(session)
    session.on("close", () => sessions.delete(session))
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(port, host, () => {
      server.off("error", reject)
      resolve()
    })
  })
  const bound = (server.address() as AddressInfo).port
  const url = `http://${host}:${bound}`
  const close = () =>
    new Promise<void>((resolve) => {
      for (const session of sessions) session.destroy()
      server.close(() => resolve())
    })
  if (admin !== undefined) {
    try {
      await register(admin, url)
    } catch (error) {
      await close()
      throw error
    }
  }
  return { url, close }
}

/**
 * The SDK's log lines, in `logger`'s levels, messages without stacks. Replays are dropped, and
 * so is the SDK's warning about a run's own failure (a step that failed, a terminal error): the
 * run logs that once, at `error`, with its code.
 */
function sdkLogger(logger: Logger, TerminalError: new (...args: never[]) => Error) {
  return (meta: { level: string; replaying: boolean }, message?: unknown, ...rest: unknown[]): void => {
    if (meta.replaying) return
    const parts = [message, ...rest]
    const text = parts
      .map((part) => (part instanceof Error ? `${part.name}: ${part.message}` : String(part)))
      .join(" ")
      .trim()
    const ownFailure =
      parts.some((part) => part instanceof TerminalError) || /^Error when processing ctx\.run/.test(text)
    if (ownFailure) logger.debug?.(text)
    else if (meta.level === "error") logger.error(text)
    else if (meta.level === "warn") (logger.warn ?? logger.info).call(logger, text)
    // Its `info` is per invocation ("Starting invocation."): detail, not news.
    else logger.debug?.(text)
  }
}

/** Registers (or re-registers) the endpoint with the admin API. */
async function register(admin: string, url: string): Promise<void> {
  const response = await fetch(new URL("/deployments", admin), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ uri: url, force: true }),
  })
  if (!response.ok) {
    const body = await response.text()
    throw new ConfigError(
      `registering ${url} with the Restate admin API failed: HTTP ${response.status}: ${body.slice(0, 300)}`,
    )
  }
}
