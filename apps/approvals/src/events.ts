import type { Context } from "hono"
import { streamSSE } from "hono/streaming"

/** What changed: the open or failed requests, or the history of answers. */
export type InboxEventType = "inbox" | "history"

/** Fans change notices out to the pages listening over server-sent events. */
export interface EventHub {
  /** Calls `listener` on every change until the returned function is called. */
  subscribe(listener: (type: InboxEventType) => void): () => void
  /** Announces a change made by this instance. */
  notify(type: InboxEventType): void
  /** Stops polling. */
  close(): void
}

/**
 * Creates the hub. Changes made here are announced at once; changes made by other instances
 * on the same store (a run parked over there, an answer by webhook) are noticed by polling
 * `fingerprint` every `pollMs` — only while at least one page listens, so an idle service
 * costs nothing.
 */
export function createEventHub(opts: {
  fingerprint: () => Promise<Record<InboxEventType, string>>
  pollMs: number
}): EventHub {
  const listeners = new Set<(type: InboxEventType) => void>()
  let last: Record<InboxEventType, string> | undefined
  let timer: ReturnType<typeof setInterval> | undefined
  let polling = false

  const emit = (type: InboxEventType) => {
    for (const listener of listeners) listener(type)
  }
  async function poll(): Promise<void> {
    if (polling) return
    polling = true
    try {
      const now = await opts.fingerprint()
      if (last) for (const type of ["inbox", "history"] as const) if (now[type] !== last[type]) emit(type)
      last = now
    } catch {
      // A store hiccup: try again on the next tick.
    } finally {
      polling = false
    }
  }

  return {
    subscribe(listener) {
      listeners.add(listener)
      if (!timer) {
        last = undefined
        void poll()
        timer = setInterval(() => void poll(), opts.pollMs)
        timer.unref?.()
      }
      return () => {
        listeners.delete(listener)
        if (listeners.size === 0 && timer) {
          clearInterval(timer)
          timer = undefined
        }
      }
    },
    notify(type) {
      // What this instance announces needs no poll to be noticed again.
      last = undefined
      emit(type)
    },
    close() {
      if (timer) clearInterval(timer)
      timer = undefined
      listeners.clear()
    },
  }
}

/**
 * The `GET /events` response: a `ready` event, then one event per change (`inbox`,
 * `history`), and a comment every 25 s so proxies keep the idle stream open.
 */
export function streamEvents(c: Context, hub: EventHub): Response {
  return streamSSE(c, async (stream) => {
    const queue = new Set<InboxEventType>()
    let wake: (() => void) | undefined
    let open = true
    const unsubscribe = hub.subscribe((type) => {
      queue.add(type)
      wake?.()
    })
    stream.onAbort(() => {
      open = false
      wake?.()
    })
    try {
      await stream.writeSSE({ event: "ready", data: "{}" })
      while (open) {
        if (queue.size === 0) {
          await new Promise<void>((resolve) => {
            wake = resolve
            setTimeout(resolve, 25_000).unref?.()
          })
          wake = undefined
        }
        if (!open) break
        if (queue.size === 0) await stream.write(": keep-alive\n\n")
        for (const type of [...queue]) {
          queue.delete(type)
          await stream.writeSSE({ event: type, data: JSON.stringify({ type }) })
        }
      }
    } finally {
      unsubscribe()
    }
  })
}
