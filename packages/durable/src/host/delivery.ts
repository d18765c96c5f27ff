import {
  ConfigError,
  type DeliveryRecord,
  type ExpiringEvent,
  type Logger,
  type NotifyInfo,
  type PendingEntry,
  expiryTime,
  isExpired,
  runIdOfEntry,
} from "@toolnexus/core"
import type { DurableStore } from "../durable-store.js"
import { RECORD_FORMAT, checkedRecord } from "./record-format.js"

// The outbox of a store host's notifications is the open-request index itself: a request is
// saved with its suspension, so it is there whatever happens to the process next. What was
// sent is kept per request in snapshots (no schema change): a state record per notification
// kind, and one attempt record per attempt, taken with `createSnapshot` so that two hosts
// sharing the store never make the same attempt. An attempt whose host died before it
// resolved is counted and the next one goes on once its lease ran out.

/** What is kept per request and notification kind (snapshot `tnx-notify/<kind>/<request id>`). */
interface NotifyState {
  v: 1
  attempts: number
  lastAttemptAt?: string
  lastError?: string
  deliveredAt?: string
  nextAttemptAt?: string
  /** Set while an attempt runs (its start): another host leaves it alone until it times out. */
  inFlightSince?: string
  /** With kind `expiring`: when the warning was raised. */
  warnedAt?: string
}

/** @internal How a host sends notifications. */
export interface DeliveryOptions {
  notify: ((entry: PendingEntry, info: NotifyInfo) => Promise<void>) | undefined
  now: () => number
  /** An attempt not resolved within it counts as failed (and one whose host died, as taken). */
  timeoutMs: number
  /** The first retry's delay; each further one doubles, up to `maxBackoffMs`. */
  backoffMs: number
  maxBackoffMs: number
  onError: (entry: PendingEntry, info: NotifyInfo, error: unknown) => void
}

const stateKey = (kind: NotifyInfo["kind"], id: string) => `tnx-notify/${kind}/${id}`
const beatKey = (kind: NotifyInfo["kind"], id: string) => `tnx-notify-beat/${kind}/${id}`
const attemptKey = (kind: NotifyInfo["kind"], id: string, n: number) =>
  `tnx-notify-attempt/${kind}/${id}/${n}`
const iso = (ms: number) => new Date(ms).toISOString()
/** A delivery record (format v1; one without `v` reads as v1, another version is refused). */
const read = async <T extends object>(store: DurableStore, key: string): Promise<T | undefined> =>
  checkedRecord<T>(`the notification record ${key}`, await store.getSnapshot(key))

/**
 * @internal One attempt of notification `kind` for `entry`, when one is due: not delivered,
 * past its backoff, and no live attempt elsewhere. Resolves once the attempt is recorded.
 */
export async function attemptNotify(
  store: DurableStore,
  entry: PendingEntry,
  kind: NotifyInfo["kind"],
  opts: DeliveryOptions,
): Promise<void> {
  const { notify } = opts
  if (!notify) return
  const id = entry.request.id
  const state = (await read<NotifyState>(store, stateKey(kind, id))) ?? {
    v: RECORD_FORMAT,
    attempts: 0,
  }
  if (state.deliveredAt !== undefined) return
  if (kind === "expiring" && state.warnedAt === undefined) return
  const now = opts.now()
  if (state.inFlightSince !== undefined && (await inFlight(store, kind, id, state.inFlightSince, now, opts)))
    return
  if (state.nextAttemptAt !== undefined && now < Date.parse(state.nextAttemptAt)) return
  let n = state.attempts + 1
  for (;;) {
    if (await store.createSnapshot(attemptKey(kind, id, n), { v: RECORD_FORMAT, at: iso(now) })) break
    const other = await read<{ at: string }>(store, attemptKey(kind, id, n))
    // Another host is making this attempt: it records it.
    if (other && Date.parse(other.at) + opts.timeoutMs > now) return
    n++
  }
  state.attempts = n
  state.lastAttemptAt = iso(now)
  state.inFlightSince = iso(now)
  await store.putSnapshot(beatKey(kind, id), { v: RECORD_FORMAT, at: iso(now) })
  await store.putSnapshot(stateKey(kind, id), state)
  // The heartbeat says this process is alive while `notify` runs; its own key, so a late beat
  // never overwrites the attempt's outcome.
  const beat = setInterval(() => {
    void store
      .putSnapshot(beatKey(kind, id), { v: RECORD_FORMAT, at: iso(opts.now()) })
      .catch(() => undefined)
  }, HEARTBEAT_MS)
  ;(beat as { unref?: () => void }).unref?.()
  try {
    await bounded(notify(entry, { kind, attempt: n }), opts.timeoutMs)
    state.deliveredAt = iso(opts.now())
    state.lastError = undefined
    state.nextAttemptAt = undefined
  } catch (error) {
    opts.onError(entry, { kind, attempt: n }, error)
    state.lastError = error instanceof Error ? error.message : String(error)
    state.nextAttemptAt = iso(opts.now() + Math.min(opts.maxBackoffMs, opts.backoffMs * 2 ** (n - 1)))
  }
  clearInterval(beat)
  state.inFlightSince = undefined
  await store.putSnapshot(stateKey(kind, id), JSON.parse(JSON.stringify(state)))
}

