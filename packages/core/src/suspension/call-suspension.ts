import type { Answer, Request, ToolResult, ToolSource } from "../types.js"
import { pendingOf } from "./pending.js"

/** @internal What a call's result means for the run: a fresh suspension, or an unresolved one. */
export type CallSuspension = { fresh: Request } | { unresolved: ToolResult }

/**
 * @internal The suspension rule for one call's result, or `undefined` when it did not
 * suspend. A call retried with an `answer` that suspends again is `unresolved` — except an
 * agent, MCP or A2A tool parking on a *new* request (a sub-agent that asks something else, a
 * server that elicits after the approval): that is a fresh suspension.
 */
export function suspensionOf(
  result: ToolResult,
  answer: Answer | undefined,
  source: ToolSource,
): CallSuspension | undefined {
  const suspended = pendingOf(result)
  if (!suspended) return undefined
  if (!answer || (parksAgain(source) && suspended.id !== answer.id)) return { fresh: suspended }
  return { unresolved: { output: `unresolved: ${suspended.prompt}`, isError: true } }
}

function parksAgain(source: ToolSource): boolean {
  return source === "agent" || source === "mcp" || source === "a2a"
}

/**
 * @internal True when a declined call is still run with the declined answer instead of the
 * loop's own `declined: …` result: the tool holds remote work it must end itself (an agent
 * tool's sub-agent decides; an A2A tool cancels the remote task; an MCP tool cancels a task,
 * or polls it when the request it waits on expired).
 */
export function hearsDecline(source: ToolSource): boolean {
  return source === "agent" || source === "a2a" || source === "mcp"
}

/**
 * The loop's result for a declined answer: `declined: <prompt>`, with the reason in
 * parentheses when the answer gives one. A tool that hears its declines (source `agent`,
 * `a2a`, `mcp`) returns it for a request it has nothing to end.
 *
 * @example
 * declined({ id: "r1", kind: "approval", prompt: "Delete x?" }, { id: "r1", ok: false, reason: "no" })
 * // { output: "declined: Delete x? (no)", isError: true }
 */
export function declined(request: Request, answer: Answer): ToolResult {
  const reason = answer.reason ? ` (${answer.reason})` : ""
  return { output: `declined: ${request.prompt}${reason}`, isError: true }
}

/**
 * @internal A copy of a tool's request that describes itself: `data.callId` (the provider's
 * call id), `data.tool` and `data.args` (the arguments the tool ran with), each kept when
 * the tool set it itself. Called only for a suspension, so ordinary calls pay nothing.
 */
export function stampRequest(
  request: Request,
  callId: string,
  tool: string,
  args: Record<string, unknown>,
): Request {
  // Built as literals: spread-then-add is slow on Node 20's V8, and a parked run keeps this
  // object. The tool's own keys are written last, so they win.
  const own = request.data
  const data: Record<string, unknown> = own ? { callId, tool, args, ...own } : { callId, tool, args }
  const stamped: Request = { id: request.id, kind: request.kind, prompt: request.prompt, data }
  if (request.url !== undefined) stamped.url = request.url
  if (request.expiresAt !== undefined) stamped.expiresAt = request.expiresAt
  return stamped
}
