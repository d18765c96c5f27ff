import type { Dispatcher } from "undici"
import { AbortError, NetworkError } from "../errors.js"
import { sharedAgent } from "../internal/http-agent.js"
import { type RunSignal, realSignal } from "../internal/run-abort.js"

/** @internal A response whose body is read once, as text or as a byte stream. */
export interface HttpReply {
  status: number
  header(name: string): string | undefined
  text(): Promise<string>
  chunks(): AsyncIterable<Uint8Array>
  /** Releases the connection without reading the body. */
  discard(): Promise<void>
}

/**
 * @internal Sends one JSON POST to the endpoint the transport was made for. A failure to send
 * may reject with the driver's own error: the caller maps it (`transportError`, with the
 * request's signal), so that the default transport needs no rejection handler per request.
 */
export type Transport = (init: {
  headers: Record<string, string>
  body: string
  signal?: RunSignal | undefined
}) => Promise<HttpReply>

/**
 * @internal The default transport: undici on the shared keep-alive Agent. The URL is parsed
 * once here, not by undici on every request (a `new URL` per LLM turn).
 */
export function undiciTransport(url: string): Transport {
  let target: Target | undefined
  // Not async, for the reason `withRetries` gives: `then` handlers instead of a continuation.
  return ({ headers, body, signal }) => {
    let sent: Promise<Dispatcher.ResponseData>
    try {
      // Parsed on first use, so a bad URL fails the request as before, not createClient.
      target ??= targetOf(url)
      const { origin, path } = target
      // A host's `RunAbort` goes to undici as it is: undici takes any object with
      // `addEventListener` (lib/api/api-request.js), so no `AbortSignal` is made for it.
      sent = sharedAgent().request({
        origin,
        path,
        method: "POST",
        headers,
        body,
        signal: signal as AbortSignal | undefined,
      })
    } catch (error) {
      return Promise.reject(transportError(error, signal))
    }
    // A rejection is mapped by the caller (see `Transport`): no closure over `signal` a request.
    return sent.then(undiciReply)
  }
}

function undiciReply(res: Dispatcher.ResponseData): HttpReply {
  return new UndiciReply(res)
}

interface Target {
  url: string
  origin: string
  path: string
}

// The last URL parsed: a host making a client per run (an approval host's) parses its one
// endpoint once, not once per client.
let lastTarget: Target | undefined

function targetOf(url: string): Target {
  if (lastTarget?.url === url) return lastTarget
  const parsed = new URL(url)
  lastTarget = { url, origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` }
  return lastTarget
}

// Classes rather than literals of closures: one object per reply on the hot path.
class UndiciReply implements HttpReply {
  readonly status: number
  readonly #res: Dispatcher.ResponseData

  constructor(res: Dispatcher.ResponseData) {
    this.status = res.statusCode
    this.#res = res
  }

  header(name: string): string | undefined {
    const value = this.#res.headers[name]
    return Array.isArray(value) ? value[0] : value
  }

  text(): Promise<string> {
    return this.#res.body.text()
  }

  chunks(): AsyncIterable<Uint8Array> {
    return this.#res.body
  }

  discard(): Promise<void> {
    return this.#res.body.dump()
  }
}

/** @internal A transport over a user-supplied `fetch` (mocks, proxies, record/replay). */
export function fetchTransport(fetchFn: typeof fetch, url: string): Transport {
  return async ({ headers, body, signal }) => {
    try {
      return new FetchReply(await fetchFn(url, { method: "POST", headers, body, signal: realSignal(signal) }))
    } catch (error) {
      throw transportError(error, signal)
    }
  }
}

class FetchReply implements HttpReply {
  readonly status: number
  readonly #res: Response

  constructor(res: Response) {
    this.status = res.status
    this.#res = res
  }

  header(name: string): string | undefined {
    return this.#res.headers.get(name) ?? undefined
  }

  text(): Promise<string> {
    return this.#res.text()
  }

  chunks(): AsyncIterable<Uint8Array> {
    return (this.#res.body ?? emptyBody()) as AsyncIterable<Uint8Array>
  }

  async discard(): Promise<void> {
    await this.#res.body?.cancel().catch(() => {})
  }
}

async function* emptyBody(): AsyncGenerator<Uint8Array> {}

/** @internal Maps a failure while sending or reading to AbortError or NetworkError. */
export function transportError(error: unknown, signal: RunSignal | undefined): Error {
  if (AbortError.isInstance(error) || NetworkError.isInstance(error)) return error as Error
  if (signal?.aborted) return abortErrorOf(signal)
  const message = error instanceof Error ? error.message : String(error)
  return new NetworkError(`could not reach the LLM endpoint: ${message}`, { cause: error })
}

/** @internal The AbortError for an aborted signal, keeping a timeout's own message. */
export function abortErrorOf(signal: RunSignal): AbortError {
  const reason = signal.reason
  if (AbortError.isInstance(reason)) return reason as AbortError
  return new AbortError("the run was aborted", { cause: reason })
}
