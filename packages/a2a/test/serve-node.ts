import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Readable } from "node:stream"

/** Serves a Fetch-API handler on 127.0.0.1 with node:http (the tests' adapter). */
export async function serveFetch(
  fetch: (request: Request) => Promise<Response>,
): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = `http://${req.headers.host ?? "127.0.0.1"}${req.url ?? "/"}`
    const headers = new Headers()
    for (const [name, value] of Object.entries(req.headers))
      if (typeof value === "string") headers.set(name, value)
      else if (Array.isArray(value)) for (const v of value) headers.append(name, v)
    const hasBody = req.method !== "GET" && req.method !== "HEAD"
    const request = new Request(url, {
      method: req.method ?? "GET",
      headers,
      ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream, duplex: "half" } : {}),
    } as RequestInit)
    void fetch(request).then(async (response) => {
      res.writeHead(response.status, Object.fromEntries(response.headers))
      if (!response.body) return res.end()
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) res.write(chunk)
      res.end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
