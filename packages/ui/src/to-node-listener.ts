import type { IncomingMessage, ServerResponse } from "node:http"

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

/** Chat posts are small; a body beyond this is refused rather than buffered. */
const MAX_BODY_BYTES = 32 * 1024 * 1024

async function serve(
  handler: (req: Request) => Promise<Response>,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const body = await bodyOf(req)
  if (body === "too-large") {
    res.writeHead(413, { "content-type": "application/json" })
    res.end(JSON.stringify({ error: { code: "TNX_BAD_REQUEST", message: "the body is larger than 32 MB" } }))
    return
  }
  const response = await handler(toFetchRequest(req, res, body))
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

/**
 * The whole body, read before the handler runs: a buffered body makes a much cheaper Fetch
 * `Request` than a stream bridged from the socket (`Readable.toWeb`), and chat posts are small.
 */
async function bodyOf(req: IncomingMessage): Promise<Buffer | undefined | "too-large"> {
  if (req.method === "GET" || req.method === "HEAD") return undefined
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > MAX_BODY_BYTES) return "too-large"
    chunks.push(chunk)
  }
  return Buffer.concat(chunks)
}

function toFetchRequest(req: IncomingMessage, res: ServerResponse, body: Buffer | undefined): Request {
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
  const init: RequestInit = { method, headers, signal: controller.signal }
  if (body !== undefined) init.body = body
  return new Request(url, init)
}
