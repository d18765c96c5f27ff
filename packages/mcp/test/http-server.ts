import { randomUUID } from "node:crypto"
import { type IncomingMessage, type Server as HttpServer, type ServerResponse, createServer } from "node:http"
import type { AddressInfo } from "node:net"
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import type { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"

/** A test MCP server over Streamable HTTP on 127.0.0.1: one SDK server per session. */
export interface ServedMcp {
  url: string
  sessions: () => number
  close(): Promise<void>
}

/** The handler behind {@link serveMcp}: `/mcp` sessions, one SDK server each. Express bodies are reused. */
export function mcpHandler(build: () => McpServer | Server): {
  handle(req: IncomingMessage & { body?: unknown }, res: ServerResponse): Promise<void>
  transports: Map<string, StreamableHTTPServerTransport>
} {
  const transports = new Map<string, StreamableHTTPServerTransport>()
  async function handle(req: IncomingMessage & { body?: unknown }, res: ServerResponse): Promise<void> {
    try {
      if (!req.url?.startsWith("/mcp")) {
        res.writeHead(404).end()
        return
      }
      const body =
        req.method !== "POST" ? undefined : (req.body ?? JSON.parse((await readBody(req)) || "null"))
      const sessionId = req.headers["mcp-session-id"]
      let transport = typeof sessionId === "string" ? transports.get(sessionId) : undefined
      if (!transport) {
        if (typeof sessionId === "string" || (body as { method?: unknown })?.method !== "initialize") {
          res.writeHead(404, { "content-type": "application/json" })
          res.end(
            JSON.stringify({
              jsonrpc: "2.0",
              error: { code: -32001, message: "Session not found" },
              id: null,
            }),
          )
          return
        }
        const created = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => {
            transports.set(id, created)
          },
        })
        created.onclose = () => {
          if (created.sessionId) transports.delete(created.sessionId)
        }
        await build().connect(created)
        transport = created
      }
      await transport.handleRequest(req, res, body)
    } catch (error) {
      if (!res.headersSent) res.writeHead(500).end(String(error))
    }
  }
  return { handle, transports }
}

/**
 * Serves `build()` (a fresh SDK server per session) at `/mcp`. `before` may answer a request
 * itself (auth, failures) by returning true.
 */
export async function serveMcp(
  build: () => McpServer | Server,
  before?: (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean>,
): Promise<ServedMcp> {
  const { handle, transports } = mcpHandler(build)
  const http: HttpServer = createServer(async (req, res) => {
    if (before && (await before(req, res))) return
    await handle(req, res)
  })
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve))
  const { port } = http.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    sessions: () => transports.size,
    async close() {
      for (const t of transports.values()) await t.close().catch(() => {})
      http.closeAllConnections()
      await new Promise<void>((resolve) => http.close(() => resolve()))
    },
  }
}

export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString("utf8")
}
