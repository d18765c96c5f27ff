import type { ModelToolCall } from "../providers/model-turn.js"
import { declined, hearsDecline, stampRequest, suspensionOf } from "../suspension/call-suspension.js"
import { executeIn, unknownTool } from "../tools/toolkit.js"
import type { Toolkit } from "../tools/toolkit.js"
import type { GrantLookup } from "../tools/approval-policy.js"
import { isThenable } from "../internal/thenable.js"
import { realSignal, type RunSignal } from "../internal/run-abort.js"
import type { RunTracing } from "../telemetry/run-tracing.js"
import type {
  Answer,
  DurableExecutor,
  Request,
  Tool,
  ToolContext,
  ToolModel,
  ToolResult,
  ToolSource,
} from "../types.js"
import type { Hooks } from "./hooks.js"
import type { MetricEvent } from "./metrics.js"

/** @internal What the tool-call machinery needs from the client and the run. */
export interface CallEnv {
  toolkit: Toolkit | undefined
  hooks: Hooks | undefined
  waitFor: ((req: Request) => Answer | Promise<Answer>) | undefined
  record(ev: MetricEvent): void
  signal: RunSignal | undefined
  /** The run's id (conversation, handle, executor or generated): the stable half of every idempotency key. */
  scope: string
  turn: number
  tracing: RunTracing | undefined
  /** What `ctx.resolve` asks when it is not `waitFor` (under an executor: the client's own `waitFor`). */
  resolveWith?: ((req: Request) => Answer | Promise<Answer>) | undefined
  /** The client's `fetch` seam (`ctx.fetch`). */
  fetch?: typeof fetch | undefined
  /** The client running the call (`ctx.client`). */
  client?: ToolModel | undefined
  /** Under an executor, for agent-source calls: `ctx.executor`, scoped to the call. */
  executor?: DurableExecutor | undefined
  /** The store's approval-grant lookup, for the approval gate (§19). */
  grants?: GrantLookup | undefined
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

/**
 * @internal Runs one non-relay call: hooks, execution, and the suspension rule. With an
 * `answer` (a retry after a suspension was answered) a second suspension is `unresolved`.
 * A synchronous tool with no hooks settles synchronously: no promise, no tick per call.
 */
export function executeCall(
  env: CallEnv,
  call: ModelToolCall,
  answer?: Answer,
  request?: Request,
): Promise<CallOutcome> | CallOutcome {
  const tracing = env.tracing
  if (!tracing) {
    // A hook or a metric listener that throws rejects the call, as an async call would.
    try {
      return runCall(env, call, answer, undefined, request)
    } catch (error) {
      return Promise.reject(error)
    }
  }
  return tracing.tool(call, (traceContext) => runCall(env, call, answer, traceContext, request))
}

/** One call's execution so far: what the later steps (suspension, afterTool, metric) need. */
interface Running {
  env: CallEnv
  call: ModelToolCall
  tool: Tool | undefined
  source: ToolSource
  started: number
  args: Record<string, unknown>
  answer: Answer | undefined
  traceContext: unknown
}

function runCall(
  env: CallEnv,
  call: ModelToolCall,
  answer: Answer | undefined,
  traceContext: unknown,
  answered?: Request,
): Promise<CallOutcome> | CallOutcome {
  const started = performance.now()
  const tool = env.toolkit?.get(call.name)
  const source: ToolSource = tool?.source ?? "custom"
  const run: Running = { env, call, tool, source, started, args: call.args ?? {}, answer, traceContext }
  if (call.argumentsError)
    return finish(run, {
      output: `invalid arguments for ${call.name}: ${call.argumentsError}`,
      isError: true,
    })
  if (!tool) return finish(run, unknownTool(call.name, env.toolkit?.tools().map((t) => t.name) ?? []))
  // The tool's context, built here rather than in a function of its own: a cold resume runs
  // this path once before its first request, and every function on it is compiled there.
  // The idempotency key is `<run's scope>:<call id>`, stable across retries and workers.
  // `ctx.signal` is a real AbortSignal: a host's `RunAbort` makes its one (per run, kept) at
  // the run's first tool call, so a turn without tools makes none.
  const conversationId = env.scope
  const ctx: ToolContext = answer
    ? {
        signal: realSignal(env.signal),
        callId: call.id,
        conversationId,
        idempotencyKey: `${conversationId}:${call.id}`,
        answer,
      }
    : {
        signal: realSignal(env.signal),
        callId: call.id,
        conversationId,
        idempotencyKey: `${conversationId}:${call.id}`,
      }
  if (answered !== undefined) ctx.request = answered
  const waitFor = "resolveWith" in env ? env.resolveWith : env.waitFor
  // `run.args` when asked: a `beforeTool` hook may replace them before the tool runs.
  if (waitFor) ctx.resolve = async (req) => waitFor(stampRequest(req, call.id, call.name, run.args))
  if (traceContext !== undefined) ctx.traceContext = traceContext
  if (env.fetch) ctx.fetch = env.fetch
  if (env.client) ctx.client = env.client
  if (env.executor) ctx.executor = env.executor
  // A retry does not ask beforeTool again.
  const before = answer ? undefined : env.hooks?.beforeTool
  if (before) return hooked(run, before, ctx)
  const result = executeIn(env.toolkit as Toolkit, tool, run.args, ctx, env.grants)
  return isThenable(result) ? result.then((r) => settled(run, r)) : settled(run, result)
}

/** The path with a `beforeTool` hook, which may change the arguments or answer for the tool. */
async function hooked(
  run: Running,
  before: NonNullable<Hooks["beforeTool"]>,
  ctx: ToolContext,
): Promise<CallOutcome> {
  const { call, env } = run
  const changed = await before({ name: call.name, args: run.args, id: call.id, turn: env.turn })
  if (changed?.args) run.args = changed.args
  return settled(
    run,
    changed?.result ?? (await executeIn(env.toolkit as Toolkit, run.tool as Tool, run.args, ctx, env.grants)),
  )
}

/** Applies the suspension rule to the tool's result: ask `waitFor`, or halt on the request. */
function settled(run: Running, result: ToolResult): Promise<CallOutcome> | CallOutcome {
  // Most results suspend on nothing: they skip `suspensionOf` and its helpers (first-run code).
  const suspension =
    result.metadata?.pending === undefined ? undefined : suspensionOf(result, run.answer, run.source)
  if (!suspension) return finish(run, result)
  if ("unresolved" in suspension) return finish(run, suspension.unresolved)
  const { call, env } = run
  const asked = stampRequest(suspension.fresh, call.id, call.name, run.args)
  if (!env.waitFor) return finish(run, result, asked)
  return waited(run, env.waitFor, suspension.fresh, asked)
}

/** Asks `waitFor` about a fresh suspension; an approval retries the call with the answer. */
async function waited(
  run: Running,
  waitFor: (req: Request) => Answer | Promise<Answer>,
  suspended: Request,
  asked: Request,
): Promise<CallOutcome> {
  const { call, env } = run
  env.tracing?.asked(asked)
  const reply = await waitFor(asked)
  if (!reply.ok && !hearsDecline(run.source)) return finish(run, declined(suspended, reply))
  const retried = { id: call.id, name: call.name, arguments: call.arguments, args: run.args }
  return runCall(env, retried, reply, run.traceContext, asked)
}

/**
 * The `afterTool` hook (not for a halt, nor once it ran: `hooked`), then the call's metric and
 * outcome, in this one function when there is no hook.
 */
function finish(
  run: Running,
  result: ToolResult,
  request?: Request,
  afterRan?: boolean,
): Promise<CallOutcome> | CallOutcome {
  const { env, call } = run
  const after = afterRan || request || !run.tool ? undefined : env.hooks?.afterTool
  if (after) {
    const changed = after({ name: call.name, args: run.args, result, id: call.id, turn: env.turn })
    return Promise.resolve(changed).then((c) => finish(run, c?.result ?? result, undefined, true))
  }
  env.record({
    event: "tool",
    tool: call.name,
    source: run.source,
    outcome: request ? "pending" : result.isError ? "error" : "ok",
    durationMs: performance.now() - run.started,
    turn: env.turn,
  })
  return { call, args: run.args, result, request }
}
