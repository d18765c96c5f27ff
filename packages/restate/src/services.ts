import type * as Restate from "@restatedev/restate-sdk"
import type { TaskResult } from "@toolnexus/agents"
import {
  type Answer,
  type DurableExecutor,
  type PendingEntry,
  type Request,
  type RunResult,
  assertAnswer,
  expiryTime,
  isExpired,
} from "@toolnexus/core"
import type { EngineAgent } from "./engine-agent.js"
import { type Decided, type OpenRequest, type RunInput, refusalMessage } from "./protocol.js"

type Sdk = typeof Restate

/** The requests object's state keys: the open entry (cleared once decided) and the decision. */
const OPEN = "open"
const DECIDED = "decided"

/**
 * @internal The workflow `<namespace>` (key = run id) and the object `<namespace>_requests`
 * (key = request id) serving `agents`.
 */
export function buildServices(sdk: Sdk, agents: readonly EngineAgent[], namespace: string) {
  const byName = new Map(agents.map((a) => [a.name, a]))
  const requestsName = `${namespace}_requests`
  const { TerminalError } = sdk
  const privately = { ingressPrivate: true }

  /** Records the first decision and sends it to the waiting workflow's promise, together. */
  async function record(ctx: Restate.ObjectContext, open: OpenRequest, answer: Answer): Promise<Decided> {
    const decision =
      answer.reason === undefined ? { ok: answer.ok } : { ok: answer.ok, reason: answer.reason }
    const decided: Decided = { runId: open.runId, request: open.entry.request, decision }
    ctx.set(DECIDED, decided)
    ctx.clear(OPEN)
    ctx
      .workflowSendClient<typeof workflow>({ name: namespace }, open.runId)
      .resolve({ id: answer.id, answer })
    return decided
  }

  const requests = sdk.object({
    name: requestsName,
    handlers: {
      /** The workflow announces a request it waits on. */
      register: sdk.handlers.object.exclusive(
        privately,
        async (ctx: Restate.ObjectContext, open: OpenRequest) => {
          if ((await ctx.get(DECIDED)) !== null || (await ctx.get(OPEN)) !== null) return
          ctx.set(OPEN, open)
        },
      ),
      /** One decision per request id: the first is recorded, every later one refused. */
      decide: async (ctx: Restate.ObjectContext, answer: Answer): Promise<Decided> => {
        try {
          assertAnswer(answer)
        } catch (error) {
          const problem = (error as { problem?: string }).problem ?? String(error)
          throw new TerminalError(refusalMessage({ refused: "invalid", problem }), { errorCode: 400 })
        }
        const decided = await ctx.get<Decided>(DECIDED)
        if (decided !== null)
          throw new TerminalError(
            refusalMessage({ refused: "conflict", id: ctx.key, decision: decided.decision }),
            {
              errorCode: 409,
            },
          )
        const open = await ctx.get<OpenRequest>(OPEN)
        if (open === null)
          throw new TerminalError(refusalMessage({ refused: "unknown", id: ctx.key }), { errorCode: 404 })
        if (answer.ok && isExpired(open.entry.request, await ctx.date.now())) {
          const expiresAt = String(open.entry.request.expiresAt)
          throw new TerminalError(refusalMessage({ refused: "expired", id: ctx.key, expiresAt }), {
            errorCode: 410,
          })
        }
        return record(ctx, open, { ...answer, id: ctx.key })
      },
      /** The engine timer at `expiresAt`: declines the request unless it was decided. */
      expire: sdk.handlers.object.exclusive(privately, async (ctx: Restate.ObjectContext) => {
        const open = await ctx.get<OpenRequest>(OPEN)
        if (open === null || (await ctx.get(DECIDED)) !== null) return
        await record(ctx, open, { id: ctx.key, ok: false, reason: "expired" })
      }),
      /** The open entry, or null once decided (or never seen). */
      find: sdk.handlers.object.shared(
        async (ctx: Restate.ObjectSharedContext): Promise<PendingEntry | null> => {
          const open = await ctx.get<OpenRequest>(OPEN)
          return open?.entry ?? null
        },
      ),
    },
  })

  const workflow = sdk.workflow({
    name: namespace,
    handlers: {
      run: async (ctx: Restate.WorkflowContext, input: RunInput): Promise<RunResult | TaskResult> => {
        const agent = byName.get(input?.agent)
        if (!agent) throw new TerminalError(`no worker defines agent ${JSON.stringify(input?.agent)}`)
        const executor = restateExecutor(sdk, ctx, agent, (request, entry) => {
          ctx
            .objectSendClient<typeof requests>({ name: requestsName }, request.id)
            .register({ runId: ctx.key, entry })
          const deadline = expiryTime(request)
          if (deadline !== undefined) {
            const delay = Math.max(0, deadline - Date.parse(entry.since))
            ctx
              .objectSendClient<typeof requests>({ name: requestsName }, request.id)
              .expire(sdk.rpc.sendOpts({ delay }))
          }
        })
        return runAgent(agent, input.prompt, executor)
      },
      /** The requests object delivers a decision to the promise named by the request id. */
      resolve: sdk.handlers.workflow.shared(
        privately,
        async (ctx: Restate.WorkflowSharedContext, msg: { id: string; answer: Answer }) => {
          await ctx.promise<Answer>(msg.id).resolve(msg.answer)
        },
      ),
    },
  })

  return { workflow, requests }
}

