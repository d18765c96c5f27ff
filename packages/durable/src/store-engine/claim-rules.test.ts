import { describe, expect, it } from "vitest"
import { decideClaim, judgeClaim, newClaimToken } from "./claim-rules.js"
import type { ClaimInput } from "./store-base.js"

describe("decideClaim", () => {
  // PostgreSQL's tnx_claim_first (migration 3), SQLite's claimFirst statement and the Redis
  // claim script's fast path grant a claim on their own in exactly these states; if a rule here
  // ever refuses one of them, all three must change with it.
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

describe("judgeClaim, the one claim flow", () => {
  const input: ClaimInput = {
    id: "c-1",
    answerId: "r-1",
    answerJson: '{"id":"r-1","ok":true}',
    token: "t-new",
    leaseMs: 1000,
    runtimeKey: undefined,
    approves: true,
    maxAttempts: 2,
    exhaustedErrorJson: () => '{"name":"LeaseExpired","message":"x"}',
  }
  const waiting = (pending: object = { id: "r-1", kind: "approval", prompt: "?" }) => ({
    pendingJson: JSON.stringify(pending),
    pendingId: "r-1",
    consumedId: null,
  })
  const claimed = (over: object = {}) => ({
    state: "claimed" as const,
    runtimeKey: null,
    claimToken: "t-old",
    claimExpiresAt: 500,
    attempts: 1,
    claimAnswer: '{"id":"r-1","ok":false}',
    claimHolderPendingId: "r-1",
    ...over,
  })

  it("grants a first claim with the new answer, leased from the backend's now", () => {
    const judged = judgeClaim({ conversation: waiting(), request: undefined, now: 100 }, input)
    expect(judged).toMatchObject({ write: "grant", answerJson: input.answerJson, claimExpiresAt: 1100 })
    expect(judged.outcome).toMatchObject({ grant: "claim" })
  })

  it("a takeover keeps the first claim's answer and is not judged against expiresAt", () => {
    const late = waiting({ id: "r-1", kind: "approval", prompt: "?", expiresAt: "2000-01-01T00:00:00Z" })
    const judged = judgeClaim({ conversation: late, request: claimed(), now: 600 }, input)
    expect(judged).toMatchObject({ write: "grant", answerJson: '{"id":"r-1","ok":false}' })
    expect(judged.outcome).toMatchObject({ grant: "takeover" })
  })

  it("a live claim is busy with the claimed decision; a spent one is marked failed", () => {
    expect(judgeClaim({ conversation: waiting(), request: claimed(), now: 400 }, input)).toEqual({
      write: "none",
      outcome: { refusal: "busy", runtimeKey: null, decisionJson: '{"id":"r-1","ok":false}' },
    })
    const spent = judgeClaim({ conversation: waiting(), request: claimed({ attempts: 2 }), now: 600 }, input)
    expect(spent).toMatchObject({ write: "fail", outcome: { refusal: "exhausted" } })
  })

  it("a late first approval is refused naming expiresAt; a late decline is claimed", () => {
    const late = waiting({ id: "r-1", kind: "approval", prompt: "?", expiresAt: "2000-01-01T00:00:00Z" })
    expect(judgeClaim({ conversation: late, request: undefined, now: Date.now() }, input)).toEqual({
      write: "none",
      outcome: {
        refusal: "expired",
        runtimeKey: null,
        decisionJson: null,
        expiresAt: "2000-01-01T00:00:00Z",
      },
    })
    const decline = { ...input, approves: false }
    expect(judgeClaim({ conversation: late, request: undefined, now: Date.now() }, decline).write).toBe(
      "grant",
    )
  })

  it("judges a deadline whose key is written with an escape (the JSON is parsed then)", () => {
    const escaped = waiting()
    escaped.pendingJson =
      '{"id":"r-1","kind":"approval","prompt":"?","expires\\u0041t":"2000-01-01T00:00:00Z"}'
    expect(
      judgeClaim({ conversation: escaped, request: undefined, now: Date.now() }, input).outcome,
    ).toMatchObject({ refusal: "expired" })
  })
})

describe("newClaimToken", () => {
  it("gives 32 hex digits, a different token every time, across refills of its pool", () => {
    const tokens = Array.from({ length: 200 }, () => newClaimToken())
    for (const token of tokens) expect(token).toMatch(/^[0-9a-f]{32}$/)
    expect(new Set(tokens).size).toBe(200)
  })
})
