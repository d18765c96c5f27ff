import { describe, expect, it } from "vitest"
import { newRunId } from "../src/client/run-id.js"
import { newRequestId } from "../src/suspension/pending.js"
import { drawEntropy, entropyPool } from "../src/internal/entropy.js"

// Run ids are drawn from the pooled random bytes request ids use: a run given no id (every
// approval run of the shared bench's S2) used to pay Node's randomUUID(), a chain of ~30
// concatenated pieces, plus two calls into C++ to copy it flat.

const V4 = /^run-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** Starts a fresh pool: the next draw of 1 byte refills it and returns offset 0. */
function freshPool(): void {
  drawEntropy(16 * 1024)
  expect(drawEntropy(1)).toBe(0)
}

describe("newRunId from the entropy pool", () => {
  it("writes the next 16 pooled bytes as a v4 UUID", () => {
    freshPool()
    const id = newRunId()
    expect(drawEntropy(1)).toBe(17)
    const bytes = [...entropyPool.subarray(1, 17)]
    bytes[6] = ((bytes[6] as number) & 0x0f) | 0x40
    bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80
    const hex = bytes.map((b) => b.toString(16).padStart(2, "0")).join("")
    expect(id).toBe(
      `run-${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`,
    )
    expect(id).toMatch(V4)
  })

  it("stays distinct across refills and shares the pool with request ids", () => {
    const seen = new Set<string>()
    for (let i = 0; i < 3000; i++) {
      const run = newRunId()
      const request = newRequestId()
      expect(run).toMatch(V4)
      expect(request).toMatch(/^pnd-[A-Za-z0-9_-]{22}$/)
      seen.add(run)
      seen.add(request)
    }
    expect(seen.size).toBe(6000)
  })
})