/** How often an attempt in flight says its process is alive. */
const HEARTBEAT_MS = 1_000
/** An attempt whose heartbeat is this old died with its process: the next one may go. */
const STALE_MS = 5_000

/** True while another process's attempt is live: within its timeout, and its heartbeat fresh. */
async function inFlight(
  store: DurableStore,
  kind: NotifyInfo["kind"],
  id: string,
  since: string,
  now: number,
  opts: DeliveryOptions,
): Promise<boolean> {
  if (Date.parse(since) + opts.timeoutMs <= now) return false
  const beat = await read<{ at: string }>(store, beatKey(kind, id))
  return Date.parse(beat?.at ?? since) + STALE_MS > now
}

/**
 * @internal Raises the expiry warning of `entry` once per request across processes and
 * restarts: true for the one call that raised it.
 */
export async function raiseWarning(store: DurableStore, entry: PendingEntry, now: number): Promise<boolean> {
  const id = entry.request.id
  if (!(await store.createSnapshot(`tnx-notify-warned/${id}`, { v: RECORD_FORMAT, at: iso(now) })))
    return false
  const state = (await read<NotifyState>(store, stateKey("expiring", id))) ?? {
    v: RECORD_FORMAT,
    attempts: 0,
  }
  state.warnedAt = iso(now)
  await store.putSnapshot(stateKey("expiring", id), state)
  return true
}

/** @internal True when `entry` is within `warnBeforeMs` of its `expiresAt` and not past it. */
export function expiresSoon(entry: PendingEntry, warnBeforeMs: number, now: number): boolean {
  const expires = expiryTime(entry.request)
  return expires !== undefined && !isExpired(entry.request, now) && now >= expires - warnBeforeMs
}

/** @internal Where request `requestId`'s notifications stand; undefined when none was attempted or raised. */
export async function readDelivery(
  store: DurableStore,
  requestId: string,
): Promise<DeliveryRecord | undefined> {
  const fresh = await read<NotifyState>(store, stateKey("new", requestId))
  const expiring = await read<NotifyState>(store, stateKey("expiring", requestId))
  if (!fresh && !expiring) return undefined
  const record: DeliveryRecord = { requestId, attempts: fresh?.attempts ?? 0 }
  if (fresh?.lastAttemptAt !== undefined) record.lastAttemptAt = fresh.lastAttemptAt
  if (fresh?.lastError !== undefined) record.lastError = fresh.lastError
  if (fresh?.deliveredAt !== undefined) record.deliveredAt = fresh.deliveredAt
  if (fresh?.nextAttemptAt !== undefined) record.nextAttemptAt = fresh.nextAttemptAt
  if (expiring?.warnedAt !== undefined) {
    record.expiring = { warnedAt: expiring.warnedAt, attempts: expiring.attempts }
    if (expiring.deliveredAt !== undefined) record.expiring.deliveredAt = expiring.deliveredAt
    if (expiring.lastError !== undefined) record.expiring.lastError = expiring.lastError
  }
  return record
}

/** Rejects when `promise` has not settled within `ms` (the notify keeps running, unobserved). */
async function bounded(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`notify did not resolve within ${ms} ms`)), ms)
    ;(timer as { unref?: () => void }).unref?.()
  })
  try {
    await Promise.race([Promise.resolve(promise), late])
  } finally {
    clearTimeout(timer)
  }
}

/** Options of {@link createNotificationOutbox} (and the same options of `createStoreHost`). */
export interface NotificationOutboxOptions {
  /**
   * Tells someone of a new pending request (`info.kind: "new"`), and with `warnBeforeMs` that
   * one expires soon (`"expiring"`). A throw, a rejection or no answer within
   * `notifyTimeoutMs` is retried by `sweep` with backoff (1 s, doubling up to 5 min).
   */
  notify?: (entry: PendingEntry, info: NotifyInfo) => Promise<void>
  /**
   * How long one `notify` call may take before it counts as failed; default 30 000 ms. An
   * attempt whose process died (its heartbeat, written every second, stops) is retried by a
   * sweep 5 s later.
   */
  notifyTimeoutMs?: number
  /**
   * Raise an `expiring` event (`onEvent`) and notification this many ms before an open
   * request's `expiresAt`, once per request across processes and restarts. Off when absent.
   */
  warnBeforeMs?: number
  /** `expiring` warnings, as they are raised. A throw is ignored. */
  onEvent?: (ev: ExpiringEvent) => void
  /** The time the sweeps and backoff go by; default the system clock (tests pass a virtual one). */
  clock?: {
    /** The current time, in ms since the epoch. */
    now(): number
  }
  /** Failed notifications at `error`, warnings at `info`. */
  logger?: Logger
}

