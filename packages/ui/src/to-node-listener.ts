import type { IncomingMessage, ServerResponse } from "node:http"
import type { FrameSink, LiveRun } from "./internal/live-run.js"
import { type HandlerInput, type HandlerLogic, logicOf } from "./internal/reply.js"

/**
 * Serves a fetch-style handler (`createChatHandler`, `createAgUiHandler`) from `node:http`
 * (or Express, Fastify's raw server, …). A handler of this package is driven directly: its
 * body is read once as text and its SSE frames are written straight to the `ServerResponse`,
 * with no Fetch `Request`, `ReadableStream` or `Response` in between (a `Request` is built
 * only for a `conversationId` option). Any other handler gets a Fetch `Request` and its
 * `Response` is streamed back as it is produced. Either way a client that goes away stops
 * the writing, never the run behind it, and a full socket is waited on (`drain`).
 *
 * @param handler - a `(req: Request) => Promise<Response>`.
 * @returns a `node:http` request listener.
 * @example
 * import { createServer } from "node:http"
 * createServer(toNodeListener(createChatHandler({ client, toolkit }))).listen(3000)
 */
export function toNodeListener(
  handler: (req: Request) => Promise<Response>,
): (req: IncomingMessage, res: ServerResponse) => void {
  const logic = logicOf(handler)
  return (req, res) => {
    const served = logic ? serveLogic(logic, req, res) : serveFetch(handler, req, res)
    void served.catch((error: unknown) => {
      if (!res.headersSent) {
        res.writeHead(500, { "content-type": "application/json" })
        res.end(JSON.stringify({ error: { code: "TNX_INTERNAL", message: "internal error" } }))
      } else res.destroy(error instanceof Error ? error : undefined)
    })
  }
}

/** Chat posts are small; a body beyond this is refused rather than buffered. */
const MAX_BODY_BYTES = 32 * 1024 * 1024

/** The fast path: this package's logic on the `IncomingMessage`, frames written to `res`. */
async function serveLogic(logic: HandlerLogic, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await bodyOf(req)
  if (body === "too-large") return tooLarge(res)
  let url: string | undefined
  let request: Request | undefined
  const input: HandlerInput = {
    method: req.method ?? "GET",
    // Built when read (a stream resumption, a `Request`): a post never needs its URL parsed.
    get url() {
      url ??= urlOf(req)
      return url
    },
    text: async () => textOf(body),
    request: () => {
      request ??= toFetchRequest(req, res, input.url, body)
      return request
    },
  }
  const reply = await logic(input)
  if (reply instanceof Response) return writeResponse(reply, res)
  res.writeHead(reply.status, reply.headers)
  if ("live" in reply) streamLive(reply.live, res)
  else res.end(reply.body ?? undefined)
}

/** The generic path: a Fetch `Request` in, the `Response` streamed out. */
async function serveFetch(
  handler: (req: Request) => Promise<Response>,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const body = await bodyOf(req)
  if (body === "too-large") return tooLarge(res)
  await writeResponse(await handler(toFetchRequest(req, res, urlOf(req), body)), res)
}

function tooLarge(res: ServerResponse): void {
  res.writeHead(413, { "content-type": "application/json" })
  res.end(JSON.stringify({ error: { code: "TNX_BAD_REQUEST", message: "the body is larger than 32 MB" } }))
}

async function writeResponse(response: Response, res: ServerResponse): Promise<void> {
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

/** Writes a live run's frames to `res` until the run ends or the client goes away. */
function streamLive(run: LiveRun<never>, res: ServerResponse): void {
  const detach = run.attach(new ResponseSink(res))
  // The frames so far carried the headers in their write (one syscall, not two); a run with
  // none yet still answers at once.
  if (!res.headersSent) res.flushHeaders()
  // The client went away: stop writing; the run goes on and keeps its durable state.
  if (res.destroyed) detach()
  else res.once("close", detach)
}

/**
 * A live run's frames into a `ServerResponse`. The run never waits for a client, so while
 * the socket is full (`write` returned false) frames queue here until `drain`, and go out as one write.
 */
class ResponseSink implements FrameSink {
  readonly #res: ServerResponse
  #queued: string[] | undefined
  #closed = false

  constructor(res: ServerResponse) {
    this.#res = res
  }

  write(frame: string): void {
    if (this.#queued) {
      this.#queued.push(frame)
      return
    }
    if (this.#res.destroyed) return
    if (!this.#res.write(frame)) {
      this.#queued = []
      this.#res.once("drain", () => this.#drain())
    }
  }

  close(): void {
    this.#closed = true
    if (this.#queued === undefined && !this.#res.destroyed) this.#res.end()
  }

  #drain(): void {
    const frames = this.#queued ?? []
    this.#queued = undefined
    if (frames.length > 0) this.write(frames.join(""))
    if (this.#closed) this.close()
  }
}

/**
 * The whole body, read before the handler runs: a buffered body makes a much cheaper Fetch
 * `Request` than a stream bridged from the socket (`Readable.toWeb`), and chat posts are small.
 */
function bodyOf(req: IncomingMessage): Promise<Buffer | undefined | "too-large"> {
  if (req.method === "GET" || req.method === "HEAD") return Promise.resolve(undefined)
  // Events, not `for await`: a stream's async iterator costs more than the small body it reads.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.length
      chunks.push(chunk)
      if (size <= MAX_BODY_BYTES) return
      req.off("data", onData)
      req.resume()
      resolve("too-large")
    }
    req.on("data", onData)
    req.once("end", () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)))
    req.once("error", reject)
  })
}

/** The body as `Request.text()` reads it: UTF-8, a leading byte order mark dropped. */
function textOf(body: Buffer | undefined): string {
  const text = body === undefined ? "" : body.toString("utf8")
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
}

function urlOf(req: IncomingMessage): string {
  const host = req.headers.host ?? "localhost"
  const secure = (req.socket as { encrypted?: boolean }).encrypted === true
  return new URL(req.url ?? "/", `${secure ? "https" : "http"}://${host}`).href
}

function toFetchRequest(
  req: IncomingMessage,
  res: ServerResponse,
  url: string,
  body: Buffer | undefined,
): Request {
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
