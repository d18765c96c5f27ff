import http2 from "node:http2"
import type { AddressInfo } from "node:net"
import { ConfigError } from "@toolnexus/core"
import type { EngineAgent } from "./engine-agent.js"
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
  /** Names the workflow (`<namespace>`) and its requests object; default `toolnexus`. */
  namespace?: string
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
  const { workflow, requests } = buildServices(sdk, agents, namespace)
  const handler = sdk.createEndpointHandler({ services: [workflow, requests] })
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
