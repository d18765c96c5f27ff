import { type IncomingMessage, type ServerResponse, createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Client } from "@modelcontextprotocol/client"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/client"

/** A fetch-style handler served on 127.0.0.1. */
export interface Served {
  url: string
  close(): Promise<void>
}

/** Serves `fetch` over node:http on 127.0.0.1 at `/mcp`. */
export async function serveFetch(fetch: (req: Request) => Promise<Response>): Promise<Served> {
  let port = 0
  const http = createServer((req, res) => {
    void relay(fetch, port, req, res).catch(() => res.destroy())
  })
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve))
  port = (http.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    async close() {
      http.closeAllConnections()
      await new Promise<void>((resolve) => http.close(() => resolve()))
    },
  }
}

async function relay(
  fetch: (request: Request) => Promise<Response>,
  port: number,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers))
    if (typeof value === "string") headers.set(name, value)
  const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined
  // The URL is the listener's own; the Host header goes through as sent, for the server to judge.
  const request = new Request(`http://127.0.0.1:${port}${req.url}`, {
    method: req.method,
    headers,
    ...(body && req.method !== "GET" ? { body } : {}),
  })
  const response = await fetch(request)
  res.writeHead(response.status, Object.fromEntries(response.headers))
  if (response.body) for await (const chunk of response.body) res.write(chunk)
  res.end()
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
