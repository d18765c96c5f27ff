/**
 * The claim rule as one table of cases: what `DurableStore.claimAnswer` does, given what
 * happened to the request before (its stored decision, claims, attempts), when it expires,
 * which answer arrives and through which conversation. The store contract suite runs every
 * row against every backend, so the TypeScript rule, the Redis claim script and the
 * PostgreSQL first-claim function are all checked by the same table.
 *
 * Every case parks one request on a two-conversation tree: the `leaf` asked it, its
 * `parent` holds it escalated (as a cascade does). Earlier claims go through the parent.
 */
import type { ClaimGrant, ClaimRefusal } from "../store-engine/claim-rules.js"

/** What `claimAnswer` ends in: a grant (`claim`, `takeover`), or the refusal it throws. */
export type ClaimCaseOutcome = ClaimGrant | ClaimRefusal

/**
 * One step of a request's history before the delivery under test, each through the parent:
 * - `claim`: a claim is taken and still held (a live lease);
 * - `release`: a claim is taken and its lease runs out (released without an error: a stopped worker);
 * - `fail`: a claim is taken and released with an error (a failed resume);
 * - `apply`: a claim is taken and its fenced save consumes it (the answer applied).
 */
export type ClaimStep = "claim" | "release" | "fail" | "apply"

/** One row of the claim table. */
export interface ClaimCase {
  /** What the row shows. */
  name: string
  /**
   * The request's `expiresAt`: none, an hour ahead, an hour ago, not a date, or one that passes
   * after the history's claims were taken (they were in time).
   */
  expiry: "none" | "future" | "past" | "unreadable" | "passes-after-history"
  /** What happened to the request before, in order. */
  history: ClaimStep[]
  /** Whether the incoming answer approves, and whether it answers this request or another one. */
  answer: {
    /** The incoming answer's `ok`: `true` approves, `false` declines. */
    ok: boolean
    /** Which request the answer's `id` names; default `"the request"`. */
    to?: "the request" | "another request"
  }
  /** The conversation the answer is claimed through. */
  through: "parent" | "leaf" | "an unknown conversation" | "a conversation waiting on nothing"
  /**
   * Whether a saved runtime holds the request, and the runtime key the claim names: none,
   * that runtime's, or another one.
   */
  runtime?: {
    /** Always `true`: the request is recorded as held by a saved runtime (its snapshot's `holds`). */
    holds: true
    /** The `runtimeKey` the incoming claim names: none, the holding runtime's key, or another runtime's. */
    claimFor: "none" | "the holder" | "another runtime"
  }
  /** The `maxAttempts` of every claim of the case; default 3. */
  maxAttempts?: number
  /** What the delivery ends in. */
  outcome: ClaimCaseOutcome
}

