/** Response headers of every server-sent event stream. */
const SSE_HEADERS = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" }

/**
 * A server-sent event stream whose status line waits for its first frame. `work` writes frames
 * with `send`; the response (200) resolves with the first frame, or when `work` ends without
 * one. A failure before any frame rejects, so the caller still gets the failure's HTTP status
 * (and its SDK may retry); a failure after the stream started is handed to `lateFailure`, which
 * writes the stream's last frames. `headers` is read when the response starts.
 */
export function eventStream(
  work: (send: (frame: string) => void) => Promise<void>,
  opts: { headers: () => Record<string, string>; lateFailure: (error: unknown) => void },
): Promise<Response> {
  const encoder = new TextEncoder()
  let controller!: ReadableStreamDefaultController<Uint8Array>
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c
    },
  })
  let closed = false
  return new Promise((resolve, reject) => {
    let started = false
    const start = () => {
      if (started) return
      started = true
      resolve(new Response(body, { status: 200, headers: { ...opts.headers(), ...SSE_HEADERS } }))
    }
    const send = (frame: string) => {
      start()
      // A caller that hung up cancelled the body; its frames have nowhere to go.
      if (!closed) {
        try {
          controller.enqueue(encoder.encode(frame))
        } catch {
          closed = true
        }
      }
    }
    const close = () => {
      if (closed) return
      closed = true
      try {
        controller.close()
      } catch {
        // already cancelled by the caller
      }
    }
    work(send).then(
      () => {
        start()
        close()
      },
      (error: unknown) => {
        if (!started) return reject(error)
        try {
          opts.lateFailure(error)
        } finally {
          close()
        }
      },
    )
  })
}
