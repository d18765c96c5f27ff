import type { RuntimeOptions, TaskResult } from "@toolnexus/agents"
import {
  type Answer,
  type AnswerDecision,
  type Client,
  type CommittedSnapshot,
  type OutputSchema,
  ConfigError,
  type RunResult,
  type StreamEvent,
  type Toolkit,
  isExpired,
  isToolnexusError,
} from "@toolnexus/core"
import type { DurableStore, PendingEntry } from "../durable-store.js"
import { notFailedError, settledRequestError } from "../store-engine/claim-refusals.js"
import { checkAnswer, checkKey } from "../store-engine/option-checks.js"
import { grantOf, recordGrant, revokeGrant } from "../host/grants.js"
import { decisionOf } from "@toolnexus/core/engine"
import { askClaimed } from "./ask-with-answer.js"
import { resumeSavedRuntime } from "./runtime-persistence.js"

/** Options of {@link deliverAnswer} and the sweeps built on it. */
export interface DeliverOptions {
  /** Resumes requests held by plain conversations; its store must be the one delivered to. */
  client?: Client
  /**
   * The tools of a resumed plain conversation (passed to `askWithAnswer`); a saved runtime's come from
   * `runtime`.
   */
  toolkit?: Toolkit
  /**
   * The JSON Schema a resumed plain conversation's final answer must match (passed to
   * `askWithAnswer`); default none.
   */
  output?: OutputSchema
  /** Resumes requests held by saved runtimes (the same registry the runtime was created with). */
  runtime?: RuntimeOptions
  /**
   * How long the claim holds before another delivery may take it over; default 30 s (at
   * least 2 × the store's `opTimeoutMs`). The resume renews it every `leaseMs / 3`.
   */
  leaseMs?: number
  /** Claims (attempts) a request gets before it is `failed` and only `retryFailed` moves it on; default 3. */
  maxAttempts?: number
  /** Aborts the resume; a lost claim aborts it too. */
  signal?: AbortSignal
  /**
   * The resumed run's events as they happen (see `StreamEvent`). For a saved runtime: every
   * resumed handle's run events, each also carrying `handle` (state changes are left out;
   * `runtime.onEvent` gets all runtime events).
   */
  onEvent?: (ev: StreamEvent) => void
  /**
   * The options for the run holding this request, merged over these (a host serving several
   * agents picks the holder's `client`, `toolkit` or `runtime` here); the sweeps pass it on.
   */
  route?: (entry: PendingEntry) => DeliverOptions | Promise<DeliverOptions>
  /**
   * @internal A store host's: a snapshot (the run's record) a resumed plain conversation's
   * final save writes in the same store call; a saved runtime's resume ignores it.
   */
  commitSnapshot?: (result: RunResult) => CommittedSnapshot | undefined
}

/** What {@link deliverAnswer} resumed: a conversation, or a saved runtime's tree. */
export type DeliverResult =
  | {
      /** `"conversation"`: a plain conversation waited on the request and was resumed. */
      kind: "conversation"
      /** The id of the resumed conversation. */
      id: string
      /** The resumed run's result, as `askWithAnswer` returns it. */
      result: RunResult
      /** The decision the delivery's claim applied (on a takeover, the one stored with the claim). */
      decision?: AnswerDecision
    }
  | {
      /** `"runtime"`: a saved runtime's tree held the request and was resumed. */
      kind: "runtime"
      /** The key the resumed runtime is saved under. */
      key: string
      /** The result of the topmost handle the cascade resumed (what the host's `wait` returns). */
      result: TaskResult
    }

/**
 * Routes an answer to whatever holds its request: the saved runtime whose tree parked on it
 * (resumed with `resumeRuntime`, so one answer resumes the whole tree) or the conversation
 * waiting on it (resumed with `askWithAnswer`). A request id names one decision: it is
 * applied exactly once, whichever way it arrives.
 *
 * @returns for a runtime, the result of the topmost handle the cascade resumed (what the host's `wait` returns).
 * @throws UnknownRequestError when nothing waits on `answer.id`.
 * @throws AnswerConflictError when it is being applied, or was applied (`decision` is the first decision).
 * @throws ConfigError when the holder needs `opts.runtime` or `opts.client` and it is missing.
 * @example
 * const delivered = await deliverAnswer(store, { id: requestId, ok: true }, { client, toolkit, runtime: { registry, llm } })
 * if (delivered.kind === "runtime") console.log(delivered.result.text)
 */
