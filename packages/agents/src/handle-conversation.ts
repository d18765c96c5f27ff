import {
  type Answer,
  type Client,
  type ConversationStore,
  type EndpointStyle,
  type StreamListener,
  type Request,
  type ResumeContext,
  type RunResult,
  type Toolkit,
  lastAssistantText,
} from "@toolnexus/core"
import type { HandleRecord } from "./handle-record.js"

/**
 * @internal Continues a handle's halted turn with an answer through core's one stored path
 * (`continueRun` without messages: load → repair the halted turn → run → save). `resume` is
 * the context of the durable claim the answer was accepted under; its `claim` token is given
 * only to the last save of a resume cascade.
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
    resume?: ResumeContext | undefined
  },
): Promise<RunResult> {
  return client.continueRun({ ...opts, id })
}

/**
 * @internal The request as handle `r`'s own transcript halted on it. An escalated request
 * keeps the leaf's stamps (`data.callId` names the leaf's call), so for a parent the halted
 * call is the `task` call that delegated to `child`: the child's task key.
 */
export function haltedOn(request: Request, child: HandleRecord | undefined): Request {
  const callId = child?.taskKey
  if (callId === undefined || request.data?.callId === callId) return request
  return { ...request, data: { ...request.data, callId } }
}

/**
 * @internal The outcome an earlier attempt already saved for a handle's conversation `id`,
 * when it no longer waits on `requestId`: a process whose cascade wrote in separate calls (a
 * plain store; a durable tree stored before round 5) died after applying the answer there,
 * before it could save the runtime. A resume under a durable claim never asks: it commits the
 * cascade in one store call. Taking it from the store keeps a redelivered answer
 * from running the turn twice. `undefined` when the store cannot tell or still waits.
 */
export async function appliedBefore(
  store: ConversationStore,
  id: string,
  requestId: string,
  transcript: { model: string; style: EndpointStyle },
): Promise<RunResult | undefined> {
  if (store.getPending === undefined) return undefined
  const waiting = await store.getPending(id)
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
