import {
  AnswerConflictError,
  type AnswerDecision,
  AnswerExpiredError,
  ConfigError,
  HostUnsupportedError,
  UnknownRequestError,
} from "../errors.js"
import { answerExpired } from "../suspension/answer-fits.js"
import { assertAnswer } from "../suspension/answer-shape.js"
import type { PendingEntry } from "../suspension/pending-entry.js"
import type { Answer, Prompt, Request } from "../types.js"

const RUN_ID = /^[A-Za-z0-9._:-]{1,200}$/

/**
 * The checked run id (the workflow id).
 *
 * @throws ConfigError unless it matches `^[A-Za-z0-9._:-]{1,200}$`.
 */
export function checkRunId(runId: string): string {
  if (typeof runId !== "string" || !RUN_ID.test(runId))
    throw new ConfigError(`run id must match ${RUN_ID}, got ${JSON.stringify(runId)}`)
  return runId
}

/**
 * The checked namespace, `fallback` when absent; `pattern` is what the engine can name with it.
 *
 * @throws ConfigError when it does not match `pattern`.
 */
export function namespaceOf(namespace: string | undefined, pattern: RegExp, fallback = "toolnexus"): string {
  const ns = namespace ?? fallback
  if (typeof ns !== "string" || !pattern.test(ns))
    throw new ConfigError(`namespace must match ${pattern}, got ${JSON.stringify(ns)}`)
  return ns
}

/** A run's workflow input. */
export interface EngineRunInput {
  /** The engine agent's name. */
  agent: string
  /** The run's prompt. */
  prompt: string
}

/** What `deliverAnswer` resolves to once the decision is recorded. */
export interface EngineDecided {
  /** The run the request belongs to. */
  runId: string
  /** The request that was answered. */
  request: Request
  /** The decision recorded for it. */
  decision: AnswerDecision
}

/** What an engine holds for one request id: the run waiting on it, and its first decision. */
export interface HeldRequest {
  /** The run waiting on the request. */
  runId: string
  /** The request itself. */
  request: Request
  /** Its first decision, once one was recorded. */
  decision?: AnswerDecision | undefined
}

/** The decision the engine's expiry timer records. */
export const EXPIRED: AnswerDecision = Object.freeze({ ok: false, reason: "expired" })

/** The decision an answer makes: `ok`, and `reason` when given. */
export function decisionOf(answer: Answer): AnswerDecision {
  return answer.reason === undefined ? { ok: answer.ok } : { ok: answer.ok, reason: answer.reason }
}

/**
 * One decision per request id (§8): the decision `answer` makes on request `id`, which the
 * engine must record together with its delivery; or why it cannot.
 *
 * @throws AnswerInvalidError for a malformed answer; UnknownRequestError when nothing is held;
 *   AnswerConflictError with the first decision once one was made (an identical answer too);
 *   AnswerExpiredError for `ok: true` after the request's `expiresAt`.
 */
export function decide(
  id: string,
  held: HeldRequest | undefined,
  answer: unknown,
  now = Date.now(),
): EngineDecided {
  assertAnswer(answer)
  if (!held) throw new UnknownRequestError(id)
  if (held.decision) throw new AnswerConflictError(id, "it was already decided", { decision: held.decision })
  if (answerExpired(held.request, answer, now))
    throw new AnswerExpiredError(id, String(held.request.expiresAt))
  return { runId: held.runId, request: held.request, decision: decisionOf(answer) }
}

/**
 * §8's entry for a request run `runId` waits on: the deepest holder (from `data.path`, stamped
 * by the agents runtime), one entry per request id.
 */
export function engineEntryOf(runId: string, request: Request, since: string): PendingEntry {
  const path = request.data?.path
  const entry: PendingEntry = { request, conversationId: runId, since, attempts: 0, state: "open" }
  if (Array.isArray(path) && path.every((p) => typeof p === "string")) {
    entry.conversationId = `${runId}/${path.join("/")}`
    entry.runtimeKey = runId
    entry.path = path as string[]
  }
  return entry
}

/**
 * The prompt an engine run takes, from `RunHost.start`'s arguments: a string, and no caller
 * `onEvent` (an engine's runs stream in its workers).
 *
 * @throws HostUnsupportedError (naming `host`) for content parts or an `onEvent`.
 */
export function enginePrompt(host: string, prompt: Prompt, opts: { onEvent?: unknown } | undefined): string {
  if (opts?.onEvent !== undefined)
    throw new HostUnsupportedError(
      host,
      "start({ onEvent })",
      "a run's events are the workers' (the agent's `onEvent`)",
    )
  if (typeof prompt !== "string")
    throw new HostUnsupportedError(
      host,
      "start with content parts",
      "an engine run's prompt is a string for now",
    )
  return prompt
}
