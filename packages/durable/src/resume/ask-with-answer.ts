import {
  type Answer,
  type Client,
  type CommittedSnapshot,
  ConfigError,
  type OutputSchema,
  type Request,
  type RunResult,
  type StreamListener,
  type Toolkit,
} from "@toolnexus/core"
import type { DurableStore } from "../durable-store.js"
import { checkAnswer } from "../store-engine/option-checks.js"
import { resumeClaimed } from "./claimed-resume.js"

/** Options of {@link askWithAnswer}. */
export interface AskWithAnswerOptions {
  /**
   * The tools of the resumed run, the halted call's tool among them (as given to `client.ask`);
   * without it the run has no tools and the halted call gets an unknown-tool result.
   */
  toolkit?: Toolkit
  /** The conversation id used with `client.ask`. */
  id: string
  /** The answer to the request the conversation waits on: its `id` must echo that request's id. */
  answer: Answer
  /** The request it halted on; read from the store when omitted. */
  pending?: Request
  /**
   * Aborts the resumed run; the claim is then released with the abort
   * error (an attempt counted) so that a later delivery or a sweep completes the run.
   */
  signal?: AbortSignal
  /**
   * How long the claim holds before another delivery may take it over; default 30 s. The
   * resume renews it every `leaseMs / 3` while it runs.
   */
  leaseMs?: number
  /** Claims (attempts) before the request is `failed`; default 3. */
  maxAttempts?: number
  /** Events of the resumed run as they happen (streamed text included), as `client.run` gives them. */
  onEvent?: StreamListener
  /** The JSON Schema the resumed run's final answer must match, as `client.continueRun` takes it. */
  output?: OutputSchema
  /**
   * A snapshot the resumed run's final save (the one consuming the claim) writes in the same
   * store call, as `client.continueRun` takes it (`StoredResumeOptions.commitSnapshot`).
   */
  commitSnapshot?: (result: RunResult) => CommittedSnapshot | undefined
}

/**
 * Resumes a conversation halted by `client.ask(..., { id })` with the answer, through the
 * client's store and core's one stored-continue path (`client.continueRun` without
 * messages). The client's store must be a durable store (core's default memory store is not:
 * `ConfigError`). The request is claimed atomically first: of two deliveries
 * of the same answer exactly one resumes, the other gets `AnswerConflictError`. The claimed
 * answer is consumed only when the resumed run is saved; if this process dies or the run
 * fails, the claim expires (or is released with the error, counting an attempt) and the next
 * delivery or a sweep completes the run with the stored answer. While it runs the claim is
 * renewed every `leaseMs / 3`; a lost claim aborts the run (`ClaimLostError`). Settled tool
 * results are checkpointed under the claim before each next LLM request, so a later attempt
 * never runs a recorded tool again.
 *
 * @throws AnswerMismatchError when the answer does not echo the pending request id.
 * @throws AnswerConflictError when another delivery holds or already applied the answer (`decision` says what was decided).
 * @throws RuntimeHeldError when a saved runtime holds the request: use `deliverAnswer` or `resumeRuntime`. Nothing is claimed.
 * @throws UnknownRequestError when the conversation waits on no request.
 * @throws AnswerExpiredError for `ok: true` after the request's `expiresAt` (unless claimed in time before).
 * @throws AnswerInvalidError for an answer not of the wire shape; nothing is changed.
 * @throws ConfigError when the client's store has no claims (not a durable store).
 * @throws ClaimLostError when the claim was taken over or could not be renewed mid-run.
 * @example
 * const result = await askWithAnswer(client, { toolkit, id: "order-42", answer: { id: req.id, ok: true } })
 */
export function askWithAnswer(client: Client, opts: AskWithAnswerOptions): Promise<RunResult> {
  // Not async, and not through `askClaimed`: an async layer, its promise and the
  // `{ result, applied }` pair fewer on every resume (DESIGN §7's resume rows). Its throws reject.
  try {
    return askResume(client, opts, undefined)
  } catch (error) {
    return Promise.reject(error)
  }
}

/**
 * @internal {@link askWithAnswer}, also returning the answer its claim applied: the one
 * delivered, or on a takeover the one stored with the claim (the decision, read without
 * asking the store for it again).
 */
export async function askClaimed(
  client: Client,
  opts: AskWithAnswerOptions,
): Promise<{ result: RunResult; applied: Answer }> {
  const claimed: { answer?: Answer } = {}
  const result = await askResume(client, opts, claimed)
  return { result, applied: claimed.answer as Answer }
}

/**
 * The claimed resume of both: checks the answer, claims it through the client's store and runs
 * core's one stored continue under the claim; `claimed.answer` is set to the answer the claim
 * applied. One function for both, so a resume compiles one layer here (DESIGN §7).
 */
function askResume(
  client: Client,
  opts: AskWithAnswerOptions,
  claimed: { answer?: Answer } | undefined,
): Promise<RunResult> {
  checkAnswer(opts?.answer)
  const store = client.conversationStore()
  const { id, answer, toolkit, signal, leaseMs, maxAttempts, onEvent, output, commitSnapshot } = opts
  // One path: the claim decides. A store without claims (core's default memory store) cannot
  // promise one resume per answer, so it is refused rather than resumed without them.
  if (typeof (store as Partial<DurableStore>).claimAnswer !== "function")
    throw new ConfigError(
      "askWithAnswer needs a client over a durable store (createMemoryStore, SQLite, PostgreSQL, Redis); " +
        "client.continueRun resumes without claims",
    )
  return resumeClaimed(
    store as DurableStore,
    id,
    answer,
    { leaseMs, maxAttempts, signal },
    ({ claim, signal }) => {
      if (claimed !== undefined) claimed.answer = claim.answer
      return client.continueRun({
        id,
        answer: claim.answer,
        pending: claim.request,
        // The claim's context: the store judged the answer when it granted the claim.
        resume: { claim: claim.token, signal, checkpoint: true },
        toolkit,
        onEvent,
        output,
        // `undefined` when not given, as an absent key: a stored continue reads it only when set.
        commitSnapshot,
      })
    },
  )
}
