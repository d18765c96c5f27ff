import {
  type Answer,
  type Client,
  type ConversationStore,
  type EndpointStyle,
  type StreamListener,
  type Request,
  type RunResult,
  type Toolkit,
  lastAssistantText,
} from "@toolnexus/core"

/**
 * @internal Continues a handle's halted turn with an answer through core's stored continue
 * (load → repair the halted turn → run → save, in one place). `claim`, on the last save of
 * a durable resume's cascade, fences that save and consumes the claim.
 */
export function continueHalted(
  id: string,
  client: Client,
  opts: {
    toolkit: Toolkit
    pending: Request
    answer: Answer
    signal: AbortSignal
    onEvent: StreamListener | undefined
    claim?: string
  },
): Promise<RunResult> {
  return client.continueRun({ ...opts, id })
}

/**
 * @internal The outcome an earlier attempt already saved for a handle's conversation `id`,
 * when it no longer waits on `requestId`: a process that died mid-cascade applied the answer
 * there before it could save the runtime. Taking it from the store keeps a redelivered answer
 * from running the turn twice. `undefined` when the store cannot tell or still waits.
 */
export async function appliedBefore(
  store: ConversationStore,
  id: string,
  requestId: string,
  transcript: { model: string; style: EndpointStyle },
): Promise<RunResult | undefined> {
  const reader = store as { getPending?(id: string): Promise<Request | undefined> }
  if (typeof reader.getPending !== "function") return undefined
  const waiting = await reader.getPending(id)
  if (waiting?.id === requestId) return undefined
  const messages = (await store.get(id)) ?? []
  // A run rebuilt from the saved transcript: no turn was run now.
  const result: RunResult = {
    status: waiting ? "pending" : "done",
    text: lastAssistantText(messages, transcript.style),
    messages,
    toolCalls: [],
    toolCallCount: 0,
    turns: 0,
    model: transcript.model,
    usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
  }
  if (waiting) result.pending = waiting
  return result
}
