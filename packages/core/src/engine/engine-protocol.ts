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

/** A run's workflow input: one turn of a run (a conversation run's later turns are workflows of their own). */
export interface EngineRunInput {
  /** The engine agent's name. */
  agent: string
  /** The turn's prompt. */
  prompt: string
  /** The run's id; absent on the first turn, whose workflow id is the run id. */
  runId?: string
  /** The turn's number, from 1; absent means 1. */
  turn?: number
}

/**
 * The workflow id of turn `turn` of run `runId`: the run id for the first, `<run id>~<turn>`
 * after it (`~` is outside the run id alphabet, so no run's id is another's turn).
 */
export function turnWorkflowId(runId: string, turn: number): string {
  return turn <= 1 ? runId : `${runId}~${turn}`
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
 * Refuses what an engine run cannot honour from a `RunHost` call's options: `relay` (a
 * caller's per-run tools, history or output; the workers' toolkit is fixed).
 *
 * @throws HostUnsupportedError (naming `host` and `what`) when `relay` is given.
 */
export function engineRunOptions(host: string, what: string, opts: { relay?: unknown } | undefined): void {
  if (opts?.relay !== undefined)
    throw new HostUnsupportedError(
      host,
      `${what} with relay`,
      "an engine's workers run the agent's own toolkit; per-run relay tools need a store host",
    )
}

/**
 * The prompt an engine run takes, from `RunHost.start`'s or `send`'s arguments: a string (the
 * workflow input is plain JSON and a tree's prompt is text).
 *
 * @throws HostUnsupportedError (naming `host`) for content parts.
 */
export function enginePrompt(host: string, prompt: Prompt): string {
  if (typeof prompt !== "string")
    throw new HostUnsupportedError(
      host,
      "start with content parts",
      "an engine run's prompt is a string for now",
    )
  return prompt
}
