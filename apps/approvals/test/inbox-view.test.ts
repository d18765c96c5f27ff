import { type PendingEntry, isExpired } from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import { renderInboxSection } from "../src/page/inbox-view.js"

const NOW = Date.parse("2026-06-01T12:00:00Z")

function entry(expiresAt: string | undefined): PendingEntry {
  const request = { id: "pnd-1", kind: "approval", prompt: "Refund $4?", ...(expiresAt ? { expiresAt } : {}) }
  return { request, conversationId: "run-1", since: "2026-06-01T11:00:00Z", attempts: 0, state: "open" }
}

const card = (expiresAt: string | undefined) =>
  renderInboxSection({ entries: [entry(expiresAt)], failed: [], now: NOW })

describe("the inbox card's expiry follows core's isExpired", () => {
  it.each([
    ["no deadline", undefined, false, "no expiry"],
    ["a deadline ahead", "2026-06-01T12:05:00Z", false, "expires in"],
    ["a deadline at this very moment", "2026-06-01T12:00:00Z", false, "expires in"],
    ["a deadline past", "2026-06-01T11:55:00Z", true, "expired"],
    // An approval of it is refused (AnswerExpiredError), so the card must not offer one.
    ["an unreadable deadline", "next tuesday", true, "unreadable deadline, treated as expired"],
  ])("%s", (_label, expiresAt, expired, text) => {
    const html = card(expiresAt)
    expect(isExpired(entry(expiresAt).request, NOW)).toBe(expired)
    expect(html.includes('class="card expired"')).toBe(expired)
    expect(html.includes('data-action="expire"')).toBe(expired)
    expect(html).toContain(text)
  })
})
