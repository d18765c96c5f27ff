import { type LoopConfig, type Presets, type RunInput, type RunState, settleTurn } from "../client/loop.js"
import { type CallEnv, type CallOutcome, executeCall } from "../client/tool-calls.js"
import { UnknownRequestError } from "../errors.js"
import type { ModelToolCall } from "../providers/model-turn.js"
import type { Answer, Request } from "../types.js"
import { approvedArguments, asksFor, isGateRequest } from "../tools/approval-policy.js"
import { declined, hearsDecline } from "./call-suspension.js"
import { isRelayRequest, relayCallsOf } from "./relay.js"
import { relayOutcomes } from "./relay-turn.js"

/**
 * @internal Resumes the halted assistant turn at the end of `state.messages` with the
 * answer (already judged by the caller: it answers `pending`, in time), so that every tool call of that turn ends with exactly one result: the halted call
 * is retried with `ctx.answer` (or declined), relay calls take the host's results, recorded
 * results are kept (no tool runs twice), and outstanding calls run now — which may suspend
 * again. Placeholders are replaced. Returns the new request when the turn halts again.
 * Not async (its caller is): a turn that settles synchronously hands back its outcome with no
 * promise, async frame or await of its own, and a refusal is thrown.
 */
export function resumeHaltedTurn(
  config: LoopConfig,
  input: RunInput,
  state: RunState,
  pending: Request,
  answer: Answer,
): Request | undefined | Promise<Request | undefined> {
  const { dialect } = config
  const last = dialect.lastAssistantTurn(state.messages)
  const end = last?.end ?? -1
  const calls = last?.calls ?? []
  // A relay request halts this turn's relay calls only when they are in it; a request relayed
  // up from a sub-agent halts the call that delegated to it (e.g. `task`), retried as usual.
  // (Read only for a relay request: the others skip relayCallsOf, first-run code of a cold resume.)
  // The answered calls are the relay calls (`relayIds`), else the one call `callId`: no Set of
  // one id per resume.
  let relayIds = isRelayRequest(pending)
    ? new Set<unknown>(relayCallsOf(pending).map((c) => c.id))
    : undefined
  if (relayIds !== undefined && !anyAnswered(calls, relayIds, undefined)) relayIds = undefined
  const callId = pending.data?.callId
  if (!anyAnswered(calls, relayIds, callId)) {
    throw new UnknownRequestError(
      pending.id,
      "the transcript's last assistant turn holds no call it suspended",
    )
  }

  if (relayIds === undefined && answer.ok && isGateRequest(pending))
    assertApprovedCall(input, calls, pending, answer)
  const recorded = dialect.recordedResults(state.messages.slice(end + 1))
  // A checkpoint saved this turn's settled results before the crash that brought us here:
  // nothing runs again, the run goes on from them.
  if (settledBefore(calls, recorded, relayIds, callId, pending)) return undefined
  // By call index, as `settleTurn` reads them.
  const presets: Presets = new Array(calls.length)
  if (relayIds !== undefined) presetRelayCalls(presets, calls, relayIds, pending, answer)
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i] as ModelToolCall
    if (presets[i] !== undefined) continue
    if (isAnswered(call.id, relayIds, callId)) {
      // A declined agent or A2A call is still re-invoked: the sub-agent it delegated to took
      // the decision itself (the retried call reattaches to it), a remote task is canceled.
      presets[i] = (env) =>
        answer.ok || hearsDecline(env.toolkit?.get(call.name)?.source ?? "custom")
          ? executeCall(env, call, answer, pending)
          : declinedOutcome(env, call, pending, answer)
      continue
    }
    const kept = recorded.get(call.id)
    if (kept) {
      presets[i] = () => ({
        call,
        args: call.args ?? {},
        result: { output: kept.output, isError: kept.isError },
        kept: true,
      })
    }
  }
  // Placeholders and partial results are rebuilt below, never kept beside the new ones.
  state.messages.length = end + 1
  return settleTurn(config, input, state, calls, state.turns, presets)
}

/** Whether the call `id` is answered: one of `relayIds` when given, else the halted call `callId`. */
function isAnswered(id: unknown, relayIds: ReadonlySet<unknown> | undefined, callId: unknown): boolean {
  return relayIds === undefined ? id === callId : relayIds.has(id)
}

function anyAnswered(
  calls: readonly ModelToolCall[],
  relayIds: ReadonlySet<unknown> | undefined,
  callId: unknown,
): boolean {
  for (const c of calls) if (isAnswered(c.id, relayIds, callId)) return true
  return false
}

/**
 * An approval (`answer.ok`) of the declarative gate (§19, `isGateRequest(pending)`: the caller
 * checks both) resumes only the call it was asked for: the halted call must still carry the
 * arguments the approver saw, and edited ones must fit. Checked before anything runs, so a
 * refused resume changes nothing.
 */
function assertApprovedCall(
  input: RunInput,
  calls: readonly ModelToolCall[],
  pending: Request,
  answer: Answer,
): void {
  const call = calls.find((c) => c.id === pending.data?.callId && asksFor(pending, c.name, c.id))
  if (call) approvedArguments(input.toolkit?.get(call.name), pending, answer, call.args ?? {})
}

/** Presets the relay calls `answer` settles: they share one set of outcomes. */
function presetRelayCalls(
  presets: Presets,
  calls: ModelToolCall[],
  answeredIds: ReadonlySet<unknown>,
  pending: Request,
  answer: Answer,
): void {
  const relayCalls = calls.filter((c) => answeredIds.has(c.id))
  const outcomes = new Map<string, CallOutcome>()
  calls.forEach((c, i) => {
    if (answeredIds.has(c.id)) presets[i] = (env) => fromRelay(outcomes, env, pending, relayCalls, answer, c)
  })
}

/**
 * True when every call of the halted turn has a recorded result and the answered calls'
 * results are no longer the suspension's placeholder (its prompt, as `pending()` writes it): the turn was
 * settled and checkpointed. At a halt, the answered call holds the placeholder and further
 * suspended calls hold nothing, so a halted turn never looks settled.
 */
function settledBefore(
  calls: readonly ModelToolCall[],
  recorded: ReadonlyMap<string, { output: string; isError: boolean }>,
  relayIds: ReadonlySet<unknown> | undefined,
  callId: unknown,
  pending: Request,
): boolean {
  for (const call of calls) {
    const result = recorded.get(call.id)
    if (result === undefined) return false
    if (isAnswered(call.id, relayIds, callId) && isPlaceholder(result, pending)) return false
  }
  return true
}

// By output only: the OpenAI style's tool messages do not keep `isError`.
function isPlaceholder(result: { output: string }, pending: Request): boolean {
  return result.output === pending.prompt || result.output.startsWith(`${pending.prompt}\n`)
}

function fromRelay(
  cache: Map<string, CallOutcome>,
  env: CallEnv,
  pending: Request,
  relayCalls: ModelToolCall[],
  answer: Answer,
  call: ModelToolCall,
): CallOutcome {
  if (cache.size === 0)
    for (const o of relayOutcomes(env, pending, relayCalls, answer)) cache.set(o.call.id, o)
  return cache.get(call.id) as CallOutcome
}

function declinedOutcome(env: CallEnv, call: ModelToolCall, pending: Request, answer: Answer): CallOutcome {
  const result = declined(pending, answer)
  const source = env.toolkit?.get(call.name)?.source ?? "custom"
  env.record({ event: "tool", tool: call.name, source, outcome: "error", durationMs: 0, turn: env.turn })
  return { call, args: call.args ?? {}, result }
}
