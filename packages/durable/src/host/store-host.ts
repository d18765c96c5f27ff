import type { EngineAgent, RuntimeEvent, TaskResult } from "@toolnexus/agents"
import {
  AbortError,
  type Answer,
  type AnswerDecision,
  type ApprovalGrant,
  type CommittedSnapshot,
  type DeliveryRecord,
  type GrantFilter,
  ConfigError,
  EngineRunError,
  type HostDelivered,
  type HostRelayOptions,
  type HostStartOptions,
  HostUnsupportedError,
  type Logger,
  type PendingEntry,
  type Prompt,
  type RunHost,
  type RunResult,
  type StreamEvent,
  type Toolkit,
  assertAnswer,
  isToolnexusError,
  runIdOfEntry,
} from "@toolnexus/core"
import { RunAbort, decisionOf, markResultAtPark, resultWait, untilResultWait } from "@toolnexus/core/engine"
import type { DurableStore, FailedEntry } from "../durable-store.js"
import {
  type DeliverOptions,
  type DeliverResult,
  deliverAnswer,
  deliverAnswerTo,
  retryFailed,
  sweepExpiredClaims,
  sweepExpiredRequests,
} from "../resume/deliver-answer.js"
import { type NotificationOutboxOptions, createNotificationOutbox } from "./delivery.js"
import { listGrants, revokeGrant } from "./grants.js"
import { runToolkit } from "./relay-toolkit.js"
import {
  decisionWaitingError,
  notFailedError,
  nothingToRetryError,
  settledRequestError,
} from "../store-engine/claim-refusals.js"
import { checkKey, resolveKind, resolveLimit } from "../store-engine/option-checks.js"
import { pageOf } from "../store-engine/request-index.js"
import {
  type HostedRunResult,
  type StartHostedRunOptions,
  stampExpiry,
  startHostedRun,
} from "./hosted-run.js"
import {
  type RunRecord,
  type RunRelay,
  createRunRecord,
  readRunRecord,
  runRecordSnapshot,
  runRelayOf,
  withRelay,
  writeRunRecord,
} from "./run-record.js"

/** An agent a store host serves: `hostAgent(…)` with the agents runtime's options (less the store's), as every host's. */
export type StoreHostAgent = EngineAgent

/** Options of {@link createStoreHost}. */
export interface StoreHostOptions extends Omit<NotificationOutboxOptions, "logger"> {
  /** Where runs keep their conversations, snapshots, requests and decisions (any durable store). */
  store: DurableStore
  /** The agents this host runs; a client agent's `client` must use `store`. */
  agents: StoreHostAgent[]
  /** How long a resume's claim holds before another delivery may take it over; default 30 s. */
  leaseMs?: number
  /** Claims (attempts) an answer gets before its request is `failed` and only `retry` moves it on; default 3. */
  maxAttempts?: number
  /**
   * Every so often, complete the resumes whose worker died (expired claims) and decline expired
   * requests; default 60 000 ms, `false` for never (call sweeps yourself).
   */
  sweepEveryMs?: number | false
  /** Failed runs (with their code) at `error`; refusals and sweeps at `info`. */
  logger?: Logger
  /**
   * Runs the store holds but no host recorded (a conversation of `client.ask`, a tree of
   * `saveRuntime`, a round-3 door's run such as serveA2A's `a2a/<taskId>`): the name of the agent
   * that takes run `runId` over, else undefined. Its record is written on first use (an answer or
   * a cancel). Without it, an answer to such a run goes to this host's only agent of its kind
   * (client or runtime), and is refused when there are several.
   */
  adopt?: (runId: string) => string | undefined
}

type HostResult = RunResult | TaskResult
type HostEvent = StreamEvent | RuntimeEvent

/** What {@link StoreHost.sweep} did. */
export interface StoreHostSweep {
  /** The runs (ids) whose recorded decisions were applied. */
  completed: string[]
  /** The requests whose delivery failed again; each keeps its decision for the next sweep. */
  failed: {
    /** The request whose delivery failed. */
    requestId: string
    /** What the delivery threw. */
    error: unknown
  }[]
}

/**
 * The {@link RunHost} `createStoreHost` returns, plus what only a store keeps: requests whose
 * resumes failed for good, and the recorded decisions still to apply (a worker died
 * mid-resume, or a host that does not serve the run's agent recorded them).
 */
export interface StoreHost extends RunHost<HostResult, HostEvent> {
  /** Requests whose resumes failed `maxAttempts` times, with their last error; only `retry` moves them on. */
  listFailed(opts?: { limit?: number }): Promise<FailedEntry[]>
  /**
   * Applies the decision recorded on request `requestId` again, now: a request whose claim's
   * lease ran out (its worker died, or the decision was handed off) or a `failed` one (its
   * attempts start again). Served here, the run resumes in this process and this resolves when
   * it has run to its end or its next request; a run of an agent this host does not serve is
   * made due for the next sweep of a host that does.
   *
   * @throws UnknownRequestError when nothing waits on it; AnswerConflictError when it was applied
   *   (with the decision), is being applied now (a live lease), or is open (nothing recorded yet).
   */
  retry(requestId: string, opts?: HostStartOptions<HostEvent>): Promise<HostDelivered>
  /** The approval grants in force, oldest first, matching every field of `filter`. */
  listGrants(filter?: GrantFilter): Promise<ApprovalGrant[]>
  /** Revokes grant `grantId` (later calls it covered ask again); false when none is in force. */
  revokeGrant(grantId: string): Promise<boolean>
  /** Where request `requestId`'s notifications stand; undefined when none was attempted. */
  getDelivery(requestId: string): Promise<DeliveryRecord | undefined>
  /**
   * One sweep now (what `sweepEveryMs` runs): completes resumes whose worker died, declines
   * expired requests, raises due `expiring` warnings and sends due notifications.
   */
  sweep(): Promise<StoreHostSweep>
}

