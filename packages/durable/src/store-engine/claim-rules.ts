import { type AnswerDecision, type Request, answerExpired } from "@toolnexus/core"
import {
  alreadyAppliedError,
  approvedTooLateError,
  beingAppliedError,
  failedTooOftenError,
  notWaitingError,
  runtimeHeldError,
} from "./claim-refusals.js"
import type { RequestRow } from "./request-index.js"
import type { ClaimInput, ClaimOutcome } from "./store-base.js"

// From process.getBuiltinModule, not an ESM import: the first ESM import of node:crypto builds
// its facade, which reads every export and so loads WebCrypto (~7 M instructions on Node 24).
const { randomFillSync } = process.getBuiltinModule("node:crypto")

/** @internal What a backend stores about a conversation's pending request and its claim. */
export interface ClaimState {
  pendingId: string | null
  /** The request whose answer was last applied by a claimed save. */
  consumedId: string | null
}

/** Why a claim is refused; each maps to one error. */
export type ClaimRefusal =
  | "no-conversation"
  | "unknown-request"
  | "already-applied"
  | "busy"
  | "runtime-held"
  | "failed"
  | "expired"
  | "exhausted"

/** What `claimAnswer` does when it is not refused. */
export type ClaimGrant = "claim" | "takeover"

/**
 * @internal The claim rule, the one decision of every backend, called through
 * {@link judgeClaim}. The fast paths (PostgreSQL's one-round-trip first claim, migration 3,
 * SQLite's one-statement `claimFirst` and the Redis claim script's) grant only states this
 * function grants as "claim" and leave
 * the rest to it, pinned by claim-rules.test.ts and CLAIM_CASES.
 * Claims are per request id: `request` is the request's index row, whichever conversation
 * the claim comes through; `conversation` is `undefined` for an unknown conversation. `now`
 * is epoch milliseconds on the clock the backend stores expiries with.
 */
export function decideClaim(
  conversation: ClaimState | undefined,
  request:
    | (Pick<RequestRow, "state" | "runtimeKey" | "claimToken" | "claimExpiresAt" | "attempts"> & {
        /** Whether the conversation the claim was taken through still waits on the request. */
        claimHolderWaits: boolean
      })
    | undefined,
  answerId: string,
  runtimeKey: string | undefined,
  now: number,
  limits: { approvalExpired: boolean; maxAttempts: number },
): ClaimGrant | ClaimRefusal {
  if (request?.state === "applied") return "already-applied"
  if (request?.state === "failed") return "failed"
  // A claimed request is being applied through some conversation of its tree: any other
  // delivery conflicts, also through a conversation that already moved on. A claim whose
  // conversation was moved on by an unfenced save is void.
  const claimed = request?.state === "claimed" && request.claimHolderWaits
  if (conversation === undefined) return claimed ? "busy" : "no-conversation"
  if (conversation.pendingId !== answerId) {
    if (conversation.consumedId === answerId) return "already-applied"
    return claimed ? "busy" : "unknown-request"
  }
  if (request?.runtimeKey && request.runtimeKey !== runtimeKey) return "runtime-held"
  if (request?.claimToken == null || !request.claimHolderWaits) {
    // Only a first claim is judged against expiresAt: a takeover completes an answer that
    // was accepted in time.
    return limits.approvalExpired ? "expired" : "claim"
  }
  if ((request.claimExpiresAt ?? 0) > now) return "busy"
  return request.attempts >= limits.maxAttempts ? "exhausted" : "takeover"
}

/**
 * Whether an approving answer to the stored pending request comes too late at `now` (epoch ms
 * on the backend's clock): core's `answerExpired`, the one expiry judgement, applied to the
 * stored JSON, which `judgeClaim` found may name `expiresAt`. A request without `expiresAt` is
 * never late; an `expiresAt` that does not parse is already past, never "no deadline".
 */
function approvalExpired(pendingJson: string, now: number): boolean {
  let pending: unknown
  try {
    pending = JSON.parse(pendingJson)
  } catch {
    return false // a corrupt pending row is refused by the claim's own decoding
  }
  return (
    typeof pending === "object" && pending !== null && answerExpired(pending as Request, { ok: true }, now)
  )
}

