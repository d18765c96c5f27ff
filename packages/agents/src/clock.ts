import type { Clock } from "./types.js"

/** The real clock. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout),
}

/** A clock tests move by hand: timers fire only when `advance` passes them. */
export interface VirtualClock extends Clock {
  /** Moves time on by `ms` milliseconds, firing the timers due by then in order, each at its due time. */
  advance(ms: number): void
}

/**
 * Creates a virtual clock starting at `start` (ms since the epoch).
 *
 * @example
 * const clock = createVirtualClock()
 * const rt = createRuntime({ registry, clock })
 * clock.advance(5_000) // fires the timers due in the next five seconds
 */
export function createVirtualClock(start = 0): VirtualClock {
  let now = start
  let nextId = 0
  const timers = new Map<number, { at: number; fn: () => void }>()
  return {
    now: () => now,
    setTimeout(fn, ms) {
      const id = ++nextId
      timers.set(id, { at: now + Math.max(0, ms), fn })
      return id
    },
    clearTimeout(timer) {
      timers.delete(timer as number)
    },
    advance(ms) {
      const target = now + ms
      for (;;) {
        let due: [number, { at: number; fn: () => void }] | undefined
        for (const entry of timers)
          if (entry[1].at <= target && (!due || entry[1].at < due[1].at)) due = entry
        if (!due) break
        timers.delete(due[0])
        now = due[1].at
        due[1].fn()
      }
      now = target
    },
  }
}