/** A run executing in this process: its abort, its events so far, its listeners. */
interface Execution {
  /** Stops the run (`cancel`, `close`, the caller's signal); no `AbortSignal` unless the run reads one. */
  abort: RunAbort
  events: HostEvent[]
  shifted: number
  /** `events()` iterators waiting for the next event; made by the first one. */
  listeners: Set<() => void> | undefined
  ended: boolean
  done: Promise<void>
  /** Why a `start`'s execution failed: `result` rejects with it as the cause. */
  startFailure?: unknown
  /**
   * The result `settled` saved on the record, once it is saved: `result` calls waiting on this
   * execution get it without reading the record and the transcript back.
   */
  result?: HostResult
  /** Set by `cancel` before it aborts the execution: the run's record is then `cancel`'s alone. */
  cancelled?: boolean
}

/** Events kept per execution for `events({ fromStart })`; older ones are dropped first. */
const REPLAY_LIMIT = 10_000
const HOST = "createStoreHost"
/** Refusals of the caller's input: reported to the caller, never a failed run. */
const REFUSALS = new Set([
  "TNX_ANSWER_INVALID",
  "TNX_ANSWER_CONFLICT",
  "TNX_ANSWER_EXPIRED",
  "TNX_UNKNOWN_REQUEST",
  "TNX_CONVERSATION_PENDING",
  "TNX_RUNTIME_HELD",
  "TNX_CONFIG",
])

/** A call without `relay`: the agent's own toolkit, nothing to release (one object, not one a turn). */
const NO_RELAY: { toolkit?: Toolkit; release(): Promise<void> } = { release: async () => {} }

/**
 * A {@link RunHost} whose runs execute in this process and keep their state in `store` (memory,
 * SQLite, PostgreSQL or Redis): a client agent's run is conversation `runId`, a runtime agent's
 * a tree saved under key `runId` while it is parked. Answers go through `deliverAnswer` (one
 * decision per request id, exactly once across processes sharing the store); a new host over
 * the same store answers what another one parked. A run id is recorded in the store (snapshot
 * `host-run/<runId>`), so a second `start` with it starts nothing. A relay run's record keeps
 * what its resumes need of the last call's `relay` (tool declarations, `output`, `stream: false`):
 * a sweep, a `retry` or an answer without `relay` resumes it with them, in any process. A
 * `deliverAnswer` with `relay` replaces them with its own; a `send` always does (a turn without
 * `relay` is the agent's alone, and so are its resumes).
 *
 * @throws ConfigError for duplicate agent names, or a client agent whose client uses another store.
 * @example
 * const host = createStoreHost({ store, agents: [hostAgent({ name: "refunds", client, toolkit })] })
 * await host.start("refunds", "order-42", "refund order 42")
 * const result = await host.result("order-42")
 */