/**
 * @internal What a backend reads, atomically with the write that follows, for a claim: the
 * facts `judgeClaim` decides on. Times are epoch ms on the backend's clock.
 */
export interface ClaimFacts {
  /** The conversation the claim comes through; `undefined` when it is not stored. */
  conversation:
    | {
        /** Its pending request as JSON (`null` when it waits on none). */
        pendingJson: string | null
        pendingId: string | null
        /** The request whose answer its last claimed save consumed. */
        consumedId: string | null
      }
    | undefined
  /** The request's index row; `undefined` when it has none. */
  request:
    | (Pick<
        RequestRow,
        "state" | "runtimeKey" | "claimToken" | "claimExpiresAt" | "attempts" | "claimAnswer"
      > & {
        /**
         * The pending request id of the conversation the live claim was taken through (see
         * {@link claimHolderToRead}); `null` when it waits on none or is gone.
         */
        claimHolderPendingId: string | null
      })
    | undefined
  /** The backend's clock. */
  now: number
}

/**
 * @internal The conversation whose pending id a backend must read for
 * `ClaimFacts.request.claimHolderPendingId`: the claim's holder when it is another
 * conversation than `conversationId`; `undefined` when the conversation read for the claim is
 * the holder (or there is no claim holder).
 */
export function claimHolderToRead(
  request: Pick<RequestRow, "claimConversationId"> | undefined,
  conversationId: string,
): string | undefined {
  const holder = request?.claimConversationId
  return holder == null || holder === conversationId ? undefined : holder
}

/**
 * @internal What a backend writes after {@link judgeClaim}, in the same atomic unit as its read:
 * - `grant`: the request becomes `claimed` by `input.token` through `input.id` with `answerJson`
 *   until `claimExpiresAt`, one attempt more, and the conversation points at the claim;
 * - `fail`: the request becomes `failed` with `input.exhaustedErrorJson()` as its last error;
 * - nothing for any other refusal.
 * `outcome` is what the backend's claim primitive returns.
 */
export type ClaimJudgement =
  | {
      write: "grant"
      /** The answer stored with the claim: the new one, or on a takeover the first claim's. */
      answerJson: string
      claimExpiresAt: number
      outcome: Extract<ClaimOutcome, { grant: ClaimGrant }>
    }
  | { write: "fail" | "none"; outcome: Extract<ClaimOutcome, { refusal: ClaimRefusal }> }

/**
 * @internal The claim flow, written once for every backend: given the facts a backend read
 * atomically, the decision ({@link decideClaim}), the expiry judgement and what to write.
 * Backends only read the facts and apply the judgement in the same transaction (SQLite,
 * PostgreSQL, memory) or compare-and-set script (Redis). A backend's fast path (PostgreSQL's
 * `tnx_claim_first`, called by `tnx_claim_first_read`; SQLite's `claimFirst` statement; the
 * Redis claim script's first claim)
 * may grant a plain first claim
 * without calling this, only in states where this grants "claim" (pinned by
 * claim-rules.test.ts and every row of CLAIM_CASES).
 */
export function judgeClaim(facts: ClaimFacts, input: ClaimInput): ClaimJudgement {
  const { conversation: conv, request: req, now } = facts
  const decision = decideClaim(
    conv && { pendingId: conv.pendingId, consumedId: conv.consumedId },
    // Object.assign: a key added after a spread is defined through the runtime.
    req && Object.assign({}, req, { claimHolderWaits: req.claimHolderPendingId === input.answerId }),
    input.answerId,
    input.runtimeKey,
    now,
    {
      // Most requests have no deadline: their JSON is not parsed again for it (a key can only
      // be spelt otherwise with a `\u` escape, which JSON.stringify never writes for letters).
      // Tested here, so a claim on such a request never compiles `approvalExpired`.
      approvalExpired:
        input.approves &&
        conv?.pendingJson != null &&
        (conv.pendingJson.includes('"expiresAt"') || conv.pendingJson.includes("\\u")) &&
        approvalExpired(conv.pendingJson, now),
      maxAttempts: input.maxAttempts,
    },
  )
  if (decision === "claim" || decision === "takeover") {
    const answerJson = decision === "takeover" ? (req?.claimAnswer as string) : input.answerJson
    return {
      write: "grant",
      answerJson,
      claimExpiresAt: now + input.leaseMs,
      outcome: { grant: decision, pendingJson: conv?.pendingJson as string, answerJson },
    }
  }
  return refusedClaim(decision, conv, req)
}

