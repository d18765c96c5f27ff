import { describe, expect, it } from "vitest"
import { AnswerExpiredError, AnswerMismatchError } from "../errors.js"
import type { Request } from "../types.js"
import { answerExpired, assertAnswerFits, expiryTime, isExpired } from "./answer-fits.js"

const at = (expiresAt?: string): Request => ({
  id: "pnd-1",
  kind: "approval",
  prompt: "?",
  ...(expiresAt === undefined ? {} : { expiresAt }),
})
const NOON = Date.parse("2026-06-01T12:00:00Z")

describe("the one reading of expiresAt", () => {
  it.each([
    ["no expiresAt", undefined, undefined, false],
    ["a deadline ahead", "2026-06-01T12:00:01Z", NOON + 1000, false],
    ["a deadline at this moment", "2026-06-01T12:00:00Z", NOON, false],
    ["a deadline past, with an offset", "2026-06-01T13:59:59+02:00", NOON - 1000, true],
    ["an unreadable deadline", "next tuesday", 0, true],
  ])("%s", (_label, expiresAt, time, expired) => {
    expect(expiryTime(at(expiresAt))).toBe(time)
    expect(isExpired(at(expiresAt), NOON)).toBe(expired)
  })

  it("a non-string expiresAt from storage counts as unreadable, so as past", () => {
    const stored = { ...at(), expiresAt: 12 } as unknown as Request
    expect(expiryTime(stored)).toBe(0)
    expect(isExpired(stored, NOON)).toBe(true)
  })

  it("assertAnswerFits refuses a late approval, a foreign id, and lets a late decline through", () => {
    const late = at("2026-06-01T11:00:00Z")
    expect(() => assertAnswerFits(late, { id: "pnd-1", ok: true }, NOON)).toThrow(AnswerExpiredError)
    expect(() => assertAnswerFits(late, { id: "pnd-2", ok: false }, NOON)).toThrow(AnswerMismatchError)
    expect(() => assertAnswerFits(late, { id: "pnd-1", ok: false }, NOON)).not.toThrow()
  })

  it("answerExpired: only an approval of a past (or unreadable) deadline is late", () => {
    expect(answerExpired(at("2026-06-01T11:00:00Z"), { ok: true }, NOON)).toBe(true)
    expect(answerExpired(at("next tuesday"), { ok: true }, NOON)).toBe(true)
    expect(answerExpired(at("2026-06-01T11:00:00Z"), { ok: false }, NOON)).toBe(false)
    expect(answerExpired(at("2026-06-01T13:00:00Z"), { ok: true }, NOON)).toBe(false)
    expect(answerExpired(at(), { ok: true }, NOON)).toBe(false)
  })
})
