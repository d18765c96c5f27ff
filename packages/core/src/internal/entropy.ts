import { randomFillSync } from "node:crypto"

/** Random bytes drawn at a time: one `randomFillSync` serves hundreds of ids. */
const BATCH = 16 * 1024
const pool = Buffer.alloc(BATCH)
let used = BATCH

/**
 * @internal The offset in {@link entropyPool} of `n` (≤ 16 KiB) fresh random bytes, refilling
 * the pool when it runs short. The ids made from them (request ids, run ids) are written into a
 * scratch buffer and read out as one flat string: one C++ call per id, not one per random draw.
 */
export function drawEntropy(n: number): number {
  if (used + n > BATCH) {
    randomFillSync(pool)
    used = 0
  }
  const at = used
  used += n
  return at
}

/** @internal The bytes {@link drawEntropy} hands out; read them before the next draw. */
export const entropyPool: Buffer = pool
