import type { StreamEvent } from "../client/run-result.js"
import type { RunResult } from "../client/run-result.js"
import type { AnswerDecision } from "../errors.js"
import type { PendingEntry } from "../suspension/pending-entry.js"
import type { Answer, JSONSchema, Message, Prompt, Request } from "../types.js"
import type { ApprovalGrant, DeliveryRecord, GrantFilter } from "./approval-grants.js"
import type { RuntimeEvent, TaskResult } from "./host-types.js"

/** Options of `RunHost.start`, `send` and `deliverAnswer`. */
export interface HostStartOptions<Event = StreamEvent | RuntimeEvent> {
  /**
   * Every event of the run this call drives, besides the agent's own `onEvent`, until it ends
   * or parks. A throw is ignored. On an engine connection it is fed from the run's event log
   * (the workers append to it), so it may trail the run by a poll.
   */
  onEvent?: (ev: Event) => void
  /**
   * `start` only: whom the run acts for (a user or tenant id). Approvals remembered with
   * `remember: "principal"` cover later calls in every run of the same principal. A host
   * without grants ignores it.
   */
  principal?: string
  /**
   * Aborts what this call runs in this process (a store host: the run's execution, its LLM
   * request included; the run keeps its last saved state, and an answer being applied is
   * released for a retry). An engine's run goes on in its workers: there it is not passed on.
   */
  signal?: AbortSignal
  /**
   * What a caller that keeps its own tools and transcript brings to this run only (an
   * OpenAI-compatible proxy, AG-UI's frontend tools): see {@link HostRelayOptions}. A store
   * host honours it for a client agent; a runtime agent's, or an engine's run (its workers'
   * toolkit is fixed), refuses it with `HostUnsupportedError`.
   */
  relay?: HostRelayOptions
}

/** A tool the caller executes itself, offered to one run as a relay tool (§3 `relayTool`). */
export interface HostRelayTool {
  /** The tool's name, `^[a-zA-Z0-9_-]{1,64}$`. */
  name: string
  /** What the model is told the tool does. */
  description?: string
  /** The JSON Schema of its arguments; default an object with no properties. */
  parameters?: JSONSchema
}

/** `HostStartOptions.relay`: the caller's part of one run (a contract extension of §17). */
export interface HostRelayOptions {
  /**
   * The caller's tools, offered to this run as relay tools besides the agent's toolkit (a
   * toolkit tool of the same name wins): `start` and `send` for that turn, `deliverAnswer` for
   * the resumed run. A model call of one halts the run on a relay request for the caller.
   */
  tools?: HostRelayTool[]
  /**
   * `start` only: the transcript before `input`, for a caller that sends its whole history
   * with each request (stored as the run's conversation before `input` is added).
   */
  history?: Message[]
  /** The JSON Schema this call's final answer must match (structured output), for this call only. */
  output?: JSONSchema
  /**
   * When the relay request this call's run halts on expires (RFC 3339 with an offset): a later
   * `ok` answer is refused with `AnswerExpiredError`, judged by the host's one expiry rule.
   */
  expiresAt?: string
  /**
   * `false`: the run asks its model with non-streaming requests (a caller that wants one
   * answer, not deltas); `onEvent` and `events()` then hear no text deltas. Default `true`.
   */
  stream?: boolean
}

/** Options of `RunHost.result`: how long the caller waits. */
export interface HostResultOptions {
  /** Gives up (`AbortError`) after this many milliseconds. */
  timeoutMs?: number
  /**
   * Gives up (`AbortError`) as soon as this aborts, e.g. when the door's client went away:
   * the wait's timers, polls and engine calls are released at once; the run goes on.
   */
  signal?: AbortSignal
}

/** Options of `RunHost.listPending`. */
export interface HostListOptions {
  /** At most this many entries. */
  limit?: number
  /** Only requests of this kind (`"approval"`, `"input"`, …). */
  kind?: string
  /** Only entries after the one with this request id, in `since` then request id order. */
  after?: string
  /**
   * Only the requests run `runId` waits on (`runIdOfEntry(entry) === runId`): a door asking for
   * its own run's open request reads that run's, not every run's.
   */
  runId?: string
}

/**
 * Where a host or a door reports what no caller waits for: failed runs (with their error
 * `code`) at `error`, refusals and sweeps at `info`. `console` is one, and so is any logger with
 * these levels; `debug` and `warn` are optional (§19 names all four) and toolnexus writes only
 * `info` and `error` today.
 */
export interface Logger {
  /** Detail for debugging; optional. */
  debug?(message: string, data?: Record<string, unknown>): void
  /** Something worth knowing that needs no action (a refused answer, a sweep's work). */
  info(message: string, data?: Record<string, unknown>): void
  /** Something that may need attention; optional. */
  warn?(message: string, data?: Record<string, unknown>): void
  /** A failure no caller saw (a run that failed in the background, a notify that threw). */
  error(message: string, data?: Record<string, unknown>): void
}

/** What `RunHost.deliverAnswer` resolves to once the decision is recorded. */
export interface HostDelivered {
  /** The id of the run that waits on the request and goes on with the decision. */
  runId: string
  /** The open request the answer decided. */
  request: Request
  /** The decision recorded: `ok`, and `reason` when declined. */
  decision: AnswerDecision
}

