import { type AnswerDecision, ToolnexusError } from "../errors.js"
import type { PendingEntry } from "../suspension/pending-entry.js"
import type { Answer, Request } from "../types.js"
import type { RunResult } from "./run-result.js"

/**
 * A host's handle on runs that live in a durable-execution engine (`connectRestate`,
 * `connectDbos`): start runs, read their results, and list and answer their open requests
 * under one-decision-per-request rules. `Result` is `RunResult`, or `RunResult | TaskResult`
 * where agents run runtimes.
 */
export interface EngineConnection<Result = RunResult> {
  /**
   * Starts run `runId` of `agent` on `prompt`; a run id already used is that run
   * (`started: false`), never a second one.
   *
   * @throws ConfigError when `runId` does not match `^[A-Za-z0-9._:-]{1,200}$`.
   */
  start(
    agent: string,
    runId: string,
    prompt: string,
  ): Promise<{
    /** The run's id: `runId` as given. */
    runId: string
    /** `false` when a run with this id already existed, so this call started nothing. */
    started: boolean
  }>
  /** The run's result once it ends; rejects `EngineRunError` for a failed or unknown run. */
  result(runId: string, opts?: { timeoutMs?: number }): Promise<Result>
  /** Open requests, one entry per request id, by `since` then request id. */
  listPending(opts?: { limit?: number; kind?: string; after?: string }): Promise<PendingEntry[]>
  /** The open request with this id, if any. */
  findRequest(requestId: string): Promise<PendingEntry | undefined>
  /**
   * Records `answer` as the decision on its request and sends it to the waiting run; resolves
   * when the decision is recorded (the run goes on in the engine).
   *
   * @throws AnswerInvalidError for a malformed answer; UnknownRequestError for an unknown
   *   request; AnswerConflictError (with the first `decision`) when it was decided;
   *   AnswerExpiredError for `ok: true` after `expiresAt`.
   */
  deliverAnswer(answer: Answer): Promise<{
    /** The id of the run that waits on the request and goes on with the decision. */
    runId: string
    /** The open request the answer decided. */
    request: Request
    /** The decision recorded: `ok`, and `reason` when declined. */
    decision: AnswerDecision
  }>
  /**
   * Releases what the connection holds (pending HTTP waits, its database pool); the runs in
   * the engine go on.
   */
  close(): Promise<void>
}

/**
 * A run on a durable-execution engine that failed (past core's retries, an agent no worker
 * defines, a turn over `maxStepBytes`) or that the engine does not know (never started, past
 * retention): what `EngineConnection.result` rejects with.
 */
export class EngineRunError extends ToolnexusError {
  /**
   * Always `"EngineRunError"`: lets a caller test `err.name === "EngineRunError"` (`code` is
   * `"TNX_ENGINE_RUN"`).
   */
  override readonly name = "EngineRunError"
  static override readonly family = "TNX_ENGINE_RUN"
  /** The run (workflow) id. */
  readonly runId: string
  constructor(runId: string, detail: string, options?: { cause?: unknown }) {
    super("TNX_ENGINE_RUN", `run ${JSON.stringify(runId)} ${detail}`, options)
    this.runId = runId
  }
}
