import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Client } from "@modelcontextprotocol/client"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { toNodeListener } from "@toolnexus/ui"

/** A fetch-style handler served on 127.0.0.1. */
export interface Served {
  url: string
  close(): Promise<void>
}

/** Serves `fetch` over node:http on 127.0.0.1 at `/mcp`, through ui's `toNodeListener`. */
export async function serveFetch(fetch: (req: Request) => Promise<Response>): Promise<Served> {
  const http = createServer(toNodeListener(fetch))
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve))
  const { port } = http.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    async close() {
      http.closeAllConnections()
      await new Promise<void>((resolve) => http.close(() => resolve()))
    },
  }
}

/** Options of {@link connectClient}. */
export interface ClientOptions {
  /** The revision: 2026-07-28 (pinned) or 2025-11-25 (initialize). */
  era?: "modern" | "legacy"
  /** The elicitation modes the client declares; none: no elicitation capability. */
  elicitation?: { form?: Record<string, never>; url?: Record<string, never> }
  /** A bearer token sent on every request. */
  token?: string
  /** Answers `elicitation/create` (the SDK's auto-fulfilment); absent: manual mode. */
  onElicit?: (params: Record<string, unknown>) => Record<string, unknown>
}

/** The v2 SDK's own client, connected to `url`. */
export async function connectClient(url: string, opts: ClientOptions = {}): Promise<Client> {
  const client = new Client(
    { name: "test-client", version: "1.0.0" },
    {
      capabilities: opts.elicitation ? { elicitation: opts.elicitation } : {},
      ...(opts.era === "legacy" ? {} : { versionNegotiation: { mode: { pin: "2026-07-28" } } }),
      ...(opts.onElicit ? {} : { inputRequired: { autoFulfill: false } }),
    },
  )
  const onElicit = opts.onElicit
  if (onElicit)
    client.setRequestHandler(
      "elicitation/create",
      async (request) => onElicit(request.params as Record<string, unknown>) as never,
    )
  const transport = new StreamableHTTPClientTransport(
    new URL(url),
    opts.token ? { requestInit: { headers: { authorization: `Bearer ${opts.token}` } } } : {},
  )
  await client.connect(transport)
  return client
}