/** The judgement of a refused claim (its own function: a granted claim never compiles it). */
function refusedClaim(
  decision: ClaimRefusal,
  conv: ClaimFacts["conversation"],
  req: ClaimFacts["request"],
): ClaimJudgement {
  return {
    write: decision === "exhausted" ? "fail" : "none",
    outcome: {
      refusal: decision,
      runtimeKey: req?.runtimeKey ?? null,
      // An applied request's first decision, or the one a live claim is applying.
      decisionJson: req?.state === "applied" || decision === "busy" ? (req?.claimAnswer ?? null) : null,
      ...(decision === "expired" ? { expiresAt: expiresAtOf(conv?.pendingJson) } : {}),
    },
  }
}

/** The `expiresAt` a refused late approval names. */
function expiresAtOf(pendingJson: string | null | undefined): string {
  try {
    return String((JSON.parse(pendingJson ?? "null") as { expiresAt?: unknown } | null)?.expiresAt)
  } catch {
    return "(unreadable)"
  }
}

/** @internal The error `claimAnswer` throws for a refusal, from the one table of refusals. */
export function claimRefusalError(
  refusal: ClaimRefusal,
  conversationId: string,
  answerId: string,
  held: { runtimeKey?: string | null; decision?: AnswerDecision; expiresAt?: string },
): Error {
  const where = JSON.stringify(conversationId)
  switch (refusal) {
    case "no-conversation":
      return notWaitingError(answerId, `conversation ${where} does not exist`)
    case "unknown-request":
      return notWaitingError(answerId, `conversation ${where} is not waiting on it`)
    case "already-applied":
      return alreadyAppliedError(answerId, held.decision)
    case "failed":
    case "exhausted":
      return failedTooOftenError(answerId, held.decision)
    case "expired":
      return approvedTooLateError(answerId, held.expiresAt)
    case "busy":
      return beingAppliedError(answerId, conversationId, held.decision)
    case "runtime-held":
      return runtimeHeldError(answerId, held.runtimeKey ?? "", conversationId)
  }
}

/** Random bytes per claim token: 16, i.e. 128 random bits (the v4 UUID it replaces carried 122). */
const TOKEN_BYTES = 16
/** Tokens per fill of the pool: one `randomFillSync` (a call into C++) serves 64 claims. */
const TOKEN_POOL = 64
const tokenPool = Buffer.alloc(TOKEN_BYTES * TOKEN_POOL)
let tokenAt = tokenPool.length
/** The token's character codes, read out as one flat string by `String.fromCharCode` (a builtin). */
const tokenCodes: number[] = new Array(TOKEN_BYTES * 2).fill(0)
const HEX = "0123456789abcdef"

/**
 * @internal A fresh, unguessable claim token: 32 hex digits from the operating system's CSPRNG.
 * Drawn from a pool filled by `randomFillSync` rather than `randomUUID()`, whose first call
 * compiles six functions of Node's crypto module before a cold resume's first request (the
 * fill is the one of those it needs). Read out without `Buffer#toString`, whose first call
 * compiles more of Node's buffer module.
 */
export function newClaimToken(): string {
  if (tokenAt === tokenPool.length) {
    randomFillSync(tokenPool)
    tokenAt = 0
  }
  for (let i = 0; i < TOKEN_BYTES; i++) {
    const byte = tokenPool[tokenAt + i] as number
    tokenCodes[2 * i] = HEX.charCodeAt(byte >> 4)
    tokenCodes[2 * i + 1] = HEX.charCodeAt(byte & 15)
  }
  tokenAt += TOKEN_BYTES
  return String.fromCharCode.apply(null, tokenCodes)
}

/**
 * @internal What a release prefixes the stored token with: the claim keeps its answer for the
 * takeover, but the released token matches nothing any more, so a heartbeat that ticks after
 * the release renews nothing and the holder's fenced save is refused. No real token has it.
 */
export const RELEASED_TOKEN_PREFIX = "released:"
