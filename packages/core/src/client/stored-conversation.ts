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
  if (opts.commit !== undefined) checkCommit(store, opts.commit)
  // Both reads start together; the request is not read when the caller already has it (a
  // claimed resume: then no Promise.all, whose array, element callbacks and result array a
  // resume paid for one read).
  let messages: Message[] | undefined
  let pending: Request | undefined
  if (opts.readPending) [messages, pending] = await Promise.all([store.get(id), store.getPending?.(id)])
  else messages = await store.get(id)
  if (messages === undefined && opts.mustExist) missingConversation(id, opts.requestId)
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
  await saveRun(store, id, opts.claim, opts.commit, result)
  return result
}

// The rare branches and the final save are functions of their own: a resumed run reaches its
// first LLM request without compiling them (fresh-process resume, DESIGN §7).

/** Refuses, up front, a `commitSnapshot` the store cannot write with the save (never written apart). */
function checkCommit(store: ConversationStore, commit: unknown): void {
  if (typeof commit !== "function")
    throw new ConfigError(`commitSnapshot must be a function, got ${typeof commit}`)
  if (typeof store.commitResume !== "function")
    throw new ConfigError(
      "commitSnapshot needs a store that writes a save and a snapshot in one call (`commitResume`: a durable store)",
    )
}

function missingConversation(id: string, requestId: string | undefined): never {
  const where = `conversation ${JSON.stringify(id)} does not exist`
  if (requestId !== undefined) throw new UnknownRequestError(requestId, where)
  throw new ConfigError(`continueRun: ${where}`)
}

/** The run's final save (under its claim, if any), with the snapshot `commit` makes of it in the same call. */
function saveRun(
  store: ConversationStore,
  id: string,
  claim: string | undefined,
  commit: ((result: RunResult) => CommittedSnapshot | undefined) | undefined,
  result: RunResult,
): Promise<void> | undefined {
  const meta =
    claim === undefined ? { pending: result.pending ?? null } : { pending: result.pending ?? null, claim }
  const snapshot = commit?.(result)
  if (snapshot === undefined) return store.save(id, result.messages, meta)
  return store.commitResume?.({ saves: [{ id, messages: result.messages, meta }], snapshot })
}
