import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { afterEach, expect, it } from "vitest"
import { connectMcp } from "../src/index.js"

// Issue 33: a remote server's configured headers stay with its origin. Servers on 127.0.0.1
// with different ports are different origins.

const KEY = "mcp-key-4f19a2c7"
const servers: Server[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
})

async function listen(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ url: string; seen: IncomingMessage["headers"][] }> {
  const seen: IncomingMessage["headers"][] = []
  const server = createServer((req, res) => {
    seen.push(req.headers)
    req.resume()
    req.on("end", () => handle(req, res))
  })
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen }
}

it("the configured headers go to the server, not to the metadata host its 401 names on another origin", async () => {
  const metadata = await listen((_req, res) => res.writeHead(404).end())
  const mcp = await listen((_req, res) =>
    res
      .writeHead(401, {
        "www-authenticate": `Bearer resource_metadata="${metadata.url}/.well-known/oauth-protected-resource"`,
      })
      .end(),
  )
  const connection = await connectMcp({
    servers: { remote: { url: `${mcp.url}/mcp`, headers: { "x-api-key": KEY } } },
    oauth: { redirectUrl: "http://127.0.0.1:9/oauth/callback" },
  })
  try {
    expect(mcp.seen.length).toBeGreaterThan(0)
    expect(mcp.seen.every((h) => h["x-api-key"] === KEY)).toBe(true)
    expect(metadata.seen.length).toBeGreaterThan(0)
    expect(metadata.seen.some((h) => h["x-api-key"] !== undefined)).toBe(false)
  } finally {
    await connection.close()
  }
})
