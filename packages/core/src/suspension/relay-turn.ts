import type { ModelToolCall } from "../providers/model-turn.js"
import type { CallEnv, CallOutcome } from "../client/tool-calls.js"
import type { Answer, Request, ToolResult } from "../types.js"
import { declined } from "./call-suspension.js"
import { newRequestId } from "./pending.js"
import { RELAY_KIND, type RelayCall, relayResultFor } from "./relay.js"

/** @internal The one request all relay calls of a turn ride, in call order. */
export function relayRequest(calls: ModelToolCall[]): Request {
  const relayCalls: RelayCall[] = calls.map((c) => ({
    id: c.id,
    name: c.name,
    input: c.args ?? {},
    arguments: c.arguments,
  }))
  const names = calls.map((c) => c.name).join(", ")
  return {
    id: newRequestId(),
    kind: RELAY_KIND,
    prompt: `execute ${calls.length === 1 ? "tool call" : `${calls.length} tool calls`}: ${names}`,
    data: { calls: relayCalls, callId: calls[0]?.id },
  }
}

/** @internal The result of each relay call from the host's answer; a missing one is an error. */
export function relayOutcomes(
  env: CallEnv,
  request: Request,
  calls: ModelToolCall[],
  answer: Answer,
): CallOutcome[] {
  return calls.map((call) => {
    let result: ToolResult
    if (!answer.ok) result = declined(request, answer)
    else {
      const supplied = relayResultFor(answer, call.id, calls.length)
      result = supplied ?? {
        output: `no result was supplied for relay call ${call.id} (${call.name})`,
        isError: true,
      }
    }
    env.record({
      event: "tool",
      tool: call.name,
      source: "relay",
      outcome: result.isError ? "error" : "ok",
      durationMs: 0,
      turn: env.turn,
    })
    return { call, args: call.args ?? {}, result }
  })
}
