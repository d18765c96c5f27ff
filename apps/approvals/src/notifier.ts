import { runIdOfEntry } from "@toolnexus/core"
import type { PendingEntry } from "@toolnexus/core"
import { type DurableStore, type NotificationOutbox, createNotificationOutbox } from "@toolnexus/durable"
import { describeRequest } from "./describe-request.js"
import { SIGNATURE_HEADER, signBody } from "./security/webhook-signature.js"

/** Where the service posts its signed notifications, and the secret that signs them. */
export interface NotifyOptions {
  url: string
  secret: string
  /** How long one delivery may take; default 5000 ms. */
  timeoutMs?: number
}

/** What a notification says: a run parked on a request, one expires soon, or one was answered. */
export type Notification =
  | { type: "request.pending"; requestId: string; runId: string; kind: string; prompt: string; tool?: string }
  | {
      type: "request.expiring"
      requestId: string
      runId: string
      kind: string
      prompt: string
      tool?: string
      /** The request's deadline (RFC 3339). */
      expiresAt: string
    }
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
  return function notify(notification: Notification): void {
    void postNotification(opts, notification).catch(onError)
  }
}

/**
 * Posts one signed notification; resolves when the receiver answered 2xx.
 *
 * @throws Error naming the receiver when it answers otherwise, or cannot be reached in time.
 */
export async function postNotification(opts: NotifyOptions, notification: Notification): Promise<void> {
  const body = JSON.stringify({ ...notification, at: new Date().toISOString() })
  const res = await fetch(opts.url, {
    method: "POST",
    headers: { "content-type": "application/json", [SIGNATURE_HEADER]: signBody(opts.secret, body) },
    body,
    signal: AbortSignal.timeout(opts.timeoutMs ?? 5000),
  })
  await res.body?.cancel()
  if (!res.ok) throw new Error(`the notification receiver at ${opts.url} answered HTTP ${res.status}`)
}

/** Options of {@link createWebhookOutbox} beyond the receiver. */
export interface WebhookOutboxOptions {
  /** Post `request.expiring` this many ms before a request's `expiresAt`; off when absent. */
  warnBeforeMs?: number
  /** Called with each failed attempt (it is retried by the outbox's `sweep`). */
  onError: (error: unknown) => void
  /** Called when an attempt was recorded or a warning raised (the inbox pages refresh). */
  onChange?: () => void
  /** The time the sweeps go by; default the system clock. */
  clock?: { now(): number }
}

/**
 * The `request.pending` and `request.expiring` notifications of `store`'s open requests, sent
 * from durable's notification outbox: a failed post is retried by `sweep` with backoff, the
 * attempts are recorded (`getDelivery`), and a request parked just before a crash is notified
 * by the next sweep of any instance.
 */
export function createWebhookOutbox(
  store: DurableStore,
  notify: NotifyOptions,
  opts: WebhookOutboxOptions,
): NotificationOutbox {
  const changed = () => opts.onChange?.()
  const outbox = createNotificationOutbox(store, {
    notify: async (entry, info) => {
      try {
        await postNotification(notify, notificationOf(entry, info.kind))
      } finally {
        changed()
      }
    },
    ...(opts.warnBeforeMs !== undefined ? { warnBeforeMs: opts.warnBeforeMs } : {}),
    ...(opts.clock ? { clock: opts.clock } : {}),
    onEvent: changed,
    logger: {
      info: () => undefined,
      error: (message, data) => opts.onError(new Error(`${message}: ${String(data?.error ?? "")}`)),
    },
  })
  return outbox
}

function notificationOf(entry: PendingEntry, kind: "new" | "expiring"): Notification {
  const { request } = entry
  const tool = describeRequest(request).tool
  const base = {
    requestId: request.id,
    runId: runIdOfEntry(entry),
    kind: request.kind,
    prompt: request.prompt,
    ...(tool ? { tool } : {}),
  }
  return kind === "new"
    ? { type: "request.pending", ...base }
    : { type: "request.expiring", ...base, expiresAt: request.expiresAt as string }
}
