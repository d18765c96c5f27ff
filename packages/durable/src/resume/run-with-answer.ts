import type { Answer, Client, StreamListener, Message, Request, RunResult, Toolkit } from "@toolnexus/core"

/** Options of {@link runWithAnswer}. */
export interface RunWithAnswerOptions {
  /**
   * The tools of the resumed run, the halted call's tool among them; without it the run has
   * no tools and the halted call gets an unknown-tool result.
   */
  toolkit?: Toolkit
  /** The halted transcript (e.g. `RunResult.messages`, after any JSON round trip). */
  history: Message[]
  /** The request it halted on. */
  pending: Request
  /** The answer to `pending`: its `id` must echo `pending.id`. */
  answer: Answer
  /** Aborts the resumed run (nothing is stored: the caller keeps the transcript). */
  signal?: AbortSignal
  /** Events of the resumed run as they happen. */
  onEvent?: StreamListener
}

/**
 * Resumes a halted run from its transcript and the answer: the halted call is retried with
 * `ctx.answer` (or declined), every other call of that turn keeps or gets exactly one
 * result, and the run goes on. Works on any client, e.g. a fresh one in a new process.
 *
 * @throws AnswerMismatchError when `answer.id` does not echo `pending.id`; nothing is changed.
 * @throws AnswerExpiredError for `ok: true` after the request's `expiresAt`.
 * @example
 * const result = await runWithAnswer(client, { toolkit, history: saved.messages, pending: saved.pending, answer })
 */
export function runWithAnswer(client: Client, opts: RunWithAnswerOptions): Promise<RunResult> {
  const { toolkit, history, pending, answer, signal, onEvent } = opts
  return client.continueRun({ toolkit, messages: history, pending, answer, signal, onEvent })
}
