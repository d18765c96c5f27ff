// From process.getBuiltinModule, not an ESM import: the first ESM import of node:crypto builds
// its facade, which reads every export and so loads WebCrypto (~7 M instructions on Node 24).
const { randomFillSync } = process.getBuiltinModule("node:crypto")

/** Random bytes drawn at a time: one `randomFillSync` serves hundreds of ids. */
const BATCH = 16 * 1024
/** The bytes of the first fill (see {@link drawEntropy}). */
const FIRST = 512
const pool = Buffer.alloc(BATCH)
let used = BATCH
/** Where the next fill starts: the first fills only the pool's tail. */
let from = BATCH - FIRST

/**
 * @internal The offset in {@link entropyPool} of `n` (≤ 16 KiB) fresh random bytes, refilling
 * the pool when it runs short. The ids made from them (request ids, run ids) are written into a
 * scratch buffer and read out as one flat string: one C++ call per id, not one per random draw.
 */
export function drawEntropy(n: number): number {
  if (used + n > BATCH) {
    // The first fill is short, so the second comes a few dozen ids later, once this function
    // collects feedback. A call that had never run with feedback deoptimizes the optimized code
    // it is inlined in (the run-id and request-id paths) the first time it runs; with full fills
    // from the start that was at the second fill, hundreds of runs after they were optimized.
    const start = Math.min(from, BATCH - n)
    randomFillSync(pool, start)
    used = start
    from = 0
  }
  const at = used
  used += n
  return at
}

/** @internal The bytes {@link drawEntropy} hands out; read them before the next draw. */
export const entropyPool: Buffer = pool
