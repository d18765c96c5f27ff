import type { IncomingMessage, ServerResponse } from "node:http"
import { Readable } from "node:stream"

/**
 * Serves a fetch-style handler (`createChatHandler`, `createAgUiHandler`) from `node:http`
 * (or Express, Fastify's raw server, …): the request becomes a Fetch `Request`, the
 * `Response` is streamed back as it is produced. A client that goes away cancels the
 * response stream, never the run behind it.
 *
 * @example
 * import { createServer } from "node:http"
 * createServer(toNodeListener(createChatHandler({ client, toolkit }))).listen(3000)
 */
export function toNodeListener(
  handler: (req: Request) => Promise<Response>,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    void serve(handler, req, res).catch((error: unknown) => {
      if (!res.headersSent) {
        res.writeHead(500, { "content-type": "application/json" })
        res.end(JSON.stringify({ error: { code: "TNX_INTERNAL", message: "internal error" } }))
      } else res.destroy(error instanceof Error ? error : undefined)
    })
  }
}

async function serve(
  handler: (req: Request) => Promise<Response>,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const response = await handler(toFetchRequest(req, res))
  const headers: Record<string, string | string[]> = {}
  response.headers.forEach((value, key) => {
    const prior = headers[key]
    headers[key] = prior === undefined ? value : [...(Array.isArray(prior) ? prior : [prior]), value]
  })
  res.writeHead(response.status, headers)
  // SSE frames must leave as soon as they are written, not when a buffer fills.
  res.flushHeaders()
  if (response.body === null) {
    res.end()
    return
  }
  const reader = response.body.getReader()
  res.on("close", () => {
    void reader.cancel().catch(() => {})
  })
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    if (!res.write(value)) await new Promise<void>((resolve) => res.once("drain", resolve))
    if (res.destroyed) return
  }
  res.end()
}

function toFetchRequest(req: IncomingMessage, res: ServerResponse): Request {
  const host = req.headers.host ?? "localhost"
  const secure = (req.socket as { encrypted?: boolean }).encrypted === true
  const url = new URL(req.url ?? "/", `${secure ? "https" : "http"}://${host}`)
  const headers = new Headers()
  for (const [key, value] of Object.entries(req.headers)) {
    if (value === undefined) continue
    if (Array.isArray(value)) for (const v of value) headers.append(key, v)
    else headers.set(key, value)
  }
  const controller = new AbortController()
  res.on("close", () => {
    if (!res.writableFinished) controller.abort()
  })
  const method = req.method ?? "GET"
  const init: RequestInit & { duplex?: "half" } = { method, headers, signal: controller.signal }
  if (method !== "GET" && method !== "HEAD") {
    init.body = Readable.toWeb(req) as unknown as ReadableStream<Uint8Array>
    init.duplex = "half"
  }
  return new Request(url, init)
}