export function createStoreHost(opts: StoreHostOptions): StoreHost {
  const { store, leaseMs, logger } = opts
  if (!store || typeof store.claimAnswer !== "function")
    throw new ConfigError(`${HOST}: \`store\` must be a durable store (createMemoryStore, openStore)`)
  const agents = new Map<string, StoreHostAgent>()
  for (const agent of opts.agents ?? []) {
    if (agents.has(agent.name)) throw new ConfigError(`${HOST}: two agents are named ${agent.name}`)
    const { client } = agent.options
    if (client && client.conversationStore() !== store)
      throw new ConfigError(`${HOST}: agent ${agent.name}'s client must use the host's store`)
    agents.set(agent.name, agent)
  }
  // The notify outbox (§19): `notify`, `warnBeforeMs`, `onEvent`, `clock` are its options.
  const outbox = createNotificationOutbox(store, opts)
  const executions = new Map<string, Execution>()
  const starting = new Set<string>()
  let closed = false

  const agentOf = (record: RunRecord, runId: string): StoreHostAgent => {
    const agent = agents.get(record.agent)
    if (!agent)
      throw new ConfigError(
        `${HOST}: run ${runId} is of agent ${record.agent}, which this host does not serve`,
      )
    return agent
  }
  /** The one agent of this host that can take over `entry`'s holder (of its kind), if exactly one. */
  const soleAgentFor = (entry: Pick<PendingEntry, "runtimeKey">): string | undefined => {
    const runtime = entry.runtimeKey !== undefined
    const fits = [...agents.values()].filter((a) => (runtime ? a.options.runtime : a.options.client))
    return fits.length === 1 ? fits[0]?.name : undefined
  }
  /**
   * The run's record. A run no host recorded (a conversation of `client.ask`, a tree of
   * `saveRuntime`, a round-3 door's run) is adopted by the agent `adopt` names, or without
   * `adopt`, by this host's only agent of the request's kind; its record is then written.
   */
  const recordFor = async (
    runId: string,
    entry?: Pick<PendingEntry, "runtimeKey">,
  ): Promise<RunRecord | undefined> => {
    const record = await readRunRecord(store, runId)
    if (record) return record
    const agent = opts.adopt ? opts.adopt(runId) : entry && soleAgentFor(entry)
    if (agent === undefined || !agents.has(agent)) return undefined
    // Only a run the store holds (its conversation, or a parked tree's snapshot) is adopted.
    if (!entry && (await store.get(runId)) === undefined && (await store.getSnapshot(runId)) === undefined)
      return undefined
    // One create wins across processes; the loser reads the winner's.
    await createRunRecord(store, runId, { v: 1, agent, state: "pending" })
    return readRunRecord(store, runId)
  }
  const recordOf = async (runId: string): Promise<RunRecord> => {
    const record = await recordFor(runId)
    if (!record) throw new EngineRunError(runId, "is not known to this host's store (never started)")
    return record
  }

  /** The options of a delivery to the run holding `entry`. */
  const route = async (entry: PendingEntry): Promise<DeliverOptions> => {
    const runId = runIdOfEntry(entry)
    const record = await recordFor(runId, entry)
    if (!record)
      throw new ConfigError(
        `${HOST}: request ${entry.request.id} is held by ${runId}, which this host did not start`,
      )
    return holderOptions(record, runId)
  }
  /** The options of a delivery to run `runId` (of `record`): its agent's client and toolkit, or runtime. */
  const holderOptions = (record: RunRecord, runId: string): DeliverOptions => {
    const { client, toolkit, runtime } = agentOf(record, runId).options
    if (client) return { client, toolkit }
    const { root: _root, ...options } = runtime as NonNullable<typeof runtime>
    return { runtime: { ...options, store } }
  }
  /**
   * {@link route} for a delivery whose holder's record was just read: the entry of run `runId`
   * routes by that record (an agent's name never changes), others as `route` does.
   */
  const routeKnowing =
    (runId: string, record: RunRecord): NonNullable<DeliverOptions["route"]> =>
    async (entry) =>
      runIdOfEntry(entry) === runId ? holderOptions(record, runId) : route(entry)
  /**
   * `route` for a delivery no caller is present for (a sweep, a `retry` of a failed request):
   * a relay run resumes with the caller's tools and output its record keeps. The toolkits it
   * makes are added to `made`, for the caller to release once the deliveries are over.
   */
  const keptRelayRoute =
    (made: (() => Promise<void>)[]): NonNullable<DeliverOptions["route"]> =>
    async (entry) => {
      const runId = runIdOfEntry(entry)
      const record = await recordFor(runId, entry)
      if (!record)
        throw new ConfigError(
          `${HOST}: request ${entry.request.id} is held by ${runId}, which this host did not start`,
        )
      const holder = holderOptions(record, runId)
      const relay = record.relay
      if (relay === undefined || !holder.client) return holder
      const own = await runToolkit(holder.toolkit, relay)
      made.push(own.release)
      return {
        ...holder,
        toolkit: own.toolkit,
        ...(relay.output !== undefined ? { output: relay.output } : {}),
      }
    }
  /** Releases the toolkits a {@link keptRelayRoute} made (closing one never fails the delivery). */
  const releaseAll = async (made: (() => Promise<void>)[]): Promise<void> => {
    await Promise.all(made.splice(0).map((release) => release().catch(() => undefined)))
  }
  /**
   * The open requests run `runId` (whose record the caller has read: `record`) waits on. A
   * conversation run holds at most one, read from its own row (two point reads, whatever else
   * the store holds); a tree's, or a run no host recorded, are picked from the whole listing.
   */
  const requestsOfRun = async (runId: string, record: RunRecord | undefined): Promise<PendingEntry[]> => {
    if (record && agents.get(record.agent)?.options.client) {
      const request = await store.getPending(runId)
      const entry = request && (await store.findRequest(request.id))
      return entry && runIdOfEntry(entry) === runId ? [entry] : []
    }
    return (await store.listPending()).filter((entry) => runIdOfEntry(entry) === runId)
  }
  // The host's own delivery options, built once; each delivery adds its own over them.
  const hostDelivery: DeliverOptions = { route }
  if (leaseMs !== undefined) hostDelivery.leaseMs = leaseMs
  if (opts.maxAttempts !== undefined) hostDelivery.maxAttempts = opts.maxAttempts
  // Object.assign, not `{ ...hostDelivery, ...extra }`: a second spread over keys the first one
  // set redefines them through the runtime (~7 k instructions against ~1 k, per delivery).
  const deliverOptions = (extra: DeliverOptions = {}): DeliverOptions =>
    Object.assign({}, hostDelivery, extra)
  /**
   * A delivery's options with a call's `relay` honoured: the holder's toolkit plus the
   * caller's tools (created before anything is claimed, so a bad tool is refused first), and
   * its `output`. `release` closes the toolkit once the delivery is over.
   */
  const relayDelivery = async (
    relay: HostRelayOptions | RunRelay | undefined,
    held: PendingEntry,
    heldRoute: NonNullable<DeliverOptions["route"]>,
  ): Promise<{ route: DeliverOptions["route"]; release: () => Promise<void> }> => {
    if (relay === undefined) return { route: heldRoute, release: NO_RELAY.release }
    if ("history" in relay && relay.history !== undefined)
      throw new ConfigError(`${HOST}: relay.history is for start only (a run's transcript is its own)`)
    const holder = await heldRoute(held)
    if (!holder.client)
      throw new HostUnsupportedError(HOST, "deliverAnswer with relay", "the run is a runtime tree")
    const own = await runToolkit(holder.toolkit, relay)
    const output = relay.output !== undefined ? { output: relay.output } : {}
    return {
      route: async (entry) => ({ ...(await heldRoute(entry)), toolkit: own.toolkit, ...output }),
      release: own.release,
    }
  }

  /**
   * The run's state after a start, turn or resume settled, saved on its record (unless the
   * run's final save `written` it already: see {@link execute}'s `commit`); `notify` once.
   * Returns what is left to wait for: undefined when the record was written and nothing is
   * notified (a chat turn: no promise and no await for it).
   */
  function settled(
    runId: string,
    record: RunRecord,
    outcome: HostedRunResult,
    written?: RunRecord,
  ): Promise<void> | undefined {
    const result = outcome.result
    const pending = "pending" in result ? result.pending : undefined
    const notify = pending !== undefined && opts.notify !== undefined
    if (written !== undefined && !notify) {
      loggedIfFailed(runId, record, written, result)
      return undefined
    }
    return (async () => {
      const next = written ?? settledRecord(record, outcome)
      if (written === undefined) await writeRunRecord(store, runId, next)
      loggedIfFailed(runId, record, next, result)
      if (pending && notify) {
        // The first attempt right away; a failed one (or this process dying first) is the sweeps'.
        try {
          await outbox.parked(pending.id)
        } catch (error) {
          logger?.error(`notify of request ${pending.id}: ${(error as Error)?.message}`, { runId })
        }
      }
    })()
  }
  /** Logs run `runId` at `error` when its settled record `next` is `failed` (a runtime tree's error). */
  function loggedIfFailed(runId: string, record: RunRecord, next: RunRecord, result: HostResult): void {
    if (next.state === "failed")
      logger?.error(`run ${runId} failed`, {
        runId,
        agent: record.agent,
        code: "TNX_RUNTIME",
        error: result.text,
      })
  }

  /**
   * Runs `work` as run `runId`'s execution in this process (after any earlier one of the same
   * run): its events fan out to `events()`, its end is saved on the record. A start's execution
   * (`failed` given) never rejects: its error is kept for `result` and handed to `failed`, which
   * records it before `done` resolves (so a `cancel` waiting on `done` writes after it).
   *
   * `work` gets `commit`, for a conversation's final save to write the settled record in the
   * same store call (`commitSnapshot`): the record and the transcript are then stored together
   * or not at all, and the turn makes no write of its own for the record. A result `commit`
   * was not asked for (a runtime tree, a client that ignored it, a save after it) gets its
   * record written after the run, as before.
   */
  function execute(
    runId: string,
    record: RunRecord,
    work: (
      abort: RunAbort,
      emit: (ev: HostEvent) => void,
      commit: (result: RunResult) => CommittedSnapshot | undefined,
    ) => Promise<HostedRunResult | undefined>,
    onEvent?: (ev: HostEvent) => void,
    failed?: (error: unknown, exec: Execution, runId: string, record: RunRecord) => Promise<void>,
    signal?: AbortSignal,
  ): Promise<HostedRunResult | undefined> {
    const before = executions.get(runId)
    let finish!: () => void
    const exec: Execution = {
      abort: new RunAbort(),
      events: [],
      shifted: 0,
      listeners: undefined,
      ended: false,
      // Resolved by the run itself once it is over and cleaned up: one promise, no chain of them.
      done: new Promise<void>((resolve) => {
        finish = resolve
      }),
    }
    // The caller's signal (`HostStartOptions.signal`) stops this execution only.
    let byCaller = false
    // Made only for a caller's signal: a chat turn's execution has none.
    const stop =
      signal === undefined
        ? undefined
        : () => {
            byCaller = true
            exec.abort.abort(signal.reason)
          }
    if (stop !== undefined) {
      if (signal?.aborted) stop()
      else signal?.addEventListener("abort", stop, { once: true })
    }
    const emit = (ev: HostEvent) => {
      const events = exec.events
      events.push(ev)
      if (events.length > REPLAY_LIMIT) {
        events.shift()
        exec.shifted++
      }
      if (exec.listeners !== undefined) for (const wake of exec.listeners) wake()
      if (onEvent !== undefined)
        try {
          onEvent(ev)
        } catch {
          // Observers cannot change a run.
        }
    }
    // The result the run's final save was given a record for, and that record (see `commit`).
    let committed: { result: RunResult; record: RunRecord } | undefined
    const commit = (result: RunResult): CommittedSnapshot | undefined => {
      // As below: a run stopped (not by its caller) is not settled; its save is a plain one.
      if (exec.abort.aborted && !byCaller) return undefined
      committed = { result, record: settledRecord(record, { kind: "conversation", result }) }
      return runRecordSnapshot(runId, committed.record)
    }
    executions.set(runId, exec)
    return (async () => {
      try {
        if (before) await before.done
        const outcome = await work(exec.abort, emit, commit)
        // A cancelled run's record is `cancel`'s to write (it writes after `done`, so after a
        // record the final save wrote).
        // A run its caller stopped just as it ended is settled all the same: nobody else would.
        if (outcome && (byCaller || !exec.abort.aborted)) {
          // The work resolved after its final save: a record given to that save is stored.
          const written = committed?.result === outcome.result ? committed.record : undefined
          const after = settled(runId, record, outcome, written)
          if (after !== undefined) await after
          exec.result = outcome.result
        }
        return outcome
      } catch (error) {
        try {
          if (exec.abort.aborted) {
            logger?.info(`run ${runId} was stopped`, { runId })
          } else if (isToolnexusError(error) && REFUSALS.has(error.code)) {
            logger?.info(`run ${runId}: refused: ${(error as Error).message}`, { runId, code: error.code })
          } else {
            logger?.error(`run ${runId} failed: ${(error as Error)?.message}`, {
              runId,
              agent: record.agent,
              code: isToolnexusError(error) ? error.code : undefined,
            })
          }
        } catch {
          // A logger that throws changes neither the run nor what its caller is told.
        }
        if (failed === undefined) throw error
        // A start's caller got no error: `result` hands it on (a turn's caller got its own).
        exec.startFailure = error ?? new Error("the run failed")
        await failed(error, exec, runId, record).catch(() => undefined)
        return undefined
      } finally {
        if (stop !== undefined) signal?.removeEventListener("abort", stop)
        exec.ended = true
        if (exec.listeners !== undefined) for (const wake of exec.listeners) wake()
        if (executions.get(runId) === exec) executions.delete(runId)
        finish()
      }
    })()
  }

  async function sweep(): Promise<StoreHostSweep> {
    const report = await sweepResumes()
    await outbox.sweep()
    return report
  }
  async function sweepResumes(): Promise<StoreHostSweep> {
    const report: StoreHostSweep = { completed: [], failed: [] }
    for (const sweeper of [sweepExpiredClaims, sweepExpiredRequests]) {
      const made: (() => Promise<void>)[] = []
      const done = await sweeper(store, deliverOptions({ route: keptRelayRoute(made) })).finally(() =>
        releaseAll(made),
      )
      for (const delivered of done.completed) {
        await afterDelivery(delivered)
        const runId = delivered.kind === "runtime" ? delivered.key : delivered.id
        report.completed.push(runId)
        logger?.info(`sweep: run ${runId} completed`, { runId })
      }
      for (const failure of done.failed) {
        report.failed.push({ requestId: failure.requestId, error: failure.error })
        logger?.error(`sweep: request ${failure.requestId} failed again`, {
          requestId: failure.requestId,
          code: isToolnexusError(failure.error) ? failure.error.code : undefined,
        })
      }
    }
    return report
  }
  async function afterDelivery(delivered: DeliverResult): Promise<void> {
    const runId = delivered.kind === "runtime" ? delivered.key : delivered.id
    const record = await recordFor(runId)
    if (record) await settled(runId, record, delivered as HostedRunResult)
  }
  const every = opts.sweepEveryMs === undefined ? 60_000 : opts.sweepEveryMs
  if (every !== false && !(Number.isInteger(every) && every > 0))
    throw new ConfigError(`${HOST}: sweepEveryMs must be a positive integer or false, got ${every}`)
  // One sweep at a time in this process: a timer tick or a call during one joins it.
  let sweeping: Promise<StoreHostSweep> | undefined
  // A restarted host sends at once what a dead one left unsent (the sweeps retry the rest);
  // a sweep asked for meanwhile runs after it.
  let startup: Promise<void> | undefined
  const sweepOnce = (): Promise<StoreHostSweep> => {
    sweeping ??= (async () => {
      await startup
      return sweep()
    })().finally(() => {
      sweeping = undefined
    })
    return sweeping
  }
  const timer =
    every === false
      ? undefined
      : setInterval(() => {
          sweepOnce().catch((error) => logger?.error(`sweep failed: ${(error as Error)?.message}`, {}))
        }, every)
  timer?.unref?.()
  if (timer && (opts.notify || opts.warnBeforeMs !== undefined)) {
    startup = outbox
      .sweep()
      .catch((error) => logger?.error(`sweep failed: ${(error as Error)?.message}`, {}))
      .finally(() => {
        startup = undefined
      })
  }

  /**
   * Saves a started run's failure on its record (`execute`'s `failed` of a start): one function
   * of the host, not a closure per start.
   */
  async function startFailed(
    error: unknown,
    exec: Execution,
    runId: string,
    record: RunRecord,
  ): Promise<void> {
    // A stopped run's record is `cancel`'s (or stays running for the next host after `close`):
    // a `failed` written here could land after `cancelled` and undo it.
    if (closed || exec.cancelled) return
    if ((await readRunRecord(store, runId).catch(() => undefined))?.state === "cancelled") return
    const message = (error as Error)?.message ?? String(error)
    const code = isToolnexusError(error) ? error.code : undefined
    await writeRunRecord(store, runId, { ...record, state: "failed", error: { message, code } })
  }

  /** Begins recorded run `runId` in this process; a failure is saved on its record. */
  function begin(
    record: RunRecord,
    agent: StoreHostAgent,
    runId: string,
    input: Prompt,
    startOpts: HostStartOptions<HostEvent>,
    own: { toolkit?: Toolkit; release(): Promise<void> },
  ): { runId: string; started: boolean } {
    const relay = startOpts.relay
    const run = execute(
      runId,
      record,
      (abort, emit, commit) => {
        const runOpts = hostedRunOptions(abort, emit, relay, own.toolkit, commit)
        // A runtime tree's root handle is kept on the record; a conversation has none (no
        // closure for it a turn).
        if (!agent.options.client)
          runOpts.onHandle = (handle) => {
            record.handle = handle
          }
        if (relay?.history !== undefined) runOpts.history = relay.history
        return startHostedRun(store, agent.options, runId, input, runOpts)
      },
      startOpts.onEvent,
      startFailed,
      startOpts.signal,
    )
    // A start's execution never rejects (its failure is recorded above).
    if (own !== NO_RELAY) void run.then(own.release).catch(() => undefined)
    return { runId, started: true }
  }

  /**
   * The toolkit a call's `relay` gives a run of `agent`: the agent's plus the caller's tools.
   *
   * @throws HostUnsupportedError for a runtime agent (a tree's toolkits are its defs').
   */
  async function relayToolkitOf(
    agent: StoreHostAgent,
    what: string,
    relay: HostRelayOptions | undefined,
  ): Promise<{ toolkit?: Toolkit; release(): Promise<void> }> {
    if (relay === undefined) return NO_RELAY
    if (!agent.options.client)
      throw new HostUnsupportedError(HOST, `${what} with relay`, `agent ${agent.name} runs a runtime tree`)
    const own = await runToolkit(agent.options.toolkit, relay)
    return { ...(own.toolkit !== undefined ? { toolkit: own.toolkit } : {}), release: own.release }
  }

  const checkOpen = () => {
    if (closed) throw new ConfigError(`${HOST}: the host is closed`)
  }
  /** Logs a refusal at `info` (no stack) and returns it for the caller to throw. */
  function logRefusal(requestId: string, error: unknown): unknown {
    if (isToolnexusError(error) && REFUSALS.has(error.code))
      logger?.info(`answer to ${requestId} refused: ${(error as Error).message}`, {
        requestId,
        code: error.code,
      })
    return error
  }
  /** Runs `work`; a refusal it throws is logged (see `logRefusal`) and thrown on. */
  async function refused<T>(requestId: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work()
    } catch (error) {
      throw logRefusal(requestId, error)
    }
  }

  /** `retry` of a failed request: reopened with its decision and delivered like an answer. */
  async function retryFailedRequest(
    failed: FailedEntry,
    retryOpts: HostStartOptions<HostEvent>,
  ): Promise<HostDelivered> {
    const id = failed.request.id
    const runId = runIdOfEntry(failed)
    const record = await recordFor(runId, failed)
    if (!record || !agents.has(record.agent)) {
      const answer = await store.reopenFailed(id)
      if (!answer) throw logRefusal(id, await notFailedError(store, id))
      const claim = await store.claimAnswer(failed.conversationId, answer, claimOptionsOf(failed, leaseMs))
      await store.releaseClaim(failed.conversationId, claim.token)
      return { runId, request: failed.request, decision: decisionOf(answer) }
    }
    const made: (() => Promise<void>)[] = []
    const stream = record.relay?.stream !== false
    try {
      await execute(
        runId,
        record,
        async (abort, emit, commit) =>
          (await retryFailed(
            store,
            id,
            deliverOptions({
              signal: abort.signal,
              route: keptRelayRoute(made),
              commitSnapshot: commit,
              ...(stream ? { onEvent: emit } : {}),
            }),
          )) as HostedRunResult,
        retryOpts.onEvent,
      )
    } finally {
      await releaseAll(made)
    }
    const decision = (await store.getDecision(id)) ?? { ok: false, reason: "unknown" }
    return { runId, request: failed.request, decision }
  }

  // `result` settles at a park (the record is `pending`): doors need no watch of the requests.
  return markResultAtPark<StoreHost>({
    async start(agentName, runId, input, startOpts = {}) {
      checkOpen()
      checkStoreRunId(runId)
      const agent = agents.get(agentName)
      if (!agent) throw new ConfigError(`${HOST}: no agent named ${JSON.stringify(agentName)}`)
      if (agent.options.runtime && typeof input !== "string")
        throw new ConfigError(`${HOST}: agent ${agentName} runs a runtime tree; its input must be text`)
      // In this process the sets decide at once; across processes the stored record does.
      if (starting.has(runId) || executions.has(runId)) return { runId, started: false }
      starting.add(runId)
      try {
        // The store decides across processes: one create of the record wins.
        const record: RunRecord = { v: 1, agent: agentName, state: "running" }
        if (startOpts.principal !== undefined) {
          if (typeof startOpts.principal !== "string" || startOpts.principal === "")
            throw new ConfigError(`${HOST}: principal must be a non-empty string`)
          record.principal = startOpts.principal
        }
        // The caller's tools are checked before the run is recorded: a bad one starts nothing.
        const own =
          startOpts.relay === undefined ? NO_RELAY : await relayToolkitOf(agent, "start", startOpts.relay)
        // What a resume in any process needs of them is kept with the run (see RunRecord.relay).
        const relay = runRelayOf(startOpts.relay)
        if (relay !== undefined) record.relay = relay
        if (!(await createRunRecord(store, runId, record))) {
          await own.release()
          return { runId, started: false }
        }
        return begin(record, agent, runId, input, startOpts, own)
      } finally {
        starting.delete(runId)
      }
    },
    async send(runId, input, sendOpts = {}) {
      checkOpen()
      checkStoreRunId(runId)
      if (sendOpts.relay?.history !== undefined)
        throw new ConfigError(`${HOST}: relay.history is for start only (run ${runId} has its transcript)`)
      const record = await recordOf(runId)
      const agent = agentOf(record, runId)
      if (!agent.options.client)
        throw new HostUnsupportedError(HOST, "send", `run ${runId} is a runtime tree, not a conversation`)
      const own =
        sendOpts.relay === undefined ? NO_RELAY : await relayToolkitOf(agent, "send", sendOpts.relay)
      const relay = sendOpts.relay
      const work = (
        abort: RunAbort,
        emit: (ev: HostEvent) => void,
        commit: (result: RunResult) => CommittedSnapshot | undefined,
      ) =>
        startHostedRun(
          store,
          agent.options,
          runId,
          input,
          hostedRunOptions(abort, emit, relay, own.toolkit, commit),
        )
      try {
        // This turn's relay (or none) replaces the run's: its resumes offer the current caller's tools.
        const turn = withRelay({ ...record, state: "running" }, runRelayOf(relay))
        await execute(runId, turn, work, sendOpts.onEvent, undefined, sendOpts.signal)
      } finally {
        if (own !== NO_RELAY) await own.release()
      }
    },

    async result(runId, resultOpts = {}) {
      checkStoreRunId(runId)
      const wait = resultWait(runId, resultOpts)
      for (;;) {
        if (wait.signal?.aborted) throw wait.error()
        const exec = executions.get(runId)
        if (exec) {
          await untilResultWait(exec.done, wait)
          if (exec.startFailure !== undefined && !exec.abort.aborted)
            throw new EngineRunError(runId, `failed: ${(exec.startFailure as Error)?.message}`, {
              cause: exec.startFailure,
            })
          // Saved by this execution and not cancelled since: what the record and transcript hold.
          if (exec.result !== undefined && !exec.abort.aborted) return exec.result
          continue
        }
        const record = await recordOf(runId)
        if (record.state === "failed" && record.result === undefined)
          // The cause carries the failure's code (`cause.code`), for doors that show only that.
          throw new EngineRunError(runId, `failed: ${record.error?.message ?? "unknown error"}`, {
            cause: record.error,
          })
        if (record.state === "cancelled")
          throw new EngineRunError(runId, `was cancelled: ${record.error?.message ?? "cancelled"}`)
        if (record.state !== "running") {
          const kept = record.result as HostResult
          // A conversation's result is kept without its transcript (see `settled`).
          if (kept && !("messages" in kept) && agents.get(record.agent)?.options.client)
            return { ...kept, messages: (await store.get(runId)) ?? [] } as HostResult
          return kept
        }
        // A closed host's own runs were stopped: their record stays `running`, nobody settles it.
        if (closed) throw new AbortError(`the host was closed before run ${runId} ended`)
        // Running in another process (or its worker died before saving): look again shortly,
        // or stop at once when the wait ends.
        await untilResultWait(pause(100), wait)
      }
    },

    events(runId, eventsOpts = {}) {
      const exec = executions.get(runId)
      if (!exec) return (async function* () {})()
      // Subscribed now, not at the first `next()`, so nothing emitted in between is lost.
      // `seen` counts every event of the execution; `exec.shifted` left the replay buffer.
      let seen = eventsOpts.fromStart ? exec.shifted : exec.shifted + exec.events.length
      let wake: (() => void) | undefined
      const listener = () => wake?.()
      exec.listeners ??= new Set()
      exec.listeners.add(listener)
      const iterator: AsyncIterator<HostEvent> = {
        async next() {
          for (;;) {
            seen = Math.max(seen, exec.shifted)
            if (seen < exec.shifted + exec.events.length)
              return { value: exec.events[seen++ - exec.shifted] as HostEvent, done: false }
            if (exec.ended) {
              exec.listeners?.delete(listener)
              return { value: undefined, done: true }
            }
            await new Promise<void>((resolve) => {
              wake = resolve
            })
            wake = undefined
          }
        },
        async return() {
          exec.listeners?.delete(listener)
          return { value: undefined, done: true }
        },
      }
      return { [Symbol.asyncIterator]: () => iterator }
    },

    async transcript(runId) {
      checkStoreRunId(runId)
      const record = await readRunRecord(store, runId)
      if (!record) return undefined
      if (agentOf(record, runId).options.client) return store.get(runId)
      return record.handle === undefined ? undefined : store.get(`${runId}/${record.handle}`)
    },

    listGrants: (filter) => listGrants(store, filter),
    revokeGrant: (grantId) => revokeGrant(store, grantId),
    getDelivery: (requestId) => outbox.getDelivery(requestId),

    async listPending(listOpts = {}) {
      const { runId, ...rest } = listOpts
      if (runId === undefined) return store.listPending(rest)
      checkStoreRunId(runId)
      const limit = resolveLimit(rest.limit)
      const kind = resolveKind(rest.kind)
      const entries = await requestsOfRun(runId, await readRunRecord(store, runId))
      return pageOf(
        kind === undefined ? entries : entries.filter((e) => e.request.kind === kind),
        rest.after,
        limit,
      )
    },
    findRequest: (requestId) => store.findRequest(requestId),
    getDecision: (requestId) => store.getDecision(requestId),

    async deliverAnswer(answer: Answer, deliverOpts = {}) {
      checkOpen()
      assertAnswer(answer)
      const entry = await store.findRequest(answer.id)
      // Nothing waits on it: deliverAnswer throws the refusal (unknown, or the first decision).
      if (!entry) await refused(answer.id, () => deliverAnswer(store, answer, {}))
      const held = entry as PendingEntry
      const runId = runIdOfEntry(held)
      const record = await recordFor(runId, held)
      if (!record || !agents.has(record.agent)) {
        // Not runnable here (an operator's host, a run started outside any host): the decision is
        // recorded for a host that serves the run, whose sweep applies it.
        const decision = await refused(answer.id, () => handOff(store, held, answer, leaseMs))
        logger?.info(`answer to ${answer.id} recorded; a host serving run ${runId} applies it`, {
          requestId: answer.id,
          runId,
        })
        return { runId, request: held.request, decision }
      }
      if (held.state === "claimed") {
        // A decision waits to be applied (its worker died, or it was handed off): the same answer
        // completes it, another one conflicts with it rather than being swapped for it silently.
        const due = await expiredClaimOf(store, answer.id)
        if (due && !sameAnswer(due.answer, answer))
          throw logRefusal(answer.id, decisionWaitingError(answer.id, decisionOf(due.answer)))
      }
      // A caller's relay replaces the run's kept one before anything is claimed (a process that
      // dies mid-resume leaves the current tools to the sweep); without one, the kept one applies.
      const given = runRelayOf(deliverOpts.relay)
      const relay = deliverOpts.relay === undefined ? record.relay : given
      const relaying = deliverOpts.relay ?? record.relay
      const relayed =
        relaying === undefined
          ? { route: routeKnowing(runId, record), release: NO_RELAY.release }
          : await relayDelivery(relaying, held, routeKnowing(runId, record))
      let current = record
      if (deliverOpts.relay !== undefined && JSON.stringify(given) !== JSON.stringify(record.relay)) {
        current = withRelay(record, given)
        try {
          await writeRunRecord(store, runId, current)
        } catch (error) {
          await relayed.release()
          throw error
        }
      }
      // The decision this delivery's claim applied: no read of it after the run.
      let applied: AnswerDecision | undefined
      try {
        await execute(
          runId,
          current,
          async (abort, emit, commit) => {
            // A resume's claim heartbeat joins its own controller to a real signal anyway.
            const delivery = deliverOptions({ signal: abort.signal, route: relayed.route })
            if (relay?.stream !== false) delivery.onEvent = emit
            // A deadline is stamped by a save after the resume's: the record is written after it.
            const expiresAt = deliverOpts.relay?.expiresAt
            if (expiresAt === undefined) delivery.commitSnapshot = commit
            // The entry read above: the claim decides, however the request moved since.
            const delivered = await deliverAnswerTo(store, held, answer, delivery)
            if (delivered.kind === "conversation") {
              applied = delivered.decision
              const stamped = stampExpiry(store, delivered.id, delivered.result, expiresAt)
              if (stamped !== undefined) await stamped
            }
            return delivered as HostedRunResult
          },
          deliverOpts.onEvent,
          undefined,
          deliverOpts.signal,
        )
      } finally {
        if (relayed.release !== NO_RELAY.release) await relayed.release()
      }
      const decision: AnswerDecision = applied ?? (await store.getDecision(answer.id)) ?? decisionOf(answer)
      return { runId, request: held.request, decision }
    },

    async retry(requestId, retryOpts = {}) {
      checkOpen()
      checkKey(requestId, `${HOST}: the request id`)
      const open = await store.findRequest(requestId)
      if (open) {
        const due = open.state === "claimed" ? await expiredClaimOf(store, requestId) : undefined
        if (!due) throw logRefusal(requestId, nothingToRetryError(requestId, open.state))
        const runId = runIdOfEntry(open)
        const record = await recordFor(runId, open)
        // Not runnable here: the decision is already due for the sweep of a host that serves the run.
        if (!record || !agents.has(record.agent))
          return { runId, request: open.request, decision: decisionOf(due.answer) }
        return this.deliverAnswer(due.answer, retryOpts)
      }
      const failed = (await store.listFailed()).find((entry) => entry.request.id === requestId)
      if (failed) return retryFailedRequest(failed, retryOpts)
      // Unknown, or decided: the store says which, with the decision.
      throw logRefusal(requestId, await settledRequestError(store, requestId, "nothing waits on it"))
    },

    listFailed: (listOpts) => store.listFailed(listOpts),

    sweep() {
      checkOpen()
      return sweepOnce()
    },

    async cancel(runId, reason = "cancelled") {
      checkStoreRunId(runId)
      // A run executing here is stopped before anything is read: once `cancel` is called it
      // never ends `done` (a door that answers "canceled" without waiting for the stop relies
      // on it), and its record is this cancel's to write.
      const exec = executions.get(runId)
      if (exec) {
        exec.cancelled = true
        exec.abort.abort(new AbortError(`run ${runId} was cancelled: ${reason}`))
        await exec.done
      }
      // Read once, after the run stopped: its requests are found and its record rewritten from it.
      const record = await recordOf(runId)
      const decline: AnswerDecision = { ok: false, reason: String(reason) }
      for (const entry of await requestsOfRun(runId, record)) await withdraw(store, entry, decline, leaseMs)
      await writeRunRecord(store, runId, {
        ...record,
        state: "cancelled",
        error: { message: String(reason) },
      })
    },

    async close() {
      closed = true
      if (timer) clearInterval(timer)
      for (const exec of executions.values()) exec.abort.abort(new AbortError("the host was closed"))
      await Promise.all([...executions.values()].map((exec) => exec.done))
      await startup
      await sweeping
    },
  })
}

