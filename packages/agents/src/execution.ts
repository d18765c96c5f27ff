import {
  type Answer,
  type Client,
  type DurableExecutor,
  type Request,
  ConfigError,
  ConversationPendingError,
  type ConversationStore,
  type StreamListener,
  type MetricEvent,
  type RunResult,
  type Toolkit,
  createClient,
  createToolkit,
  handleExecutor,
} from "@toolnexus/core"
import { agentToolOf, childAgentTool } from "./agent-tool.js"
import { turnLimit, wallBounded } from "./budget.js"
import { escalationFor } from "./escalation.js"
import type { Semaphore } from "./gates.js"
import { continueHalted, haltedOn } from "./handle-conversation.js"
import type { ActiveTurn, HandleRecord } from "./handle-record.js"
import { applyTransition } from "./handle-state.js"
import { hooksWithHandle } from "./handle-hooks.js"
import { renderInbox } from "./inbox.js"
import type { EventHub } from "./runtime-events.js"
import type { Trace } from "./trace.js"
import { type TaskHost, createTaskTool } from "./task-tool.js"
import type { Clock, InboxItem, RuntimeOptions, TaskResult } from "./types.js"

const PLACEHOLDER_URL = "http://llm.invalid/v1"

/** @internal What running handles' turns needs from the runtime. */
export interface ExecutionContext {
  readonly options: RuntimeOptions
  readonly store: ConversationStore
  readonly clock: Clock
  readonly trace: Trace
  readonly events: EventHub
  readonly turnGate: Semaphore | undefined
  readonly taskHost: TaskHost
  /** The store id of a handle's conversation. */
  conversationId(r: HandleRecord): string
  /** A turn ended suspended: the handle is now parked on `r.pending`. */
  parked(r: HandleRecord): void
  /** A wake that arrived while the handle was busy; it is idle now. */
  wakeAgain(r: HandleRecord): void
}

/**
 * @internal The work of one turn, given the handle's client, tools, abort signal and, while
 * someone listens to the runtime's events, the listener tagging them with the handle.
 */
export type TurnWork = (
  client: Client,
  toolkit: Toolkit,
  signal: AbortSignal,
  onEvent: StreamListener | undefined,
) => Promise<RunResult>

/**
 * @internal Runs handles' turns: admission under the parent's `maxConcurrent`, the turn
 * itself (client, tools, budgets, usage), and settling it into a result and a state.
 */
export class Execution {
  readonly #ctx: ExecutionContext
  /** Under an executor: how many runs each handle has started (its steps' name prefix). */
  readonly #runs = new Map<string, number>()
  /** Under an executor: each running handle's scoped executor and its turn checks so far. */
  readonly #journals = new Map<string, { executor: DurableExecutor; checks: number }>()

  constructor(ctx: ExecutionContext) {
    this.#ctx = ctx
  }

  /** Starts a turn on an idle handle, or queues the wake FIFO while the parent's slots are taken. */
  admit(r: HandleRecord, prompt: string | undefined): void {
    const parent = r.parent as HandleRecord
    const cap = parent.budget.maxConcurrent
    if (cap !== undefined && parent.activeChildren() >= cap) {
      r.queued = true
      parent.enqueue({ record: r, prompt })
      this.#ctx.trace.note(`${r.id}: queued (maxConcurrent ${cap} of ${parent.id})`)
      return
    }
    this.#start(r, prompt)
  }

  /** Takes a handle's wake out of its parent's queue. */
  dequeue(r: HandleRecord): void {
    r.queued = false
    r.parent?.unqueue(r)
  }

  /**
   * Runs one unit of work as the handle's turn and settles it: a result for the waiters, the
   * next state, the parent's freed slot. Never rejects. The handle must be `running`.
   */
  run(r: HandleRecord, work: TurnWork, drained: readonly InboxItem[] = []): Promise<void> {
    const turn: ActiveTurn = { controller: new AbortController(), drained, settled: Promise.resolve() }
    r.turn = turn
    turn.settled = this.#settle(r, turn, work)
    return turn.settled
  }

