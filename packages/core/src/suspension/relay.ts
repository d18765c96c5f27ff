import type { Answer, Request } from "../types.js"

/** The request kind of relayed (caller-executed) tool calls. */
export const RELAY_KIND = "tool_call"

/** One relayed tool call: what the host must execute. */
export interface RelayCall {
  /** The model's id of the call; the host's {@link RelayResult} echoes it. */
  id: string
  /** The name of the relay tool called. */
  name: string
  /** The parsed arguments; `{}` when the model's JSON did not parse. */
  input: Record<string, unknown>
  /** The raw JSON string the model produced. */
  arguments: string
}

/** One result the host sends back for a relayed call. */
export interface RelayResult {
  /** The `id` of the {@link RelayCall} this result answers. */
  id: string
  /** The result text the model sees for the call. */
  output: string
  /** Whether the model sees it as an error result; default `false`. */
  isError?: boolean
}

/** True when the request asks the host to execute relayed tool calls. */
export function isRelayRequest(req: Request): boolean {
  return req.kind === RELAY_KIND
}

/** The calls a relay request carries, in tool-call order (`[]` for other requests). */
export function relayCallsOf(req: Request): RelayCall[] {
  const calls = req.data?.calls
  return isRelayRequest(req) && Array.isArray(calls) ? (calls as RelayCall[]) : []
}

/**
 * Builds the answer to a relay request from the host's results.
 *
 * @example
 * const answer = relayAnswer(req.id, relayCallsOf(req).map((c) => ({ id: c.id, output: run(c) })))
 */
export function relayAnswer(requestId: string, results: RelayResult[]): Answer {
  return {
    id: requestId,
    ok: true,
    data: { results: results.map((r) => ({ id: r.id, output: r.output, isError: r.isError ?? false })) },
  }
}

/**
 * @internal The host's result for one relayed call: from `data.results`, or, when the
 * request carried a single call, the shorthand `data.output` / `data.isError`.
 */
export function relayResultFor(
  answer: Answer,
  callId: string,
  callCount: number,
): { output: string; isError: boolean } | undefined {
  const results = answer.data?.results
  if (Array.isArray(results)) {
    const hit = results.find(
      (r) => typeof r === "object" && r !== null && (r as RelayResult).id === callId,
    ) as RelayResult | undefined
    if (hit) return { output: String(hit.output ?? ""), isError: hit.isError === true }
  }
  if (callCount === 1 && answer.data && "output" in answer.data) {
    return { output: String(answer.data.output ?? ""), isError: answer.data.isError === true }
  }
  return undefined
}