/**
 * Decides an open request `decline` without running anything: claimed and consumed on its
 * holder (so the decision is recorded and a later answer refused with it), then every other
 * holder of a tree cleared and the parked tree's snapshot removed.
 */
async function withdraw(
  store: DurableStore,
  entry: PendingEntry,
  decline: AnswerDecision,
  leaseMs: number | undefined,
): Promise<void> {
  const id = entry.request.id
  const claim = await store.claimAnswer(
    entry.conversationId,
    { id, ...decline },
    claimOptionsOf(entry, leaseMs),
  )
  const messages = (await store.get(entry.conversationId)) ?? []
  await store.save(entry.conversationId, messages, { pending: null, claim: claim.token })
  for (let level = 0; level < 64; level++) {
    const held = await store.findRequest(id)
    if (!held) break
    await store.save(held.conversationId, (await store.get(held.conversationId)) ?? [], { pending: null })
  }
  if (entry.runtimeKey !== undefined) await store.deleteSnapshot(entry.runtimeKey)
}

/** What a store host's run id may be: 1–200 characters, none of them white space or control. */
const STORE_RUN_ID = /^[^\s\p{Cc}]{1,200}$/u

/**
 * A store host's run id is a conversation id of its store, so a chat scoped to its user
 * (`ada/chat-1`, `ada@example.com/chat-1`) is a run as it is; engines name workflows with it
 * and are stricter (`^[A-Za-z0-9._:-]{1,200}$`).
 *
 * @throws ConfigError for anything else.
 */
