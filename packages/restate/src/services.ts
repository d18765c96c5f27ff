import type * as Restate from "@restatedev/restate-sdk"
import type { EngineAgent, TaskResult } from "@toolnexus/agents"
import {
  type Answer,
  type AnswerDecision,
  type Logger,
  type Message,
  type PendingEntry,
  type Request,
  type RunResult,
  type StreamEvent,
  type WaitContext,
  expiryTime,
  isToolnexusError,
} from "@toolnexus/core"
import {
  EXPIRED,
  type EngineDecided,
  type EngineExecutor,
  type EngineRunInput,
  decide,
  engineEntryOf,
  engineEventLog,
  engineExecutor,
  runEngineAgent,
  turnWorkflowId,
} from "@toolnexus/core/engine"
import type { RuntimeEvent } from "@toolnexus/agents"
import {
  type OpenRequest,
  type Refused,
  type RunState,
  type RunUpdate,
  STATE_VERSION,
  checkVersion,
  refusalOf,
  runStateOf,
} from "./protocol.js"

type Sdk = typeof Restate
type EngineEvent = StreamEvent | RuntimeEvent

/** The requests object's state keys: the open entry (cleared once decided) and the decision. */
const OPEN = "open"
const DECIDED = "decided"
/** The runs object's state keys: the run's state, and its conversation after its last turn. */
const RUN = "run"
const TRANSCRIPT = "transcript"
/** The conversation of the current turn while it waits on a request. */
const PARKED = "parked"
/** The events object's state: `n` events, each under `e:<index>`. */
const COUNT = "n"
/**
 * The events object's position where the turn's current stretch starts: after its last park,
 * so a resumed turn's events start after what was delivered before it waited (absent: 0).
 */
const START = "start"
/** The events object's format version (absent: written before it was kept, read as 1). */
const VERSION = "v"
/** Events one `read` returns at most. */
const READ_LIMIT = 500

/** @internal What the services need besides the agents. */
export interface ServiceOptions {
  /** Refusals at `info`, failed runs at `error` with their code. */
  logger?: Logger | undefined
  /** Where the event log is written (the ingress URL); without it no events are logged. */
  ingress?: string | undefined
}

/**
 * @internal The workflow `<namespace>` (key = a turn's workflow id), and the objects
 * `<namespace>_requests` (key = request id), `<namespace>_runs` (key = run id) and
 * `<namespace>_events` (key = a turn's workflow id) serving `agents`.
 */
