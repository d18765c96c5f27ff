import { setTimeout as sleep } from "node:timers/promises"
import { type Answer, AnswerExpiredError, type Request } from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import type { DurableStore } from "../../durable-store.js"
import { CLAIM_CASES, type ClaimCase, type ClaimCaseOutcome } from "../claim-cases.js"
import { type ContractContext, uid, turns, request } from "./context.js"

/** @internal Registers this topic of `describeStoreContract` for one backend. */
export function describeClaimTable({ open }: ContractContext): void {
  describe("the claim rule, case by case (CLAIM_CASES)", () => {
    for (const claimCase of CLAIM_CASES) {
      it(claimCase.name, async () => {
        await checkClaimCase(await open(), claimCase)
      })
    }
  })
}

/** What each refusal of the claim table throws. */
const REFUSALS: Record<Exclude<ClaimCaseOutcome, "claim" | "takeover">, { name: string; message: RegExp }> = {
  "no-conversation": { name: "UnknownRequestError", message: /does not exist/ },
  "unknown-request": { name: "UnknownRequestError", message: /is not waiting on it/ },
  "already-applied": { name: "AnswerConflictError", message: /already applied/ },
  busy: { name: "AnswerConflictError", message: /being applied by another delivery/ },
  "runtime-held": { name: "RuntimeHeldError", message: /held by the saved runtime/ },
  failed: { name: "AnswerConflictError", message: /failed too often.*retryFailed/ },
  exhausted: { name: "AnswerConflictError", message: /failed too often.*retryFailed/ },
  expired: { name: "AnswerExpiredError", message: /expired at/ },
}

/**
 * How long after the case starts a `passes-after-history` request expires: its history's
 * claims must come before that. A machine too busy to take them in time gets the next, longer
 * limit (a fresh conversation each try), so the case proves the rule, not the machine's speed.
 */
const PASSES_AFTER_MS = [250, 2_000, 10_000]

/** The history of a `passes-after-history` case could not be taken before its expiry. */
class HistoryTooSlow extends Error {}

/**
 * Builds one row of the claim table on `store` (a request parked on a leaf and its parent,
 * the history's claims through the parent) and checks what the delivery ends in.
 */
async function checkClaimCase(store: DurableStore, c: ClaimCase): Promise<void> {
  for (const [i, passesAfterMs] of PASSES_AFTER_MS.entries()) {
    try {
      return await checkClaimCaseOnce(store, c, passesAfterMs)
    } catch (e) {
      if (!(e instanceof HistoryTooSlow) || i === PASSES_AFTER_MS.length - 1) throw e
    }
  }
}

async function checkClaimCaseOnce(store: DurableStore, c: ClaimCase, passesAfterMs: number): Promise<void> {
  const parent = uid("claim-case")
  const leaf = `${parent}/leaf.1`
  const expiresAt = {
    none: undefined,
    future: new Date(Date.now() + 3_600_000).toISOString(),
    past: new Date(Date.now() - 3_600_000).toISOString(),
    unreadable: "whenever",
    "passes-after-history": new Date(Date.now() + passesAfterMs).toISOString(),
  }[c.expiry]
  const req: Request = { ...request("approval"), ...(expiresAt !== undefined ? { expiresAt } : {}) }
  await store.save(leaf, turns(2), { pending: req })
  await store.save(parent, turns(2), { pending: { ...req, data: { ...req.data, path: ["root", "leaf.1"] } } })
  const runtimeKey = uid("runtime")
  if (c.runtime)
    await store.putSnapshot(runtimeKey, {}, { holds: [{ requestId: req.id, conversationId: leaf }] })
  const maxAttempts = c.maxAttempts ?? 3
  const first: Answer = { id: req.id, ok: true, data: { from: "the first claim" } }
  const held = { maxAttempts, ...(c.runtime ? { runtimeKey } : {}) }
  const inTime = c.expiry === "passes-after-history" ? Date.parse(expiresAt as string) : Infinity
  for (const step of c.history) {
    const claim = await store.claimAnswer(parent, first, held).catch((e: unknown) => {
      throw e instanceof AnswerExpiredError && Date.now() >= inTime ? new HistoryTooSlow() : e
    })
    if (step === "release") await store.releaseClaim(parent, claim.token)
    if (step === "fail") {
      await store.releaseClaim(parent, claim.token, { error: new Error("the resume failed"), maxAttempts })
    }
    if (step === "apply") {
      await store.save(leaf, turns(3), { pending: null })
      await store.save(parent, turns(3), { pending: null, claim: claim.token })
    }
  }
  if (c.expiry === "passes-after-history") {
    await sleep(Math.max(0, Date.parse(expiresAt as string) - Date.now()) + 20)
  }
  let through = { parent, leaf, "an unknown conversation": uid("unknown") }[c.through as string]
  if (c.through === "a conversation waiting on nothing") {
    through = uid("idle")
    await store.save(through, turns(1))
  }
  const answer: Answer = {
    id: c.answer.to === "another request" ? uid("req") : req.id,
    ok: c.answer.ok,
    data: { from: "this delivery" },
  }
  const claimFor = c.runtime?.claimFor
  const opts = {
    maxAttempts,
    ...(claimFor === "the holder"
      ? { runtimeKey }
      : claimFor === "another runtime"
        ? { runtimeKey: uid("runtime") }
        : {}),
  }
  const before = await store.findRequest(req.id)
  const attempt = store.claimAnswer(through as string, answer, opts)
  if (c.outcome === "claim" || c.outcome === "takeover") {
    const claim = await attempt
    expect(claim.takeover).toBe(c.outcome === "takeover")
    expect(claim.request.id).toBe(req.id)
    // A takeover completes the answer stored by the first claim, never the new one.
    expect(claim.answer).toEqual(c.outcome === "takeover" ? first : answer)
    expect(await store.findRequest(req.id)).toMatchObject({
      state: "claimed",
      attempts: (before?.attempts ?? 0) + 1,
    })
    return
  }
  const refusal = REFUSALS[c.outcome]
  const error = await attempt.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toMatchObject({ name: refusal.name })
  expect((error as Error).message).toMatch(refusal.message)
  if (c.outcome === "already-applied") expect(error).toMatchObject({ decision: { ok: true } })
  // A request being applied names the claimed decision: the first, whatever this answer says.
  if (c.outcome === "busy") expect(error).toMatchObject({ decision: { ok: true } })
  if (c.outcome === "exhausted" || c.outcome === "failed") {
    expect((await store.listFailed()).map((entry) => entry.request.id)).toContain(req.id)
  } else {
    // Any other refusal changes nothing.
    expect(await store.findRequest(req.id)).toEqual(before)
  }
}