export async function deliverAnswer(
  store: DurableStore,
  answer: Answer,
  opts: DeliverOptions,
): Promise<DeliverResult> {
  checkAnswer(answer)
  const entry = await store.findRequest(answer.id)
  if (entry === undefined) {
    // A failed request was decided too: only retryFailed moves it on.
    throw await settledRequestError(store, answer.id, "no conversation or saved runtime waits on it")
  }
  return deliverAnswerTo(store, entry, answer, opts)
}

/**
 * {@link deliverAnswer} to `entry`, the request index's entry of `answer.id` its caller has just
 * read (a store host, which routes by it first): the claim decides as it does there, whatever
 * happened to the request since.
 *
 * @internal
 */
export async function deliverAnswerTo(
  store: DurableStore,
  entry: PendingEntry,
  answer: Answer,
  opts: DeliverOptions,
): Promise<DeliverResult> {
  checkAnswer(answer)
  if (opts.route) {
    // Merged by Object.assign (a rest copy and a second spread each go through the runtime);
    // the caller's `route` is used up here, as before.
    const routed = await opts.route(entry)
    opts = Object.assign({}, opts, { route: undefined }, routed)
  }
  // A remembered approval (§19) is recorded before the resume, so the calls the resumed run
  // makes next are covered; an answer refused as such takes it back (a conflict does not: the
  // delivery deciding may be this very answer; a decline deciding first voids it on lookup).
  const grant = await grantOf(store, entry, answer)
  if (grant) await recordGrant(store, grant)
  try {
    return await resume(store, entry, answer, opts)
  } catch (error) {
    if (grant && isToolnexusError(error) && REFUSED.has(error.code))
      await revokeGrant(store, grant.id).catch(() => undefined)
    throw error
  }
}

/** Refusals of the answer itself: it decided nothing, so its grant goes. */
const REFUSED = new Set(["TNX_ANSWER_INVALID", "TNX_APPROVAL_MISMATCH", "TNX_ANSWER_EXPIRED"])

async function resume(
  store: DurableStore,
  entry: PendingEntry,
  answer: Answer,
  opts: DeliverOptions,
): Promise<DeliverResult> {
  const { runtimeKey } = entry
  if (runtimeKey !== undefined) {
    if (opts.runtime === undefined) {
      throw new ConfigError(
        `request ${answer.id} is held by the saved runtime ${JSON.stringify(runtimeKey)}: ` +
          "deliverAnswer needs `runtime` (its RuntimeOptions)",
      )
    }
    const { result } = await resumeSavedRuntime(store, runtimeKey, answer, {
      ...opts.runtime,
      ...(opts.leaseMs !== undefined ? { leaseMs: opts.leaseMs } : {}),
      ...(opts.maxAttempts !== undefined ? { maxAttempts: opts.maxAttempts } : {}),
      ...(opts.signal !== undefined ? { signal: opts.signal } : {}),
      onEvent: runtimeListener(opts.runtime.onEvent, opts.onEvent),
    })
    return { kind: "runtime", key: runtimeKey, result }
  }
  const { client } = opts
  if (client === undefined) {
    throw new ConfigError(
      `request ${answer.id} is held by conversation ${JSON.stringify(entry.conversationId)}: ` +
        "deliverAnswer needs `client`",
    )
  }
  if (client.conversationStore() !== store) {
    throw new ConfigError("deliverAnswer: `client` must use the store the answer is delivered to")
  }
  const { result, applied } = await askClaimed(client, {
    id: entry.conversationId,
    answer,
    toolkit: opts.toolkit,
    signal: opts.signal,
    leaseMs: opts.leaseMs,
    maxAttempts: opts.maxAttempts,
    onEvent: opts.onEvent,
    ...(opts.output !== undefined ? { output: opts.output } : {}),
    ...(opts.commitSnapshot !== undefined ? { commitSnapshot: opts.commitSnapshot } : {}),
  })
  return { kind: "conversation", id: entry.conversationId, result, decision: decisionOf(applied) }
}