function checkStoreRunId(runId: string): void {
  if (typeof runId !== "string" || !STORE_RUN_ID.test(runId))
    throw new ConfigError(
      `${HOST}: run id must match ${STORE_RUN_ID}, got ${JSON.stringify(runId)?.slice(0, 60)}`,
    )
}

/**
 * The record of a run whose start, turn or resume settled on `outcome`: `pending` while it
 * waits on a request, `failed` for a tree that ended in an error, else `done`.
 */
function settledRecord(record: RunRecord, outcome: HostedRunResult): RunRecord {
  const result = outcome.result
  const pending = "pending" in result ? result.pending : undefined
  const state = pending ? "pending" : outcome.kind === "runtime" && outcome.result.isError ? "failed" : "done"
  // A conversation's transcript is its own row: the record keeps the rest of the result, so a
  // turn writes the record at the same size at turn 200 as at turn 1.
  const kept = outcome.kind === "conversation" ? withoutMessages(outcome.result) : result
  // Object.assign: properties added after a spread are defined through the runtime.
  return Object.assign({}, record, { state, result: kept })
}

/** A conversation run's result less its transcript (the conversation's row keeps it). */
function withoutMessages(result: RunResult): Omit<RunResult, "messages"> {
  const { messages: _messages, ...rest } = result
  return rest
}

