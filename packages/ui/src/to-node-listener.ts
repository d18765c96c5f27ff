import type { IncomingMessage, ServerResponse } from "node:http"
import type { FrameSink, LiveRun } from "./internal/live-run.js"
import { rawHeader } from "./internal/raw-header.js"
import { type HandlerInput, type HandlerLogic, logicOf } from "./internal/reply.js"

/**
 * Serves a fetch-style handler (`createChatHandler`, `createAgUiHandler`) from `node:http`
 * (or Express, Fastify's raw server, …). A handler of this package is driven directly: its
 * body is read once as text and its SSE frames are written straight to the `ServerResponse`,
 * with no Fetch `Request`, `ReadableStream` or `Response` in between (a `Request` is built
 * only for a `conversationId` option). Any other handler gets a Fetch `Request` and its
 * `Response` is streamed back as it is produced. Either way a client that goes away stops
 * the writing, never the run behind it, and a full socket is waited on (`drain`). A request
 * whose `Host` header is not a valid `host[:port]` (or whose target is no URL path) gets 400
 * `TNX_BAD_REQUEST` and never reaches `handler`; a body over 32 MB gets 413.
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
    const base = baseOf(req)
    if (base === undefined) {
      // Nothing of a request with a malformed Host reaches the handler: its URL has no meaning.
      req.resume()
      return refuse(res, 400, "the Host header is not a valid host[:port]")
    }
    const served = logic ? serveLogic(logic, base, req, res) : serveFetch(handler, base, req, res)
    void served.catch((error: unknown) => {
      if (!res.headersSent) {
        if (error instanceof BadTarget) refuse(res, 400, error.message)
        else {
          res.writeHead(500, { "content-type": "application/json" })
          res.end(JSON.stringify({ error: { code: "TNX_INTERNAL", message: "internal error" } }))
        }
      } else res.destroy(error instanceof Error ? error : undefined)
    })
  }
}

/** Chat posts are small; a body beyond this is refused rather than buffered. */
const MAX_BODY_BYTES = 32 * 1024 * 1024

/** The fast path: this package's logic on the `IncomingMessage`, frames written to `res`. */
async function serveLogic(
  logic: HandlerLogic,
  base: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const body = await bodyOf(req)
  if (body === "too-large") return tooLarge(res)
  const reply = await logic(new NodeInput(base, req, res, body))
  if (reply instanceof Response) return writeResponse(reply, res)
  if ("live" in reply) return streamLive(reply, res)
  res.writeHead(reply.status, reply.headers)
  res.end(reply.body ?? undefined)
}

/**
 * A request as the handlers' logic reads it, from the `IncomingMessage` and its read body: one
 * object a request, its methods on the prototype (no closures a request). The URL is parsed only
 * when read (a stream resumption, a `Request`): a post never needs it.
 */
class NodeInput implements HandlerInput {
  readonly #base: string
  readonly #req: IncomingMessage
  readonly #res: ServerResponse
  readonly #body: Buffer | undefined
  #url: string | undefined
  #request: Request | undefined

  constructor(base: string, req: IncomingMessage, res: ServerResponse, body: Buffer | undefined) {
    this.#base = base
    this.#req = req
    this.#res = res
    this.#body = body
  }

  get method(): string {
    return this.#req.method ?? "GET"
  }

  get url(): string {
    this.#url ??= urlOf(this.#req, this.#base)
    return this.#url
  }