/** The notifications of a store's open requests; see {@link createNotificationOutbox}. */
export interface NotificationOutbox {
  /** The first attempt for a request that was just parked (a no-op once it was delivered). */
  parked(requestId: string): Promise<void>
  /** Raises due `expiring` warnings, then sends every notification that is due, oldest request first. */
  sweep(): Promise<void>
  /** Where request `requestId`'s notifications stand; undefined when none was attempted or raised. */
  getDelivery(requestId: string): Promise<DeliveryRecord | undefined>
}

/**
 * The notifications of the open requests in `store`, sent from an outbox that cannot lose one:
 * the open-request index is the outbox (a request is saved with its suspension), and what was
 * sent is recorded per request in the store. `parked` makes the first attempt; `sweep` retries
 * (with backoff) what failed or never ran (the process died between parking and notifying) and
 * raises `expiring` warnings. Any number of processes may sweep one store: each attempt is made
 * once, and a notification that resolved is never sent again. `createStoreHost` uses it; an
 * app answering requests through the store functions uses it directly.
 *
 * @throws ConfigError for a `notify` that is not a function or a bad `warnBeforeMs` / `notifyTimeoutMs`.
 * @example
 * const outbox = createNotificationOutbox(store, { notify: async (entry) => { await page(entry) }, warnBeforeMs: 3_600_000 })
 * setInterval(() => void outbox.sweep(), 60_000)
 */
export function createNotificationOutbox(
  store: DurableStore,
  opts: NotificationOutboxOptions,
): NotificationOutbox {
  const { logger, warnBeforeMs } = opts
  if (opts.notify !== undefined && typeof opts.notify !== "function")
    throw new ConfigError("notify must be a function")
  if (opts.clock !== undefined && typeof opts.clock?.now !== "function")
    throw new ConfigError("clock must be an object with a now() method")
  for (const [name, value] of [
    ["warnBeforeMs", warnBeforeMs],
    ["notifyTimeoutMs", opts.notifyTimeoutMs],
  ] as const) {
    if (value !== undefined && !(Number.isInteger(value) && value > 0))
      throw new ConfigError(`${name} must be a positive integer (ms), got ${value}`)
  }
  const clock = opts.clock
  const now = clock ? () => clock.now() : Date.now
  const delivery: DeliveryOptions = {
    notify: opts.notify,
    now,
    timeoutMs: opts.notifyTimeoutMs ?? 30_000,
    backoffMs: 1_000,
    maxBackoffMs: 300_000,
    onError: (entry, info, error) =>
      logger?.error(`notify failed for request ${entry.request.id} (${info.kind}, attempt ${info.attempt})`, {
        requestId: entry.request.id,
        attempt: info.attempt,
        error: error instanceof Error ? error.message : String(error),
      }),
  }
  const warn = (entry: PendingEntry) => {
    const runId = runIdOfEntry(entry)
    const expiresAt = entry.request.expiresAt as string
    logger?.info(`request ${entry.request.id} expires at ${expiresAt}`, {
      requestId: entry.request.id,
      runId,
    })
    try {
      opts.onEvent?.({ type: "expiring", runId, request: entry.request, entry, expiresAt })
    } catch {
      // Observers cannot change the sweep.
    }
  }
  return {
    async parked(requestId) {
      if (!opts.notify) return
      const entry = await store.findRequest(requestId)
      if (entry?.state === "open") await attemptNotify(store, entry, "new", delivery)
    },
    async sweep() {
      if (!opts.notify && warnBeforeMs === undefined) return
      for (const entry of await store.listPending()) {
        if (entry.state !== "open") continue
        try {
          if (warnBeforeMs !== undefined && expiresSoon(entry, warnBeforeMs, now())) {
            if (await raiseWarning(store, entry, now())) warn(entry)
            await attemptNotify(store, entry, "expiring", delivery)
          }
          await attemptNotify(store, entry, "new", delivery)
        } catch (error) {
          logger?.error(`notifications of request ${entry.request.id}: ${(error as Error)?.message}`, {
            requestId: entry.request.id,
          })
        }
      }
    },
    getDelivery: (requestId) => readDelivery(store, requestId),
  }
}