/**
 * What `startHostedRun` gets for a start or turn of a client run: the execution's abort, its
 * events (unless the caller asked for none), and the caller's toolkit, output and deadline.
 * Built by assignment: one object a turn, not one per optional field.
 */
function hostedRunOptions(
  abort: RunAbort,
  emit: (ev: HostEvent) => void,
  relay: HostRelayOptions | undefined,
  toolkit: Toolkit | undefined,
  commit: (result: RunResult) => CommittedSnapshot | undefined,
): StartHostedRunOptions {
  const runOpts: StartHostedRunOptions = { abort }
  if (relay?.stream !== false) runOpts.onEvent = emit
  if (toolkit !== undefined) runOpts.toolkit = toolkit
  if (relay?.output !== undefined) runOpts.output = relay.output
  // A deadline is stamped on the request by a save after the run's: the record is written after it.
  if (relay?.expiresAt !== undefined) runOpts.expiresAt = relay.expiresAt
  else runOpts.commit = commit
  return runOpts
}

/** The claim options of a delivery to `entry`'s holder. */
function claimOptionsOf(
  entry: Pick<PendingEntry, "runtimeKey">,
  leaseMs: number | undefined,
): { runtimeKey?: string; leaseMs?: number } {
  return {
    ...(entry.runtimeKey !== undefined ? { runtimeKey: entry.runtimeKey } : {}),
    ...(leaseMs !== undefined ? { leaseMs } : {}),
  }
}

