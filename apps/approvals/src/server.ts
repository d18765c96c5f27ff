import type { Server } from "node:http"
import type { AddressInfo } from "node:net"
import { serve } from "@hono/node-server"

/** A running HTTP server. */
export interface RunningServer {
  /** `http://host:port`, with the port actually bound (useful with port 0). */
  url: string
  port: number
  /** Stops accepting connections and ends open ones, keep-alive included. */
  close(): Promise<void>
}

/**
 * Serves the app with @hono/node-server and resolves once it listens.
 *
 * @throws the listen error (e.g. `EADDRINUSE`) when the port cannot be bound.
 */
export function listen(
  app: { fetch: (request: Request) => Response | Promise<Response> },
  opts: { port: number; hostname: string },
): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    // The default adapter creates a node:http server, whatever the union type says.
    const server = serve({ fetch: app.fetch, port: opts.port, hostname: opts.hostname }, (info) => {
      server.off("error", reject)
      const { port } = info as AddressInfo
      const host = opts.hostname.includes(":") ? `[${opts.hostname}]` : opts.hostname
      resolve({
        url: `http://${host}:${port}`,
        port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done())
            // Browsers keep idle connections open; without this close() waits for them.
            server.closeAllConnections()
          }),
      })
    }) as Server
    server.once("error", reject)
  })
}