  #start(r: HandleRecord, prompt: string | undefined): void {
    r.queued = false
    const drained = r.drainInbox()
    const block = renderInbox(drained, (from) => trusted(r, from))
    const input = [block, prompt ?? ""].filter((part) => part !== "").join("\n\n")
    applyTransition(r, "start", this.#ctx.trace, this.#ctx.events)
    const id = this.#ctx.conversationId(r)
    void this.run(
      r,
      async (client, toolkit, signal, onEvent) => {
        if (r.cancelled) {
          // A request cancelled while parked is declined first, so the transcript stays balanced.
          const child = r.children.find((c) => c.lastResult?.pending?.id === r.cancelled?.id)
          const cancelled = haltedOn(r.cancelled, child)
          r.cancelled = undefined
          const answer = { id: cancelled.id, ok: false, reason: "cancelled" }
          const halted = { toolkit, pending: cancelled, answer, signal, onEvent }
          const run = await continueHalted(id, client, halted)
          if (run.status !== "done" || input === "") return run
        }
        if (this.#ctx.options.executor)
          return this.#journaled(r, id, client, input, { toolkit, signal, onEvent })
        return client.ask(input, { toolkit, id, signal, onEvent })
      },
      drained,
    )
  }

  async #settle(r: HandleRecord, turn: ActiveTurn, work: TurnWork): Promise<void> {
    const { signal } = turn.controller
    let result: TaskResult
    try {
      // Built per run, not cached: a parked handle then holds no client or tools in memory.
      const toolkit = await this.#toolkitFor(r)
      const run = await work(this.#clientFor(r), toolkit, signal, this.#ctx.events.forHandle(r.id))
      r.pending = run.status === "pending" ? run.pending : undefined
      if (r.pending && run.limit === undefined) result = r.pendingResult(run.text, r.pending)
      else {
        result = r.result(run.status, run.text, false)
        if (run.limit !== undefined) result.limit = run.limit
        if (r.pending) result.pending = r.pending
      }
    } catch (error) {
      if (signal.aborted) {
        r.putBack(turn.drained)
        result = r.result("interrupted", "", true)
      } else result = r.result("error", errorText(r, this.#ctx.conversationId(r), error), true)
      r.pending = undefined
    }
    r.turn = undefined
    r.lastResult = result
    if (r.state !== "closed")
      applyTransition(r, result.status === "pending" ? "park" : "settle", this.#ctx.trace, this.#ctx.events)
    if (r.state === "suspended") this.#ctx.parked(r)
    r.notify(result)
    this.#handOver(r.parent)
    if (r.rewake && r.state === "idle") {
      r.rewake = false
      this.#ctx.wakeAgain(r)
    }
  }

  /** A finished child frees its parent's slot for the next queued wake. */
  #handOver(parent: HandleRecord | undefined): void {
    if (!parent) return
    const cap = parent.budget.maxConcurrent
    while (parent.queue.length > 0 && (cap === undefined || parent.activeChildren() < cap)) {
      const next = parent.nextQueued() as { record: HandleRecord; prompt: string | undefined }
      if (next.record.state === "idle") this.#start(next.record, next.prompt)
      else next.record.queued = false
    }
  }

  /**
   * A handle's run as steps of the runtime's executor. Replay rebuilds the tree: handle ids
   * are deterministic and each run of a handle has its own step prefix.
   */
  async #journaled(
    r: HandleRecord,
    id: string,
    client: Client,
    input: string,
    opts: { toolkit: Toolkit; signal: AbortSignal; onEvent: StreamListener | undefined },
  ): Promise<RunResult> {
    const { store, trace, events } = this.#ctx
    const root = this.#ctx.options.executor as DurableExecutor
    const run = (this.#runs.get(r.id) ?? 0) + 1
    this.#runs.set(r.id, run)
    const wait = escalationFor(r, trace, events, (req) => root.wait(req)) as (req: Request) => Promise<Answer>
    const executor = handleExecutor(root, r.id, { run, wait })
    // The wall-time origin is journaled: a replay measures from the first worker's clock.
    if (run === 1 && wallBounded(r.chain()))
      r.spawnedAt = await executor.step("spawned", async () => this.#ctx.clock.now())
    const history = (await store.get(id)) ?? []
    this.#journals.set(r.id, { executor, checks: 0 })
    try {
      const result = await client.run(input, { ...opts, history, executor })
      await store.save(id, result.messages, { pending: null })
      return result
    } finally {
      this.#journals.delete(r.id)
    }
  }

  /**
   * The limit that stops the handle's next turn. Under an executor, with a wall-time budget on
   * the chain, it is decided in a step `wall:<n>`: the clock is read once, and a replay
   * decides each journaled turn as the first worker did.
   */
  #turnLimit(r: HandleRecord): string | undefined | Promise<string | undefined> {
    const { clock } = this.#ctx
    const journal = this.#journals.get(r.id)
    if (!journal || !wallBounded(r.chain())) return turnLimit(r, r.chain(), clock.now())
    journal.checks++
    return journal.executor
      .step(`wall:${journal.checks}`, async () => turnLimit(r, r.chain(), clock.now()) ?? null)
      .then((limit) => limit ?? undefined)
  }

  #clientFor(r: HandleRecord): Client {
    const { options, store, turnGate, trace, events } = this.#ctx
    const { llm, fetch } = options
    const model = r.def.model ?? llm?.model
    if (!model) throw new ConfigError(`agent ${r.def.name} has no model: set def.model or llm.model`)
    const userMetric = r.def.onMetric ?? options.onMetric
    const hooks = r.def.hooks ?? options.hooks
    return createClient({
      baseUrl: llm?.baseUrl ?? PLACEHOLDER_URL,
      style: llm?.style ?? "openai",
      apiKey: llm?.apiKey,
      fetch,
      model,
      systemPrompt: r.def.soul,
      // Budgets bound turns; the client's own ceiling only guards against runaway loops.
      maxTurns: 1_000,
      store,
      hooks: hooks && hooksWithHandle(hooks, r.id),
      compaction: r.def.compaction ?? options.compaction,
      onMetric: (ev) => {
        account(r, ev)
        userMetric?.({ ...ev, handle: r.id })
      },
      waitFor: escalationFor(r, trace, events),
      beforeTurn: () => this.#turnLimit(r),
      llmGate: turnGate ? (call) => turnGate.run(call) : undefined,
      // The handle's runs are `invoke_agent <def>` spans: a child's under its parent's task call,
      // a top-level handle's under the runtime's parent context (e.g. an `asTool` call).
      telemetry: {
        ...options.telemetry,
        agentName: r.def.name,
        agentId: r.id,
        parentContext: r.traceParent ?? options.telemetry?.parentContext,
      },
    })
  }

  #toolkitFor(r: HandleRecord): Promise<Toolkit> {
    const host = this.#ctx.taskHost
    // An agent's `asTool()` runs as a child handle of the caller, on the same path as `task`.
    const tools = (r.def.tools ?? []).map((t) => {
      const spec = agentToolOf(t)
      return spec ? childAgentTool(host, r, t, spec) : t
    })
    if (r.def.team?.length) tools.push(createTaskTool(this.#ctx.taskHost, r, this.#ctx.options.registry))
    return createToolkit({ extraTools: tools })
  }
}

/**
 * A turn counts as the handle's own; its turns, tokens and tool calls also roll up to every
 * ancestor, so their totals and shared pools see the whole subtree's spend.
 */
function account(r: HandleRecord, ev: MetricEvent): void {
  if (ev.event === "llm" && ev.status === "ok") {
    const tokens = ev.promptTokens + ev.completionTokens
    r.spend.turns++
    for (const x of r.chain()) {
      x.spend.totalTurns++
      x.spend.tokens += tokens
    }
  } else if (ev.event === "tool" && ev.outcome !== "pending") {
    for (const x of r.chain()) x.spend.toolCalls++
  }
}

/**
 * A failed run's text. A handle's conversation that already waits on a request the handle
 * does not hold belongs to someone else sharing the store: core's advice (answer it with
 * askWithAnswer or continueRun) would be refused for a runtime's request, so name what works.
 */
function errorText(r: HandleRecord, conversationId: string, error: unknown): string {
  if (ConversationPendingError.isInstance(error)) {
    const { request } = error
    return (
      `${r.id}: its conversation ${JSON.stringify(conversationId)} in the store already waits on request ` +
      `${request.id} (${request.kind}: ${JSON.stringify(request.prompt)}), which this runtime does not hold: ` +
      "another runtime or conversation shares the id. Give each runtime its own namespace (or none, for a " +
      "unique one); answer that request with deliverAnswer (a saved runtime's: resumeRuntime)"
    )
  }
  return error instanceof Error ? error.message : String(error)
}

/** The host and the handle's own ancestors are trusted senders; anyone else is not. */
function trusted(r: HandleRecord, from: string | undefined): boolean {
  if (from === undefined || from === "host") return true
  for (const x of r.chain()) if (x.id === from) return true
  return false
}
