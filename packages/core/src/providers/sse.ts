/** @internal One server-sent event. */
export interface SSEEvent {
  event: string
  data: string
}

/**
 * @internal Splits a byte stream into server-sent events. Handles frames split across
 * chunks, CRLF line ends, comments and multi-line `data:` fields.
 */
export async function* readSSE(body: AsyncIterable<Uint8Array | string>): AsyncGenerator<SSEEvent> {
  const decoder = new TextDecoder()
  let buffer = ""
  let event = ""
  let data: string[] = []
  for await (const chunk of body) {
    buffer += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true })
    let newline = buffer.indexOf("\n")
    while (newline !== -1) {
      let line = buffer.slice(0, newline)
      buffer = buffer.slice(newline + 1)
      if (line.endsWith("\r")) line = line.slice(0, -1)
      if (line === "") {
        if (data.length) yield { event: event || "message", data: data.join("\n") }
        event = ""
        data = []
      } else if (!line.startsWith(":")) {
        const colon = line.indexOf(":")
        const field = colon === -1 ? line : line.slice(0, colon)
        let value = colon === -1 ? "" : line.slice(colon + 1)
        if (value.startsWith(" ")) value = value.slice(1)
        if (field === "data") data.push(value)
        else if (field === "event") event = value
      }
      newline = buffer.indexOf("\n")
    }
  }
  if (data.length) yield { event: event || "message", data: data.join("\n") }
}
