import type * as Restate from "@restatedev/restate-sdk"
import type { TaskResult } from "@toolnexus/agents"
import {
  type Answer,
  type AnswerDecision,
  type PendingEntry,
  type Request,
  type RunResult,
  expiryTime,
} from "@toolnexus/core"
import {
  EXPIRED,
  type EngineDecided,
  type EngineExecutor,
  type EngineRunInput,
  decide,
  engineEntryOf,
  engineExecutor,
  runEngineAgent,
} from "@toolnexus/core/engine"
import type { EngineAgent } from "./engine-agent.js"
import { type OpenRequest, refusalOf } from "./protocol.js"

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
  function record(ctx: Restate.ObjectContext, decided: EngineDecided, answer: Answer): EngineDecided {
    ctx.set(DECIDED, decided)
    ctx.clear(OPEN)
    ctx
      .workflowSendClient<typeof workflow>({ name: namespace }, decided.runId)
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
      decide: async (ctx: Restate.ObjectContext, answer: Answer): Promise<EngineDecided> => {
        const held = await ctx.get<EngineDecided>(DECIDED)
        const open = held === null ? await ctx.get<OpenRequest>(OPEN) : null
        const now = await ctx.date.now()
        let decided: EngineDecided
        try {
          decided = decide(
            ctx.key,
            held ?? (open ? { runId: open.runId, request: open.entry.request } : undefined),
            answer,
            now,
          )
        } catch (error) {
          const refusal = refusalOf(error)
          if (refusal === undefined) throw error
          throw new TerminalError(refusal.message, { errorCode: refusal.status })
        }
        return record(ctx, decided, { ...answer, id: ctx.key })
      },
      /** The engine timer at `expiresAt`: declines the request unless it was decided. */
      expire: sdk.handlers.object.exclusive(privately, async (ctx: Restate.ObjectContext) => {
        const open = await ctx.get<OpenRequest>(OPEN)
        if (open === null || (await ctx.get(DECIDED)) !== null) return
        const decided = { runId: open.runId, request: open.entry.request, decision: EXPIRED }
        record(ctx, decided, { id: ctx.key, ...EXPIRED })
      }),
      /** The recorded decision, or null while open (or never seen). */
      decision: sdk.handlers.object.shared(
        async (ctx: Restate.ObjectSharedContext): Promise<AnswerDecision | null> =>
          (await ctx.get<EngineDecided>(DECIDED))?.decision ?? null,
      ),
      /**
       * A cancelled run's open request: decided `{ ok: false, reason }` without a delivery (the
       * run is cancelled), so a later answer is refused with it.
       */
      withdraw: sdk.handlers.object.exclusive(
        async (ctx: Restate.ObjectContext, msg: { runId: string; reason: string }) => {
          const open = await ctx.get<OpenRequest>(OPEN)
          if (open === null || open.runId !== msg.runId || (await ctx.get(DECIDED)) !== null) return
          const decision: AnswerDecision = { ok: false, reason: String(msg.reason) }
          ctx.set(DECIDED, { runId: open.runId, request: open.entry.request, decision })
          ctx.clear(OPEN)
        },
      ),
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
      run: async (ctx: Restate.WorkflowContext, input: EngineRunInput): Promise<RunResult | TaskResult> => {
        const agent = byName.get(input?.agent)
        if (!agent) throw new TerminalError(`no worker defines agent ${JSON.stringify(input?.agent)}`)
        const executor = restateExecutor(sdk, ctx, agent, (request, entry) => {
          ctx
            .objectSendClient<typeof requests>({ name: requestsName }, request.id)
            .register({ runId: ctx.key, entry })
          const at = expiryTime(request)
          if (at !== undefined) {
            // An unreadable deadline is 0: the timer fires at once.
            const delay = Math.max(0, at - Date.parse(entry.since))
            ctx
              .objectSendClient<typeof requests>({ name: requestsName }, request.id)
              .expire(sdk.rpc.sendOpts({ delay }))
          }
        })
        return runEngineAgent(agent, input.prompt, executor, async () => {
          const { createRuntime } = await import("@toolnexus/agents")
          return createRuntime as never
        })
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

/**
 * A step is `ctx.run` with the engine's retries off (core's retry policy is the one); the wait
 * registers the request, arms its expiry timer and awaits the workflow's durable promise. Any
 * error but a TerminalError (a step's own failure) is an engine fault.
 */
function restateExecutor(
  sdk: Sdk,
  ctx: Restate.WorkflowContext,
  agent: EngineAgent,
  announce: (request: Request, entry: PendingEntry) => void,
): EngineExecutor {
  const base = {
    id: ctx.key,
    step: <T>(name: string, fn: () => Promise<T>) => ctx.run(name, fn, { maxRetryAttempts: 1 }) as Promise<T>,
    async wait(request: Request) {
      const since = new Date(await ctx.date.now()).toISOString()
      announce(request, engineEntryOf(ctx.key, request, since))
      return ctx.promise<Answer>(request.id).get()
    },
  }
  return engineExecutor(agent, base, (error) => !(error instanceof sdk.TerminalError))
}