  // Read only for a post that carries `Origin` (a browser's).
  get origin(): string {
    return new URL(this.#base).origin
  }

  header(name: string): string | undefined {
    return headerOf(this.#req, name)
  }

  text(): Promise<string> {
    return Promise.resolve(textOf(this.#body))
  }

  request(): Request {
    this.#request ??= toFetchRequest(this.#req, this.#res, this.url, this.#body)
    return this.#request
  }
}

/** The generic path: a Fetch `Request` in, the `Response` streamed out. */
async function serveFetch(
  handler: (req: Request) => Promise<Response>,
  base: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const body = await bodyOf(req)
  if (body === "too-large") return tooLarge(res)
  await writeResponse(await handler(toFetchRequest(req, res, urlOf(req, base), body)), res)
}

function tooLarge(res: ServerResponse): void {
  refuse(res, 413, "the body is larger than 32 MB")
}

/**
 * A request header by lower-case name, as `req.headers` gives it: read from the raw headers
 * (Node builds `req.headers` only when it is read), unless the server joins duplicates.
 */
function headerOf(req: IncomingMessage, name: string): string | undefined {
  if ((req as { joinDuplicateHeaders?: boolean }).joinDuplicateHeaders === true) {
    const value = req.headers[name]
    return Array.isArray(value) ? value.join(", ") : value
  }
  return rawHeader(req.rawHeaders, name)
}

/** A `TNX_BAD_REQUEST` refusal written before the handler saw anything. */
function refuse(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json" })
  res.end(JSON.stringify({ error: { code: "TNX_BAD_REQUEST", message } }))
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
function streamLive(
  reply: { status: number; headers: Record<string, string>; live: LiveRun<never> },
  res: ServerResponse,
): void {
  res.writeHead(reply.status, reply.headers)
  // The frames so far carry the headers in their write (one syscall, not two).
  const detach = reply.live.attach(new ResponseSink(res))
  // A run with no frame yet still answers at once.
  if (!res.headersSent) res.flushHeaders()
  // The client went away: stop writing; the run goes on and keeps its durable state.
  // `on`, not `once`: a response closes once, and `once` wraps the listener (two objects a turn).
  if (res.destroyed) detach()
  else if (!res.writableEnded) res.on("close", detach)
}

/**
 * A live run's frames into a `ServerResponse`. The run never waits for a client, so while
 * the socket is full (`write` returned false) frames queue here until `drain`, and go out as
 * one write. The last frames and the response's end are one write.
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

  close(last: string): void {
    this.#closed = true
    if (this.#queued !== undefined) {
      if (last !== "") this.#queued.push(last)
      return
    }
    if (!this.#res.destroyed) this.#res.end(last)
  }

  #drain(): void {
    const frames = this.#queued ?? []
    this.#queued = undefined
    const joined = frames.join("")
    if (this.#closed) {
      if (!this.#res.destroyed) this.#res.end(joined)
    } else if (joined !== "") this.write(joined)
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
    // `on`, not `once`: a request ends once, and a settled promise ignores a later error.
    req.on("data", onData)
    req.on("end", () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)))
    req.on("error", reject)
  })
}

/** The body as `Request.text()` reads it: UTF-8, a leading byte order mark dropped. */
function textOf(body: Buffer | undefined): string {
  const text = body === undefined ? "" : body.toString("utf8")
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
}

/** A request target the URL parser refuses (`//[`): the 400 of `toNodeListener`. */
class BadTarget extends Error {}

/**
 * An authority as `Host` may carry it: a registered name or IPv4 address, or an IPv6 literal
 * in brackets, and a port. No user info, path, space or percent sign: `new URL` throws on
 * some of them and reads another host than the one sent from the others (`a@b`, `a/b`).
 */
const HOST = /^(?:[a-z0-9._~-]+|\[[0-9a-f:.]+\])(?::(\d{1,5}))?$/i

/**
 * The scheme and host the request's URL is resolved against, or `undefined` when its `Host`
 * header is malformed (a request without one is served as `localhost`, as Node's server allows).
 */
function baseOf(req: IncomingMessage): string | undefined {
  const host = headerOf(req, "host") || "localhost"
  const scheme = (req.socket as { encrypted?: boolean }).encrypted === true ? "https" : "http"
  // A server sees one Host a request after another: the last one judged is not judged again.
  const last = lastBase
  if (last.host === host && last.scheme === scheme) return last.base
  const match = HOST.exec(host)
  // The pattern admits what only the parser judges (`999.1.1.1`, an IPv6 literal's digits, punycode).
  const base =
    match === null || Number(match[1] ?? 0) > 65_535 || !URL.canParse(`${scheme}://${host}`)
      ? undefined
      : `${scheme}://${host}`
  lastBase = { host, scheme, base }
  return base
}

/** The last `Host` and scheme `baseOf` judged, and its answer. */
let lastBase: { host: string; scheme: string; base: string | undefined } = {
  host: "",
  scheme: "",
  base: undefined,
}

function urlOf(req: IncomingMessage, base: string): string {
  try {
    return new URL(req.url ?? "/", base).href
  } catch {
    throw new BadTarget("the request target is not a valid URL path")
  }
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