/**
 * The one thing a door talks to (§17): start runs of declared agents (`hostAgent`), read their
 * results, events and transcripts, and list and answer their open requests under
 * one-decision-per-request rules. `createStoreHost` (`@toolnexus/durable`) runs them in this
 * process over a store; `connectRestate` / `connectDbos` in an engine's workers. `Result` is
 * `RunResult` for a client agent, `TaskResult` for a runtime agent.
 */
export interface RunHost<Result = RunResult | TaskResult, Event = StreamEvent | RuntimeEvent> {
  /**
   * Starts run `runId` of `agent` on `input`; a run id already used is that run
   * (`started: false`), never a second one. Resolves once the run is started (a store host
   * has then begun it in this process; `result` waits for it).
   *
   * @throws ConfigError for a bad `runId` (an engine's: `^[A-Za-z0-9._:-]{1,200}$`; a store
   *   host's: 1–200 characters without white space, a conversation id such as `ada/chat-1`) or an agent the host does
   *   not serve (on an engine, the run fails instead: `result` rejects `EngineRunError`).
   */
  start(
    agent: string,
    runId: string,
    input: Prompt,
    opts?: HostStartOptions<Event>,
  ): Promise<{
    /** The run's id: `runId` as given. */
    runId: string
    /** `false` when a run with this id already existed, so this call started nothing. */
    started: boolean
  }>
  /**
   * A new user turn of run `runId` (a conversation run of a client agent), run to its end or
   * its next request; resolves when it is over.
   *
   * @throws ConversationPendingError while the run waits on a request (answer it first);
   *   EngineRunError for an unknown run; HostUnsupportedError where the host cannot continue one.
   */
  send(runId: string, input: Prompt, opts?: HostStartOptions<Event>): Promise<void>
  /**
   * The run's result once it ends, or (on a store host) once it parks on a request
   * (`pending` set, or `status: "pending"`); an engine's parked run waits in the engine, so
   * there it resolves at the end only.
   *
   * @throws EngineRunError for a failed or unknown run; AbortError after `timeoutMs` or once
   *   `signal` aborted.
   */
  result(runId: string, opts?: HostResultOptions): Promise<Result>
  /**
   * The live events of run `runId` while it runs (`fromStart`: those it emitted so far first);
   * ends when the run ends or parks. Empty for a run not in flight (a store host: not in this
   * process; an engine: its current turn ended or waits on a request).
   */
  events(runId: string, opts?: { fromStart?: boolean }): AsyncIterable<Event>
  /**
   * The run's stored conversation (a runtime agent's: its root handle's), or undefined for an
   * unknown run. An engine stores it as each turn ends and as it parks: while a turn runs, it
   * is the conversation the turn before left.
   */
  transcript(runId: string): Promise<Message[] | undefined>
  /** Open requests, one entry per request id, by `since` then request id. */
  listPending(opts?: HostListOptions): Promise<PendingEntry[]>
  /** The open request with this id, if any. */
  findRequest(requestId: string): Promise<PendingEntry | undefined>
  /** The decision recorded for request `requestId` (an answer, an expiry, a cancel), if any. */
  getDecision(requestId: string): Promise<AnswerDecision | undefined>
  /**
   * Records `answer` as the decision on its request and sends it to the waiting run; resolves
   * when the decision is recorded (a store host: when the resumed run has run to its end or its
   * next request; an engine: the run goes on there).
   *
   * @throws AnswerInvalidError for a malformed answer; UnknownRequestError for an unknown
   *   request; AnswerConflictError (with the first `decision`) when it was decided;
   *   AnswerExpiredError for `ok: true` after `expiresAt`.
   */
  deliverAnswer(answer: Answer, opts?: HostStartOptions<Event>): Promise<HostDelivered>
  /**
   * Cancels run `runId`: its open requests are withdrawn (decided `{ ok: false, reason }`, so a
   * later answer is refused with that decision) and a run in flight is aborted.
   */
  cancel(runId: string, reason?: string): Promise<void>
  /**
   * The approval grants in force (§19: answers that said `data.remember`), oldest first,
   * filtered by `filter`'s fields. Optional: a host without grants leaves it out or throws
   * `HostUnsupportedError`.
   */
  listGrants?(filter?: GrantFilter): Promise<ApprovalGrant[]>
  /**
   * Revokes grant `grantId`: later calls it covered ask again. `false` when no such grant is in
   * force. Optional, as `listGrants`.
   */
  revokeGrant?(grantId: string): Promise<boolean>
  /**
   * Where the notifications of request `requestId` stand (attempts, delivery, the expiry
   * warning); `undefined` when none was attempted. Optional: only hosts with `notify` keep it.
   */
  getDelivery?(requestId: string): Promise<DeliveryRecord | undefined>
  /**
   * Releases what the host holds (timers, pending waits, pools); runs in an engine go on, a
   * store host's runs in flight are aborted (their last saved state stays answerable).
   */
  close(): Promise<void>
}
