import { createHash, timingSafeEqual } from "node:crypto"
import { JsonRpcTransportHandler } from "@a2a-js/sdk/server"

// JSON-RPC over HTTP for serveA2A: versions, tokens, bounded bodies, envelopes and SSE.

/** @internal "1.0" / "0.3" for the versions served, `undefined` for another; absent means v0.3. */
export function versionOf(header: string | null): "1.0" | "0.3" | undefined {
  if (header === null || header.trim() === "") return "0.3"
  const v = header.trim()
  if (v === "1.0" || v === "1") return "1.0"
  if (v === "0.3" || v === "0.3.0") return "0.3"
  return undefined
}

/** @internal The owner key of a listed bearer token (a hash of it), else undefined. */
export function ownerOf(authorization: string | null, tokens: Buffer[]): string | undefined {
  const match = /^Bearer\s+(.+)$/i.exec(authorization ?? "")
  if (!match?.[1]) return undefined
  const given = Buffer.from(match[1].trim())
  const known = tokens.some((t) => t.length === given.length && timingSafeEqual(t, given))
  // Tasks are filed under a hash of the token, never the token itself.
  return known ? createHash("sha256").update(given).digest("hex").slice(0, 32) : undefined
}

/** @internal The body, or undefined once it passes `limit` bytes (the rest unread). */
export async function readLimited(request: Request, limit: number): Promise<string | undefined> {
  if (!request.body) return ""
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > limit) {
      await reader.cancel()
      return undefined
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks).toString("utf8")
}

/** @internal A JSON content type (`application/json`, `application/a2a+json`). */
export function isJsonType(contentType: string | null): boolean {
  const type = (contentType ?? "").split(";")[0]?.trim().toLowerCase()
  return type === "application/json" || type === "application/a2a+json"
}

/** @internal The JSON-RPC id of a parsed body, or null. */
export function idOf(value: unknown): string | number | null {
  const id = (value as { id?: unknown } | null)?.id
  return typeof id === "string" || typeof id === "number" ? id : null
}

/** @internal A JSON-RPC 2.0 request object. */
export function isRpcRequest(value: unknown): boolean {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false
  const r = value as { jsonrpc?: unknown; method?: unknown; id?: unknown }
  return (
    r.jsonrpc === "2.0" &&
    typeof r.method === "string" &&
    (r.id === undefined || idOf(r) !== null || r.id === null)
  )
}

/** @internal What a streaming method returns. */
export function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === "object" && value !== null && Symbol.asyncIterator in value
}

/** @internal HTTP 413, the body unread. */
export function tooLarge(): Response {
  return new Response(null, { status: 413 })
}

/** @internal The `A2A-Version` response header. */
export function versionHeader(version: "1.0" | "0.3"): Record<string, string> {
  return { "a2a-version": version }
}

/** @internal A JSON-RPC error envelope (HTTP 200). */
export function rpcError(id: string | number | null, code: number, message: string): Response {
  return Response.json({ jsonrpc: "2.0", id, error: { code, message } })
}

/**
 * @internal
 * An error envelope keeps its code and the message our own errors chose; the SDK's error
 * details (`data`) are dropped, and an internal error says no more than that.
 */
export function scrub(envelope: unknown): unknown {
  const e = envelope as { error?: { code?: number; message?: string; data?: unknown } }
  if (!e?.error) return envelope
  const code = e.error.code ?? -32603
  const message = code === -32603 ? "Internal error" : (e.error.message ?? "")
  return { ...(envelope as object), error: { code, message } }
}

/** @internal The code and our own message of a thrown A2A error; anything else is an internal error. */
export function envelopeOf(id: string | number | null, error: unknown): unknown {
  const mapped = JsonRpcTransportHandler.mapToJSONRPCError(error)
  return scrub({ jsonrpc: "2.0", id, error: mapped })
}

/** @internal A stream's events as SSE; a refused stream (its first event throws) is a plain JSON-RPC error. */
export async function sse(
  events: AsyncIterable<unknown>,
  id: string | number | null,
  v1: boolean,
): Promise<Response> {
  const encoder = new TextEncoder()
  const iterator = events[Symbol.asyncIterator]()
  // The first event decides the reply: a refused stream (unknown task, …) is a plain
  // JSON-RPC error, not an event stream.
  let first: IteratorResult<unknown>
  try {
    first = await iterator.next()
  } catch (error) {
    return Response.json(envelopeOf(id, error))
  }
  let pending: IteratorResult<unknown> | undefined = first
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = pending ?? (await iterator.next())
        pending = undefined
        if (next.done) return controller.close()
        controller.enqueue(encoder.encode(`data: ${JSON.stringify(scrub(next.value))}\n\n`))
      } catch (error) {
        controller.enqueue(encoder.encode(`data: ${JSON.stringify(envelopeOf(id, error))}\n\n`))
        controller.close()
      }
    },
    async cancel() {
      await iterator.return?.(undefined)
    },
  })
  return new Response(stream, {
    headers: {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      ...versionHeader(v1 ? "1.0" : "0.3"),
    },
  })
}
