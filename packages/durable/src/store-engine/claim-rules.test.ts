import { describe, expect, it } from "vitest"
import { decideClaim } from "./claim-rules.js"

describe("decideClaim", () => {
  // PostgreSQL's tnx_claim_first (migration 3) grants a claim on its own in exactly these
  // states; if a rule here ever refuses one of them, that function must change with it.
  it('says "claim" in every state the one-statement PostgreSQL first claim grants', () => {
    const requests = [
      undefined,
      { state: "open" as const, runtimeKey: null, claimToken: null, claimExpiresAt: null, attempts: 0 },
      { state: "open" as const, runtimeKey: "rt-1", claimToken: null, claimExpiresAt: null, attempts: 0 },
    ]
    for (const request of requests) {
      for (const [consumedId, claimHolderWaits] of [
        [null, true],
        ["r-0", false],
      ] as const) {
        const runtimeKey = request?.runtimeKey ?? undefined
        const row = request && { ...request, claimHolderWaits }
        expect(
          decideClaim({ pendingId: "r-1", consumedId }, row, "r-1", runtimeKey, Date.now(), {
            approvalExpired: false,
            maxAttempts: 1,
          }),
        ).toBe("claim")
      }
    }
  })
})