/** An executor that remembers the first engine fault, so no later step runs on a dead path. */
interface RestateExecutor extends DurableExecutor {
  readonly fault: () => unknown
}

/**
 * A step is `ctx.run` with the engine's retries off (core's retry policy is the one); the wait
 * registers the request, arms its expiry timer and awaits the workflow's durable promise.
 */
function restateExecutor(
  sdk: Sdk,
  ctx: Restate.WorkflowContext,
  agent: EngineAgent,
  announce: (request: Request, entry: PendingEntry) => void,
): RestateExecutor {
  let fault: { error: unknown } | undefined
  // A child handle's failure reaches its parent as data; an engine fault must not: once one is
  // seen, every later step fails with it, and the run fails.
  const guard = async <T>(op: () => Promise<T>): Promise<T> => {
    if (fault) throw fault.error
    try {
      return await op()
    } catch (error) {
      if (!(error instanceof sdk.TerminalError)) fault = { error }
      throw error
    }
  }
  const executor: RestateExecutor = {
    id: ctx.key,
    step: <T>(name: string, fn: () => Promise<T>) =>
      guard<T>(async () => ctx.run(name, fn, { maxRetryAttempts: 1 })),
    wait: (request) =>
      guard(async () => {
        const since = new Date(await ctx.date.now()).toISOString()
        announce(request, entryOf(ctx.key, request, since))
        return ctx.promise<Answer>(request.id).get()
      }),
    fault: () => fault?.error,
  }
  if (agent.options.maxStepBytes !== undefined)
    return { ...executor, maxStepBytes: agent.options.maxStepBytes }
  return executor
}

/** §8's entry for a request the run waits on: the deepest holder, one entry per request id. */
function entryOf(runId: string, request: Request, since: string): PendingEntry {
  const path = request.data?.path
  const entry: PendingEntry = { request, conversationId: runId, since, attempts: 0, state: "open" }
  if (Array.isArray(path) && path.every((p) => typeof p === "string")) {
    entry.conversationId = `${runId}/${path.join("/")}`
    entry.runtimeKey = runId
    entry.path = path as string[]
  }
  return entry
}

async function runAgent(
  agent: EngineAgent,
  prompt: string,
  executor: RestateExecutor,
): Promise<RunResult | TaskResult> {
  const { client, toolkit, runtime, onEvent } = agent.options
  const listener = onEvent
    ? (ev: Parameters<typeof onEvent>[0]) => {
        try {
          onEvent(ev)
        } catch {
          // Observers cannot change a run.
        }
      }
    : undefined
  if (client) {
    const result = await client.run(prompt, { toolkit, executor, onEvent: listener })
    const fault = executor.fault()
    if (fault !== undefined) throw fault
    return result
  }
  const { createRuntime } = await import("@toolnexus/agents")
  const { root, ...options } = runtime as NonNullable<typeof runtime>
  const rt = createRuntime({ ...options, executor, onEvent: listener })
  try {
    const handle = rt.spawn(rt.root, root)
    rt.wake(handle, prompt)
    const result = await rt.wait(handle)
    const fault = executor.fault()
    if (fault !== undefined) throw fault
    return result
  } finally {
    await rt.close(rt.root, { force: true })
  }
}