/**
 * Re-opens a request that became `failed` (its resumes failed `maxAttempts` times) with its
 * stored decision, resumes it at once through {@link deliverAnswer}, and returns what that
 * returns. Its attempts start again from 0. Fix the cause first (a bad tool, an exhausted
 * model quota); a failure again counts attempts as before.
 *
 * @throws UnknownRequestError when `requestId` names no failed request (nothing waits on it).
 * @throws AnswerConflictError when the request was already applied (`decision` says how).
 * @example
 * for (const entry of await store.listFailed()) await retryFailed(store, entry.request.id, { client, toolkit })
 */
export async function retryFailed(
  store: DurableStore,
  requestId: string,
  opts: DeliverOptions,
): Promise<DeliverResult> {
  checkKey(requestId, "the request id")
  const answer = await store.reopenFailed(requestId)
  // The store says it is not failed: applied before, open, or unknown.
  if (answer === undefined) throw await notFailedError(store, requestId)
  return deliverAnswer(store, answer, opts)
}

/** The runtime's own listener, plus the delivery's for the runs' events. */
function runtimeListener(
  own: RuntimeOptions["onEvent"],
  delivery: DeliverOptions["onEvent"],
): RuntimeOptions["onEvent"] {
  if (!delivery) return own
  return (ev) => {
    own?.(ev)
    if (ev.type !== "state" && ev.type !== "dropped") delivery(ev)
  }
}

/** What a sweep did: the deliveries it completed and those that failed again. */
export interface SweepResult {
  /** What each successful delivery resumed, in the order the sweep delivered them. */
  completed: DeliverResult[]
  /** Each failed request keeps its claim (and its decision) for the next sweep. */
  failed: {
    /** The id of the request whose delivery failed. */
    requestId: string
    /** The id of the conversation that waits on it (for an expired claim, the claimed one). */
    conversationId: string
    /**
     * What the delivery threw; for a saved runtime whose cascade ended in `status: "error"`,
     * an `Error` carrying the result's text.
     */
    error: unknown
  }[]
}

/**
 * Completes the runs whose claims expired (their worker died mid-resume) with the answers
 * stored on the claims, each through {@link deliverAnswer}: a runtime's claim resumes the
 * runtime's tree, never a plain replay of one handle, and a sweep racing a redelivery still
 * applies every answer exactly once.
 *
 * @param opts - as for `deliverAnswer`, plus `limit` (at most this many claims; default 100).
 * @example
 * setInterval(() => sweepExpiredClaims(store, { client, toolkit, runtime: { registry, llm } }), 60_000)
 */
export async function sweepExpiredClaims(
  store: DurableStore,
  opts: DeliverOptions & { limit?: number },
): Promise<SweepResult> {
  const completed: DeliverResult[] = []
  const failed: SweepResult["failed"] = []
  for (const claim of await store.listExpiredClaims({ limit: opts.limit ?? 100 })) {
    try {
      const delivered = await deliverAnswer(store, claim.answer, opts)
      if (delivered.kind === "runtime" && delivered.result.status === "error") {
        failed.push({
          requestId: claim.request.id,
          conversationId: claim.id,
          error: new Error(delivered.result.text),
        })
      } else completed.push(delivered)
    } catch (error) {
      failed.push({ requestId: claim.request.id, conversationId: claim.id, error })
    }
  }
  return { completed, failed }
}

/**
 * Declines every **open** (unclaimed) request whose `expiresAt` has passed — or cannot be
 * read — with `{ ok: false, reason: "expired" }` through {@link deliverAnswer}, so the model
 * sees the expiry and the run moves on. Claimed requests are left to the claim rules: an
 * answer claimed in time is honoured. Failed requests are skipped.
 *
 * @param opts - as for `deliverAnswer`, plus `limit` (at most this many requests; default 100).
 * @example
 * setInterval(() => sweepExpiredRequests(store, { client, toolkit, runtime: { registry, llm } }), 60_000)
 */
export async function sweepExpiredRequests(
  store: DurableStore,
  opts: DeliverOptions & { limit?: number },
): Promise<SweepResult> {
  const completed: DeliverResult[] = []
  const failed: SweepResult["failed"] = []
  const now = Date.now()
  const due = (await store.listPending())
    .filter((entry) => entry.state === "open" && isExpired(entry.request, now))
    .slice(0, opts.limit ?? 100)
  for (const entry of due) {
    try {
      completed.push(await deliverAnswer(store, { id: entry.request.id, ok: false, reason: "expired" }, opts))
    } catch (error) {
      failed.push({ requestId: entry.request.id, conversationId: entry.conversationId, error })
    }
  }
  return { completed, failed }
}