/** The expired claim (the recorded decision waiting for a sweep) on request `requestId`, if any. */
async function expiredClaimOf(store: DurableStore, requestId: string) {
  return (await store.listExpiredClaims()).find((claim) => claim.request.id === requestId)
}

/** Whether two answers make the same decision (ok, reason and data). */
function sameAnswer(a: Answer, b: Answer): boolean {
  return (
    a.ok === b.ok &&
    a.reason === b.reason &&
    JSON.stringify(a.data ?? null) === JSON.stringify(b.data ?? null)
  )
}

/**
 * Records `answer` on `entry`'s request without running anything here: a claim given up at once,
 * so it keeps the answer and is due for the next sweep (or `retry`) of a host serving the run.
 * Once a decision is recorded a second one conflicts, naming the first.
 */
async function handOff(
  store: DurableStore,
  entry: PendingEntry,
  answer: Answer,
  leaseMs: number | undefined,
): Promise<AnswerDecision> {
  const id = answer.id
  if (entry.state === "claimed") {
    const due = await expiredClaimOf(store, id)
    // A live claim: the store refuses below, with the decision being applied.
    if (due) throw decisionWaitingError(id, decisionOf(due.answer))
  }
  const claim = await store.claimAnswer(entry.conversationId, answer, claimOptionsOf(entry, leaseMs))
  await store.releaseClaim(entry.conversationId, claim.token)
  if (claim.takeover) throw decisionWaitingError(id, decisionOf(claim.answer))
  return decisionOf(claim.answer)
}

/** Resolves after `ms` (a poll's pause; the timer does not hold the process open). */
function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref?.())
}
