import { describe, expect, it } from "vitest"
import { type SSEEvent, readSSE } from "./sse.js"

const encoder = new TextEncoder()

async function* chunksOf(parts: (Uint8Array | string)[]): AsyncGenerator<Uint8Array | string> {
  for (const part of parts) yield part
}

async function events(parts: (Uint8Array | string)[]): Promise<SSEEvent[]> {
  const out: SSEEvent[] = []
  for await (const ev of readSSE(chunksOf(parts))) out.push(ev)
  return out
}

/** Splits the UTF-8 bytes of `text` at the given byte offsets. */
function splitBytes(text: string, cuts: number[]): Uint8Array[] {
  const bytes = encoder.encode(text)
  const pieces: Uint8Array[] = []
  let start = 0
  for (const cut of [...cuts, bytes.length]) {
    pieces.push(bytes.slice(start, cut))
    start = cut
  }
  return pieces
}

const STREAM =
  'event: message_start\ndata: {"a":1}\n\n' +
  ": keep-alive comment\n\n" +
  'event: content_block_delta\ndata: {"text":"héllo 👋 wörld"}\n\n' +
  "data: line one\ndata: line two\n\n" +
  "data: [DONE]\n\n"

const EXPECTED: SSEEvent[] = [
  { event: "message_start", data: '{"a":1}' },
  { event: "content_block_delta", data: '{"text":"héllo 👋 wörld"}' },
  { event: "message", data: "line one\nline two" },
  { event: "message", data: "[DONE]" },
]

describe("readSSE", () => {
  it("parses whole frames: event names, comments, multi-line data", async () => {
    expect(await events([encoder.encode(STREAM)])).toEqual(EXPECTED)
  })

  it("gives the same events whatever the chunk boundaries, including inside a multi-byte character", async () => {
    const length = encoder.encode(STREAM).length
    // Every single cut point, then every byte on its own.
    for (let cut = 1; cut < length; cut++) {
      expect(await events(splitBytes(STREAM, [cut])), `cut at byte ${cut}`).toEqual(EXPECTED)
    }
    const oneByOne = Array.from({ length: length - 1 }, (_, i) => i + 1)
    expect(await events(splitBytes(STREAM, oneByOne))).toEqual(EXPECTED)
  })

  it("decodes a 4-byte character split over three chunks", async () => {
    const text = "data: 👋\n\n"
    const start = encoder.encode("data: ").length
    expect(await events(splitBytes(text, [start + 1, start + 3]))).toEqual([{ event: "message", data: "👋" }])
  })

  it("accepts CRLF line ends, also with CR and LF in different chunks", async () => {
    const crlf = STREAM.replaceAll("\n", "\r\n")
    expect(await events([encoder.encode(crlf)])).toEqual(EXPECTED)
    const length = encoder.encode(crlf).length
    for (let cut = 1; cut < length; cut += 3) {
      expect(await events(splitBytes(crlf, [cut])), `cut at byte ${cut}`).toEqual(EXPECTED)
    }
  })

  it("ignores comments, unknown fields and data-less frames", async () => {
    const text = ": hello\nid: 7\nretry: 1000\n\nevent: ping\n\nfoo: bar\ndata: x\n\n"
    expect(await events([text])).toEqual([{ event: "message", data: "x" }])
  })

  it("strips one leading space of a value only, and takes a field without colon as empty", async () => {
    const text = "data:no-space\n\ndata:  two spaces\n\ndata\ndata: b\n\n"
    expect(await events([text])).toEqual([
      { event: "message", data: "no-space" },
      { event: "message", data: " two spaces" },
      { event: "message", data: "\nb" },
    ])
  })

  it("resets the event name after each frame", async () => {
    const text = "event: a\ndata: 1\n\ndata: 2\n\n"
    expect(await events([text])).toEqual([
      { event: "a", data: "1" },
      { event: "message", data: "2" },
    ])
  })

  it("yields a trailing frame that is not followed by a blank line", async () => {
    expect(await events(["data: a\n\n", "data: last\n"])).toEqual([
      { event: "message", data: "a" },
      { event: "message", data: "last" },
    ])
  })

  it("yields a trailing frame whose last line has no line end", async () => {
    expect(await events(["data: a\n\nevent: end\n", 'data: {"done":true}'])).toEqual([
      { event: "message", data: "a" },
      { event: "end", data: '{"done":true}' },
    ])
    expect(await events([encoder.encode("data: caf"), new Uint8Array([0xc3, 0xa9])])).toEqual([
      { event: "message", data: "café" },
    ])
  })

  it("yields nothing for an empty body or only comments", async () => {
    expect(await events([])).toEqual([])
    expect(await events([": only a comment\n\n"])).toEqual([])
  })

  it("accepts string chunks", async () => {
    expect(await events(["data: he", "llo\n", "\n"])).toEqual([{ event: "message", data: "hello" }])
  })
})