export function buildServices(
  sdk: Sdk,
  agents: readonly EngineAgent[],
  namespace: string,
  opts: ServiceOptions = {},
) {
  const { logger } = opts
  const byName = new Map(agents.map((a) => [a.name, a]))
  const requestsName = `${namespace}_requests`
  const runsName = `${namespace}_runs`
  const eventsName = `${namespace}_events`
  const { TerminalError } = sdk
  /** A state of an unknown version is refused for good: a retry of the handler would not read it either. */
  const terminally = <T>(read: () => T): T => {
    try {
      return read()
    } catch (error) {
      throw new TerminalError((error as Error).message)
    }
  }
  const runOf = async (ctx: Restate.ObjectContext) => {
    const value = await ctx.get<RunState>(RUN)
    return terminally(() => runStateOf(value, ctx.key))
  }
  const checkLog = async (ctx: Restate.ObjectSharedContext) => {
    const v = await ctx.get<number>(VERSION)
    terminally(() => checkVersion(v ?? undefined, `the Restate event log of ${ctx.key}`))
  }
  const privately = { ingressPrivate: true }

  /** Records the first decision and sends it to the waiting workflow's promise, together. */
  function record(ctx: Restate.ObjectContext, decided: EngineDecided, answer: Answer, workflowId: string) {
    ctx.set(DECIDED, decided)
    ctx.clear(OPEN)
    ctx
      .workflowSendClient<typeof workflow>({ name: namespace }, workflowId)
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
      /**
       * One decision per request id: the first is recorded, every later one refused. A refusal
       * is the response (logged at `info`), never a thrown error the SDK would log with a stack.
       */
      decide: async (ctx: Restate.ObjectContext, answer: Answer): Promise<EngineDecided | Refused> => {
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
          logger?.info(`answer to ${ctx.key} refused: ${(error as Error).message}`, {
            requestId: ctx.key,
            code: isToolnexusError(error) ? error.code : undefined,
          })
          return { refusal }
        }
        const target = open?.workflowId ?? decided.runId
        return record(ctx, decided, { ...answer, id: ctx.key }, target)
      },
      /** The engine timer at `expiresAt`: declines the request unless it was decided. */
      expire: sdk.handlers.object.exclusive(privately, async (ctx: Restate.ObjectContext) => {
        const open = await ctx.get<OpenRequest>(OPEN)
        if (open === null || (await ctx.get(DECIDED)) !== null) return
        const decided = { runId: open.runId, request: open.entry.request, decision: EXPIRED }
        record(ctx, decided, { id: ctx.key, ...EXPIRED }, open.workflowId ?? open.runId)
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

  /**
   * A run: its agent, its current turn (each turn a workflow of its own), how that turn stands
   * and the conversation after the last one. Exclusive handlers order starts and new turns.
   */
  const runs = sdk.object({
    name: runsName,
    handlers: {
      /** Starts the run's first turn unless the run exists. */
      start: async (
        ctx: Restate.ObjectContext,
        input: { agent: string; prompt: string },
      ): Promise<{ started: boolean }> => {
        if ((await ctx.get<RunState>(RUN)) !== null) return { started: false }
        ctx.set<RunState>(RUN, { v: STATE_VERSION, agent: input.agent, turn: 1, state: "running" })
        ctx
          .workflowSendClient<typeof workflow>({ name: namespace }, ctx.key)
          .run({ agent: input.agent, prompt: input.prompt })
        return { started: true }
      },
      /**
       * Starts the next turn of a conversation run: refused for an unknown run, a tree, or a
       * run waiting on a request; `busy` (the turn's workflow id) while the current turn runs.
       */
      next: async (
        ctx: Restate.ObjectContext,
        input: { prompt: string },
      ): Promise<{ workflowId: string } | { busy: string } | Refused> => {
        const run = await runOf(ctx)
        if (run === null) return { refusal: { refused: "run", id: ctx.key } }
        if (run.kind === "runtime")
          return {
            refusal: {
              refused: "unsupported",
              operation: "send",
              why: `run ${ctx.key} is a runtime tree, not a conversation`,
            },
          }
        if (run.waitingOn) return { refusal: { refused: "pending", id: ctx.key, request: run.waitingOn } }
        if (run.state === "running") return { busy: turnWorkflowId(ctx.key, run.turn) }
        const turn = run.turn + 1
        ctx.set<RunState>(RUN, { v: STATE_VERSION, agent: run.agent, turn, state: "running", ...kindOf(run) })
        const workflowId = turnWorkflowId(ctx.key, turn)
        ctx
          .workflowSendClient<typeof workflow>({ name: namespace }, workflowId)
          .run({ agent: run.agent, prompt: input.prompt, runId: ctx.key, turn })
        return { workflowId }
      },
      /** A turn's workflow reports (a stale turn's report is ignored). */
      update: sdk.handlers.object.exclusive(privately, async (ctx: Restate.ObjectContext, msg: RunUpdate) => {
        const run = await runOf(ctx)
        if (run === null || run.turn !== msg.turn) return
        const next: RunState = { ...run, v: STATE_VERSION }
        if (msg.kind !== undefined) next.kind = msg.kind
        if (msg.state !== undefined) next.state = msg.state
        if (msg.waitingOn !== undefined) next.waitingOn = msg.waitingOn
        if (msg.state !== undefined) next.waitingOn = null
        ctx.set(RUN, next)
        if (msg.transcript !== undefined) ctx.set(TRANSCRIPT, msg.transcript)
        if (msg.parked) ctx.set(PARKED, msg.parked)
        else if (msg.parked === null || msg.state !== undefined) ctx.clear(PARKED)
      }),
      /** The run's state, or null for an unknown run. */
      current: sdk.handlers.object.shared(
        async (ctx: Restate.ObjectSharedContext): Promise<RunState | null> => ctx.get<RunState>(RUN),
      ),
      /** The conversation after the run's last finished turn; null for an unknown run. */
      transcript: sdk.handlers.object.shared(
        async (ctx: Restate.ObjectSharedContext): Promise<Message[] | null> => {
          if ((await ctx.get(RUN)) === null) return null
          return (await ctx.get<Message[]>(TRANSCRIPT)) ?? []
        },
      ),
      /**
       * The run's conversation as a reader sees it: the waiting turn's (its halted call
       * included) while it waits, else the last finished turn's; null for an unknown run.
       */
      conversation: sdk.handlers.object.shared(
        async (ctx: Restate.ObjectSharedContext): Promise<Message[] | null> => {
          if ((await ctx.get(RUN)) === null) return null
          return (await ctx.get<Message[]>(PARKED)) ?? (await ctx.get<Message[]>(TRANSCRIPT)) ?? []
        },
      ),
    },
  })

  /** A turn's event log, appended by its workers beside the journal and tailed by connections. */
  const events = sdk.object({
    name: eventsName,
    handlers: {
      append: async (ctx: Restate.ObjectContext, batch: EngineEvent[]) => {
        await checkLog(ctx)
        ctx.set(VERSION, STATE_VERSION)
        let n = (await ctx.get<number>(COUNT)) ?? 0
        for (const ev of Array.isArray(batch) ? batch : []) ctx.set(`e:${n++}`, ev)
        ctx.set(COUNT, n)
      },
      /** Events after position `after`, and the position after them. */
      read: sdk.handlers.object.shared(async (ctx: Restate.ObjectSharedContext, msg: { after: number }) => {
        await checkLog(ctx)
        const n = (await ctx.get<number>(COUNT)) ?? 0
        const from = Math.max(0, Math.min(Number(msg?.after) || 0, n))
        const to = Math.min(n, from + READ_LIMIT)
        const out: EngineEvent[] = []
        for (let i = from; i < to; i++) {
          const ev = await ctx.get<EngineEvent>(`e:${i}`)
          if (ev !== null) out.push(ev)
        }
        return { events: out, next: to }
      }),
      /**
       * The turn parks: its events so far are delivered, and a resumed turn's start after them
       * (called once the log is flushed, before the request is registered).
       */
      park: async (ctx: Restate.ObjectContext) => {
        await checkLog(ctx)
        ctx.set(VERSION, STATE_VERSION)
        ctx.set(START, (await ctx.get<number>(COUNT)) ?? 0)
      },
      /** Where the turn's current stretch starts: after its last park (0 before any). */
      start: sdk.handlers.object.shared(
        async (ctx: Restate.ObjectSharedContext): Promise<number> => (await ctx.get<number>(START)) ?? 0,
      ),
      /** The log's end position. */
      end: sdk.handlers.object.shared(
        async (ctx: Restate.ObjectSharedContext): Promise<number> => (await ctx.get<number>(COUNT)) ?? 0,
      ),
    },
  })

  const workflow = sdk.workflow({
    name: namespace,
    handlers: {
      run: async (ctx: Restate.WorkflowContext, input: EngineRunInput): Promise<RunResult | TaskResult> => {
        const runId = input?.runId ?? ctx.key
        const turn = input?.turn ?? 1
        const report = (msg: Omit<RunUpdate, "turn">) =>
          ctx.objectSendClient<typeof runs>({ name: runsName }, runId).update({ ...msg, turn })
        // Awaited where a connection acts on what it reads next: the run's state is the runs
        // object's before the request is listed, and before the turn's result is out.
        const settle = (msg: Omit<RunUpdate, "turn">) =>
          ctx.objectClient<typeof runs>({ name: runsName }, runId).update({ ...msg, turn })
        const agent = byName.get(input?.agent)
        if (!agent) {
          await settle({ state: "failed" })
          logger?.error(`run ${runId} failed: no worker defines agent ${JSON.stringify(input?.agent)}`, {
            runId,
            agent: input?.agent,
            code: "TNX_ENGINE_RUN",
          })
          throw new TerminalError(`no worker defines agent ${JSON.stringify(input?.agent)}`)
        }
        report({ kind: agent.options.client ? "client" : "runtime" })
        const history =
          turn > 1
            ? ((await ctx.objectClient<typeof runs>({ name: runsName }, runId).transcript()) ?? [])
            : undefined
        const log = eventLog(ctx.key)
        let stepError: unknown
        const executor = restateExecutor(
          sdk,
          ctx,
          agent,
          {
            async announce(request, entry, messages) {
              // The waiting turn's conversation rides in this call's journaled parameter: once
              // per park, never per step.
              await settle({ waitingOn: request, ...(messages ? { parked: [...messages] } : {}) })
              const open: OpenRequest = { runId, entry }
              if (ctx.key !== runId) open.workflowId = ctx.key
              ctx.objectSendClient<typeof requests>({ name: requestsName }, request.id).register(open)
              const at = expiryTime(request)
              if (at !== undefined) {
                // An unreadable deadline is 0: the timer fires at once.
                const delay = Math.max(0, at - Date.parse(entry.since))
                ctx
                  .objectSendClient<typeof requests>({ name: requestsName }, request.id)
                  .expire(sdk.rpc.sendOpts({ delay }))
              }
            },
            answered: () => settle({ waitingOn: null }),
            park: async () => {
              await log?.flush()
              await log?.park()
            },
            failed: (error) => {
              stepError = error
            },
          },
          runId,
        )
        try {
          const { result, messages } = await runEngineAgent(
            agent,
            input.prompt,
            executor,
            async () => (await import("@toolnexus/agents")).runEngineTree,
            { ...(history ? { history } : {}), ...(log ? { onEvent: (ev) => log.emit(ev) } : {}) },
          )
          await log?.flush()
          await settle({ state: "done", transcript: messages })
          return result
        } catch (error) {
          await log?.flush()
          // Only a terminal failure ends the turn; any other error is retried by Restate.
          if (error instanceof TerminalError) {
            await settle({ state: "failed" })
            const cause = stepError ?? error
            logger?.error(`run ${runId} failed: ${(error as Error).message}`, {
              runId,
              agent: agent.name,
              code: isToolnexusError(cause) ? cause.code : "TNX_ENGINE_RUN",
            })
          }
          throw error
        }
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

  /**
   * The event log writer of workflow `workflowId`: calls through the ingress, in order. A call,
   * not a one-way send: it returns once the batch is in the object's state, so a connection that
   * sees the run park or end reads every event written before.
   */
  function eventLog(workflowId: string) {
    const { ingress } = opts
    if (ingress === undefined) return undefined
    const base = `${ingress}/${encodeURIComponent(eventsName)}/${encodeURIComponent(workflowId)}`
    const post = async (handler: string, body: unknown) => {
      const response = await fetch(`${base}/${handler}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      })
      if (!response.ok) throw new Error(`HTTP ${response.status}: ${(await response.text()).slice(0, 200)}`)
    }
    const lost = (error: unknown) =>
      logger?.error(`the event log of ${workflowId} lost events: ${(error as Error)?.message}`, {
        workflowId,
      })
    const log = engineEventLog((batch) => post("append", batch), lost)
    return {
      ...log,
      /** Marks the park (after a flush); a failure is reported, never the run's. */
      park: () => post("park", null).catch(lost),
    }
  }

  return { workflow, requests, runs, events }
}

function kindOf(run: RunState): { kind?: "client" | "runtime" } {
  return run.kind === undefined ? {} : { kind: run.kind }
}

/** What the workflow does around a wait and a step. */
interface ExecutorHooks {
  /** Marks the run waiting (with its conversation), registers the request and arms its timer (journaled). */
  announce(request: Request, entry: PendingEntry, messages: readonly Message[] | undefined): Promise<void>
  /** The wait returned: the run runs again. */
  answered(): Promise<void>
  /** Writes the event log out before the run parks, and marks where a resumed turn's events start. */
  park(): Promise<void>
  /** A step's own error, before Restate makes it terminal (its code is logged). */
  failed(error: unknown): void
}

/**
 * A step is `ctx.run` with the engine's retries off (core's retry policy is the one); the wait
 * flushes the event log, registers the request, arms its expiry timer and awaits the
 * workflow's durable promise. Any error but a TerminalError (a step's own failure) is an
 * engine fault.
 */
function restateExecutor(
  sdk: Sdk,
  ctx: Restate.WorkflowContext,
  agent: EngineAgent,
  hooks: ExecutorHooks,
  runId: string,
): EngineExecutor {
  const base = {
    id: ctx.key,
    step: <T>(name: string, fn: () => Promise<T>) =>
      ctx.run(
        name,
        async () => {
          try {
            return await fn()
          } catch (error) {
            hooks.failed(error)
            throw error
          }
        },
        { maxRetryAttempts: 1 },
      ) as Promise<T>,
    async wait(request: Request, context?: WaitContext) {
      const since = new Date(await ctx.date.now()).toISOString()
      // A connection tailing the log stops once the run parks: it has every event by then. A
      // resumed turn's events start after them (on a replay, after its repeated events too).
      await hooks.park()
      await hooks.announce(request, engineEntryOf(runId, request, since), context?.messages)
      const answer = await ctx.promise<Answer>(request.id).get()
      await hooks.answered()
      return answer
    },
  }
  return engineExecutor(agent, base, (error) => !(error instanceof sdk.TerminalError))
}
