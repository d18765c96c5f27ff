import { LLMResponseError } from "../errors.js"

/**
 * @internal The JSON object an event's data carries, or undefined for any other JSON value.
 *
 * @throws LLMResponseError naming the style when the data is not JSON.
 */
export function eventPayload(style: string, data: string): Record<string, unknown> | undefined {
  let payload: unknown
  try {
    payload = JSON.parse(data)
  } catch {
    throw new LLMResponseError(`the ${style} stream sent an event that is not JSON: ${data.slice(0, 200)}`)
  }
  return typeof payload === "object" && payload !== null && !Array.isArray(payload)
    ? (payload as Record<string, unknown>)
    : undefined
}

/** @internal One server-sent event. */
export interface SSEEvent {
  event: string
  data: string
}

/**
 * @internal Splits a byte stream into server-sent events. Handles frames split across
 * chunks (also inside a multi-byte character), CRLF line ends, comments, multi-line `data:`
 * fields, and a last frame cut short by the end of the body (no blank line, or no line end).
 */
export async function* readSSE(body: AsyncIterable<Uint8Array | string>): AsyncGenerator<SSEEvent> {
  const decoder = new TextDecoder()
  let buffer = ""
  let event = ""
  let data: string[] = []

  /** Applies one line; returns the event a blank line completes. */
  function line(text: string): SSEEvent | undefined {
    if (text.endsWith("\r")) text = text.slice(0, -1)
    if (text === "") {
      const done = data.length ? { event: event || "message", data: data.join("\n") } : undefined
      event = ""
      data = []
      return done
    }
    if (text.startsWith(":")) return undefined
    const colon = text.indexOf(":")
    const field = colon === -1 ? text : text.slice(0, colon)
    let value = colon === -1 ? "" : text.slice(colon + 1)
    if (value.startsWith(" ")) value = value.slice(1)
    if (field === "data") data.push(value)
    else if (field === "event") event = value
    return undefined
  }

  for await (const chunk of body) {
    buffer += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true })
    let newline = buffer.indexOf("\n")
    while (newline !== -1) {
      const done = line(buffer.slice(0, newline))
      buffer = buffer.slice(newline + 1)
      if (done) yield done
      newline = buffer.indexOf("\n")
    }
  }
  // The body may end without a final line end: flush the decoder and keep that last line,
  // or a provider's closing frame (OpenAI's usage chunk, say) would be silently lost.
  buffer += decoder.decode()
  if (buffer !== "") line(buffer)
  if (data.length) yield { event: event || "message", data: data.join("\n") }
}
