import type { DeliveryRecord, NotifyInfo, PendingEntry } from "@toolnexus/core"
import type { DurableStore } from "../durable-store.js"

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
const attemptKey = (kind: NotifyInfo["kind"], id: string, n: number) =>
  `tnx-notify-attempt/${kind}/${id}/${n}`
const iso = (ms: number) => new Date(ms).toISOString()

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
  const state = ((await store.getSnapshot(stateKey(kind, id))) as NotifyState | undefined) ?? {
    v: 1,
    attempts: 0,
  }
  if (state.deliveredAt !== undefined) return
  if (kind === "expiring" && state.warnedAt === undefined) return
  const now = opts.now()
  if (state.nextAttemptAt !== undefined && now < Date.parse(state.nextAttemptAt)) return
  let n = state.attempts + 1
  for (;;) {
    if (await store.createSnapshot(attemptKey(kind, id, n), { at: iso(now) })) break
    const other = (await store.getSnapshot(attemptKey(kind, id, n))) as { at: string } | undefined
    // Another host is making this attempt: it records it.
    if (other && Date.parse(other.at) + opts.timeoutMs > now) return
    n++
  }
  state.attempts = n
  state.lastAttemptAt = iso(now)
  await store.putSnapshot(stateKey(kind, id), state)
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
  await store.putSnapshot(stateKey(kind, id), JSON.parse(JSON.stringify(state)))
}

/**
 * @internal Raises the expiry warning of `entry` once per request across processes and
 * restarts: true for the one call that raised it.
 */
export async function raiseWarning(store: DurableStore, entry: PendingEntry, now: number): Promise<boolean> {
  const id = entry.request.id
  if (!(await store.createSnapshot(`tnx-notify-warned/${id}`, { at: iso(now) }))) return false
  const state = ((await store.getSnapshot(stateKey("expiring", id))) as NotifyState | undefined) ?? {
    v: 1,
    attempts: 0,
  }
  state.warnedAt = iso(now)
  await store.putSnapshot(stateKey("expiring", id), state)
  return true
}

/** @internal True when `entry` is within `warnBeforeMs` of its `expiresAt` and not past it. */
export function expiresSoon(entry: PendingEntry, warnBeforeMs: number, now: number): boolean {
  const at = entry.request.expiresAt
  if (at === undefined) return false
  const expires = Date.parse(at)
  return now >= expires - warnBeforeMs && now < expires
}

/** @internal Where request `requestId`'s notifications stand; undefined when none was attempted or raised. */
export async function readDelivery(
  store: DurableStore,
  requestId: string,
): Promise<DeliveryRecord | undefined> {
  const fresh = (await store.getSnapshot(stateKey("new", requestId))) as NotifyState | undefined
  const expiring = (await store.getSnapshot(stateKey("expiring", requestId))) as NotifyState | undefined
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
