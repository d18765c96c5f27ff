import { type Server, type Socket, createConnection, createServer } from "node:net"

/**
 * A TCP proxy on 127.0.0.1 that a test owns, in front of a store server, to simulate
 * outages without touching the server: `cut()` drops every connection and refuses new ones;
 * `blackhole()` keeps connections open but forwards nothing (a hung network).
 */
export interface TcpProxy {
  /** The port to connect to instead of the server's. */
  readonly port: number
  /** Destroys every open connection, and from now on each new one as soon as it is accepted. */
  cut(): void
  /** Stops forwarding in both directions; connections, old and new, stay open but get no bytes. */
  blackhole(): void
  /** Destroys every connection and stops listening; resolves once the server has closed. */
  close(): Promise<void>
}

/** Starts a {@link TcpProxy} forwarding to `target` (`{ host, port }`). */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>()
  let mode: "pass" | "cut" | "blackhole" = "pass"
  const server: Server = createServer((client) => {
    sockets.add(client)
    client.on("close", () => sockets.delete(client))
    client.on("error", () => {})
    if (mode === "cut") return void client.destroy()
    if (mode === "blackhole") return // accepted, never answered
    const upstream = createConnection(target)
    sockets.add(upstream)
    upstream.on("close", () => sockets.delete(upstream))
    upstream.on("error", () => client.destroy())
    client.on("close", () => upstream.destroy())
    upstream.on("close", () => client.destroy())
    // Forwarding stops the moment the proxy blackholes; bytes already sent are not replayed.
    client.on("data", (chunk) => {
      if (mode === "pass") upstream.write(chunk)
    })
    upstream.on("data", (chunk) => {
      if (mode === "pass") client.write(chunk)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as { port: number }).port
  return {
    port,
    cut() {
      mode = "cut"
      for (const socket of sockets) socket.destroy()
    },
    blackhole() {
      mode = "blackhole"
    },
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
