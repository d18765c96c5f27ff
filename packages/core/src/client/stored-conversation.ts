import { ConfigError, UnknownRequestError } from "../errors.js"
import type { CommittedSnapshot, ConversationStore } from "../store/conversation-store.js"
import type { Message, Request } from "../types.js"
import type { RunResult } from "./run-result.js"

/** @internal A conversation as loaded from a store: its transcript and the request it waits on. */
export interface LoadedConversation {
  messages: Message[]
  pending: Request | undefined
}

/**
 * @internal The one "load → run → save" sequence every stored run goes through (`ask` and
 * `stream` with an id, `continueRun` without messages): it reads the transcript and its
 * pending request, lets `run` work on them, and saves the result back with the halted request
 * (or `null`) and, when given, the claim token that fences and consumes the save.
 *
 * `readPending` reads the conversation's pending request too. With `checkpoint`, `run` gets
 * a function saving settled tool results mid-run. `mustExist` refuses an unknown
 * conversation (a resume needs something to resume) with
 * `UnknownRequestError` naming `requestId`, or `ConfigError` when there is no answer.
 * With `commit`, the final save writes the snapshot it returns in the same store call
 * (`commitResume`): a store without that is refused before anything is read or run.
 */
export async function runStoredConversation(
  store: ConversationStore,
  id: string,
  opts: {
    claim?: string
    mustExist: boolean
    requestId?: string
    readPending: boolean
    checkpoint?: boolean
    commit?: ((result: RunResult) => CommittedSnapshot | undefined) | undefined
  },
  run: (
    loaded: LoadedConversation,
    checkpoint: ((messages: Message[]) => Promise<void>) | undefined,
  ) => Promise<RunResult>,
): Promise<RunResult> {
  const { commit } = opts
  if (commit !== undefined) {
    // Refused up front: a snapshot the store cannot write with the save is never written apart.
    if (typeof commit !== "function")
      throw new ConfigError(`commitSnapshot must be a function, got ${typeof commit}`)
    if (typeof store.commitResume !== "function")
      throw new ConfigError(
        "commitSnapshot needs a store that writes a save and a snapshot in one call (`commitResume`: a durable store)",
      )
  }
  // Both reads start together; the request is not read when the caller already has it.
  const [messages, pending] = await Promise.all([
    store.get(id),
    opts.readPending ? store.getPending?.(id) : undefined,
  ])
  if (messages === undefined && opts.mustExist) {
    const where = `conversation ${JSON.stringify(id)} does not exist`
    if (opts.requestId !== undefined) throw new UnknownRequestError(opts.requestId, where)
    throw new ConfigError(`continueRun: ${where}`)
  }
  // A checkpoint keeps the pending request and, under a claim, is fenced by it without
  // consuming it: only the final save below applies the answer.
  const checkpoint = opts.checkpoint
    ? (settled: Message[]) =>
        store.save(
          id,
          settled,
          opts.claim === undefined ? { checkpoint: true } : { checkpoint: true, claim: opts.claim },
        )
    : undefined
  const result = await run({ messages: messages ?? [], pending }, checkpoint)
  const meta =
    opts.claim === undefined
      ? { pending: result.pending ?? null }
      : { pending: result.pending ?? null, claim: opts.claim }
  const snapshot = commit?.(result)
  if (snapshot === undefined) await store.save(id, result.messages, meta)
  else await store.commitResume?.({ saves: [{ id, messages: result.messages, meta }], snapshot })
  return result
}