/** The claim rule, case by case. */
export const CLAIM_CASES: readonly ClaimCase[] = [
  // First claims: judged against expiresAt, approvals only.
  {
    name: "a first approval",
    expiry: "none",
    history: [],
    answer: { ok: true },
    through: "parent",
    outcome: "claim",
  },
  {
    name: "a first decline",
    expiry: "none",
    history: [],
    answer: { ok: false },
    through: "parent",
    outcome: "claim",
  },
  {
    name: "a first claim through the leaf",
    expiry: "none",
    history: [],
    answer: { ok: true },
    through: "leaf",
    outcome: "claim",
  },
  {
    name: "an approval before expiresAt",
    expiry: "future",
    history: [],
    answer: { ok: true },
    through: "parent",
    outcome: "claim",
  },
  {
    name: "an approval after expiresAt",
    expiry: "past",
    history: [],
    answer: { ok: true },
    through: "parent",
    outcome: "expired",
  },
  {
    name: "a decline after expiresAt",
    expiry: "past",
    history: [],
    answer: { ok: false },
    through: "parent",
    outcome: "claim",
  },
  {
    name: "an approval when expiresAt is not a date (never 'no deadline')",
    expiry: "unreadable",
    history: [],
    answer: { ok: true },
    through: "parent",
    outcome: "expired",
  },
  {
    name: "a decline when expiresAt is not a date",
    expiry: "unreadable",
    history: [],
    answer: { ok: false },
    through: "parent",
    outcome: "claim",
  },
  // Live claims: one holder per request id, whichever conversation of the tree.
  {
    name: "while another delivery holds a live claim",
    expiry: "none",
    history: ["claim"],
    answer: { ok: true },
    through: "parent",
    outcome: "busy",
  },
  {
    name: "through the leaf while a claim through the parent is live",
    expiry: "none",
    history: ["claim"],
    answer: { ok: false },
    through: "leaf",
    outcome: "busy",
  },
  {
    name: "through an unknown conversation while a claim is live",
    expiry: "none",
    history: ["claim"],
    answer: { ok: true },
    through: "an unknown conversation",
    outcome: "busy",
  },
  // Takeovers: a lapsed claim is completed with its stored answer while attempts remain.
  {
    name: "after a claim's lease ran out",
    expiry: "none",
    history: ["release"],
    answer: { ok: false },
    through: "parent",
    outcome: "takeover",
  },
  {
    name: "after expiresAt, of an answer claimed in time (honoured)",
    expiry: "passes-after-history",
    history: ["release"],
    answer: { ok: true },
    through: "parent",
    outcome: "takeover",
  },
  {
    name: "after a failed resume, attempts left",
    expiry: "none",
    history: ["fail"],
    answer: { ok: true },
    through: "parent",
    maxAttempts: 2,
    outcome: "takeover",
  },
  {
    name: "after two lapsed claims of three attempts",
    expiry: "none",
    history: ["release", "release"],
    answer: { ok: true },
    through: "parent",
    outcome: "takeover",
  },
  {
    name: "after three lapsed claims of three attempts (the request becomes failed)",
    expiry: "none",
    history: ["release", "release", "release"],
    answer: { ok: true },
    through: "parent",
    outcome: "exhausted",
  },
  {
    name: "after failed resumes used up the attempts",
    expiry: "none",
    history: ["fail", "fail"],
    answer: { ok: true },
    through: "parent",
    maxAttempts: 2,
    outcome: "failed",
  },
  // Applied: refused everywhere, with the first decision.
  {
    name: "after the answer was applied",
    expiry: "none",
    history: ["apply"],
    answer: { ok: true },
    through: "parent",
    outcome: "already-applied",
  },
  {
    name: "after it was applied, through the leaf",
    expiry: "none",
    history: ["apply"],
    answer: { ok: false },
    through: "leaf",
    outcome: "already-applied",
  },
  {
    name: "after it was applied, through an unknown conversation",
    expiry: "none",
    history: ["apply"],
    answer: { ok: true },
    through: "an unknown conversation",
    outcome: "already-applied",
  },
  {
    name: "after it was applied following a failed resume",
    expiry: "none",
    history: ["fail", "apply"],
    answer: { ok: true },
    through: "parent",
    outcome: "already-applied",
  },
  // Nothing waits on it there.
  {
    name: "through an unknown conversation",
    expiry: "none",
    history: [],
    answer: { ok: true },
    through: "an unknown conversation",
    outcome: "no-conversation",
  },
  {
    name: "through a conversation waiting on nothing",
    expiry: "none",
    history: [],
    answer: { ok: true },
    through: "a conversation waiting on nothing",
    outcome: "unknown-request",
  },
  {
    name: "an answer to another request",
    expiry: "none",
    history: [],
    answer: { ok: true, to: "another request" },
    through: "parent",
    outcome: "unknown-request",
  },
  // Saved runtimes: their handles are never replayed as plain conversations.
  {
    name: "a plain claim of a request a saved runtime holds",
    expiry: "none",
    history: [],
    answer: { ok: true },
    through: "parent",
    runtime: { holds: true, claimFor: "none" },
    outcome: "runtime-held",
  },
  {
    name: "a claim for another runtime",
    expiry: "none",
    history: [],
    answer: { ok: true },
    through: "leaf",
    runtime: { holds: true, claimFor: "another runtime" },
    outcome: "runtime-held",
  },
  {
    name: "a claim for the runtime that holds it",
    expiry: "none",
    history: [],
    answer: { ok: true },
    through: "parent",
    runtime: { holds: true, claimFor: "the holder" },
    outcome: "claim",
  },
]
