import { SIGNATURE_HEADER, signBody } from "./security/webhook-signature.js"

/** Where the service posts its signed notifications, and the secret that signs them. */
export interface NotifyOptions {
  url: string
  secret: string
  /** How long one delivery may take; default 5000 ms. */
  timeoutMs?: number
}

/** What a notification says: a run parked on a request, or a request was answered. */
export type Notification =
  | { type: "request.pending"; requestId: string; runId: string; kind: string; prompt: string; tool?: string }
  | {
      type: "request.answered"
      requestId: string
      runId: string
      answeredBy: string
      ok: boolean
      reason?: string
      /** The run's status after the answer (`done`, `pending`, `error`, …). */
      outcome: string
    }

/**
 * Posts notifications as JSON to `url`, signed like incoming webhooks (header
 * `x-toolnexus-signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`), so a
 * receiver checks them with the same few lines. Fire and forget: a failed delivery is
 * reported to `onError` and never fails the answer that caused it.
 */
export function createNotifier(opts: NotifyOptions, onError: (error: unknown) => void) {
  const timeoutMs = opts.timeoutMs ?? 5000
  return function notify(notification: Notification): void {
    const body = JSON.stringify({ ...notification, at: new Date().toISOString() })
    void fetch(opts.url, {
      method: "POST",
      headers: { "content-type": "application/json", [SIGNATURE_HEADER]: signBody(opts.secret, body) },
      body,
      signal: AbortSignal.timeout(timeoutMs),
    })
      .then(async (res) => {
        await res.body?.cancel()
        if (!res.ok) throw new Error(`the notification receiver at ${opts.url} answered HTTP ${res.status}`)
      })
      .catch(onError)
  }
}
