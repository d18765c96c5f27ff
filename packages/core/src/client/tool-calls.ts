import type { ModelToolCall } from "../providers/model-turn.js"
import { declined, stampRequest, suspensionOf } from "../suspension/call-suspension.js"
import { unknownTool } from "../tools/toolkit.js"
import type { Toolkit } from "../tools/toolkit.js"
import type { RunTracing } from "../telemetry/run-tracing.js"
import type { Answer, Request, ToolContext, ToolResult, ToolSource } from "../types.js"
import type { Hooks } from "./hooks.js"
import type { MetricEvent } from "./metrics.js"

/** @internal What the tool-call machinery needs from the client and the run. */
export interface CallEnv {
  toolkit: Toolkit | undefined
  hooks: Hooks | undefined
  waitFor: ((req: Request) => Answer | Promise<Answer>) | undefined
  record(ev: MetricEvent): void
  signal: AbortSignal | undefined
  /** Conversation or handle id: the stable half of every idempotency key. */
  scope: string
  turn: number
  tracing: RunTracing | undefined
  /** What `ctx.resolve` asks when it is not `waitFor` (under an executor: the client's own `waitFor`). */
  resolveWith?: ((req: Request) => Answer | Promise<Answer>) | undefined
}

/** @internal The settled outcome of one call; `request` is set when it suspended unresolved. */
export interface CallOutcome {
  call: ModelToolCall
  args: Record<string, unknown>
  result: ToolResult
  request?: Request
  /** A result already in the transcript, kept as it is (not run again, not re-reported). */
  kept?: boolean
  /** Journaled by an executor and returned unrun: its events were emitted by an earlier worker. */
  replayed?: boolean
}

/** @internal The stable idempotency key of a call. */
export function idempotencyKey(scope: string, callId: string): string {
  return `${scope}:${callId}`
}

/**
 * @internal Runs one non-relay call: hooks, execution, and the suspension rule. With an
 * `answer` (a retry after a suspension was answered) a second suspension is `unresolved`.
 */
export function executeCall(
  env: CallEnv,
  call: ModelToolCall,
  answer?: Answer,
  request?: Request,
): Promise<CallOutcome> {
  const tracing = env.tracing
  if (!tracing) return runCall(env, call, answer, undefined, request)
  return tracing.tool(call, (traceContext) => runCall(env, call, answer, traceContext, request))
}

async function runCall(
  env: CallEnv,
  call: ModelToolCall,
  answer: Answer | undefined,
  traceContext: unknown,
  answered?: Request,
): Promise<CallOutcome> {
  const started = performance.now()
  const tool = env.toolkit?.get(call.name)
  const source: ToolSource = tool?.source ?? "custom"
  let args = call.args ?? {}
  let result: ToolResult | undefined
  let request: Request | undefined

  if (call.argumentsError)
    result = { output: `invalid arguments for ${call.name}: ${call.argumentsError}`, isError: true }
  else if (!tool) result = unknownTool(call.name, env.toolkit?.tools().map((t) => t.name) ?? [])
  else {
    // No hook, no await: a tick per call adds up in the loop.
    const hooks = answer ? undefined : env.hooks
    const before =
      hooks?.beforeTool && (await hooks.beforeTool({ name: call.name, args, id: call.id, turn: env.turn }))
    if (before?.args) args = before.args
    result = before?.result ?? (await runTool(env, call, args, answer, traceContext, answered))
    const suspension = suspensionOf(result, answer, source)
    if (suspension) {
      if ("unresolved" in suspension) result = suspension.unresolved
      else if (env.waitFor) {
        const suspended = suspension.fresh
        const asked = stampRequest(suspended, call.id, call.name, args)
        env.tracing?.asked(asked)
        const reply = await env.waitFor(asked)
        if (reply.ok) {
          const retried = { id: call.id, name: call.name, arguments: call.arguments, args }
          return runCall(env, retried, reply, traceContext, asked)
        }
        result = declined(suspended, reply)
      } else request = stampRequest(suspension.fresh, call.id, call.name, args)
    }
  }
  if (!request && tool && env.hooks?.afterTool) {
    const after = await env.hooks.afterTool({ name: call.name, args, result, id: call.id, turn: env.turn })
    if (after?.result) result = after.result
  }
  env.record({
    event: "tool",
    tool: call.name,
    source,
    outcome: request ? "pending" : result.isError ? "error" : "ok",
    durationMs: performance.now() - started,
    turn: env.turn,
  })
  return { call, args, result, request }
}

function runTool(
  env: CallEnv,
  call: ModelToolCall,
  args: Record<string, unknown>,
  answer: Answer | undefined,
  traceContext: unknown,
  answered: Request | undefined,
): Promise<ToolResult> {
  const key = idempotencyKey(env.scope, call.id)
  const ctx: ToolContext = answer
    ? { signal: env.signal, callId: call.id, idempotencyKey: key, answer }
    : { signal: env.signal, callId: call.id, idempotencyKey: key }
  if (answered !== undefined) ctx.request = answered
  const waitFor = "resolveWith" in env ? env.resolveWith : env.waitFor
  if (waitFor) ctx.resolve = async (req) => waitFor(stampRequest(req, call.id, call.name, args))
  if (traceContext !== undefined) ctx.traceContext = traceContext
  return (env.toolkit as Toolkit).execute(call.name, args, ctx)
}
