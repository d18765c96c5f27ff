import { AnswerMismatchError, ConfigError, ConversationPendingError, UnknownRequestError } from "../errors.js"
import type { Dialect, ModelTurn } from "../providers/model-turn.js"
import { MemoryStore } from "../store/conversation-store.js"
import type { CommittedSnapshot, ConversationStore } from "../store/conversation-store.js"
import type { Toolkit } from "../tools/toolkit.js"
import type { Answer, Message, Prompt, Request } from "../types.js"
import { assertAnswerFits } from "../suspension/answer-fits.js"
import { assertAnswer } from "../suspension/answer-shape.js"
import { type DurableExecutor, RunJournal } from "./executor.js"
import { resumeHaltedTurn } from "../suspension/halted-turn.js"
import type { Hooks } from "./hooks.js"
import { type LlmMeter, type LoopConfig, type ModelCall, type RunInput, RunState, runTurns } from "./loop.js"
import type { TelemetryOptions } from "../telemetry/otel-api.js"
import { RunTracing, type TracedEndpoint } from "../telemetry/run-tracing.js"
import { type MetricEvent, MetricsRegistry, attachMetrics } from "./metrics.js"
import type { RunResult, StreamEvent } from "./run-result.js"
import { runStoredConversation } from "./stored-conversation.js"
import { LEGACY_RUN_SCOPE, newRunId, runIdOf } from "./run-id.js"
import type { TranslateRequest, TranslateResult } from "./translate.js"
import { type CompactionOptions, assertCompactionOptions } from "../compaction/compact-messages.js"
import { type OutputOf, type OutputSchema, outputSpec } from "./structured-output.js"
import { type RunSignal, realSignal, runSignalOf } from "../internal/run-abort.js"
import { isThenable } from "../internal/thenable.js"

/** Options shared by every client. */
export interface ClientBaseOptions {
  /** The model name sent with every LLM request (non-empty); also the `model` of results and metrics. */
  model: string
  /**
   * System text sent with every LLM request, followed by the toolkit's skill catalog (joined
   * by a blank line); none when omitted.
   */
  systemPrompt?: string
  /** Maximum LLM turns per run; default 10. Reaching it gives `status: "incomplete"`. */
  maxTurns?: number
  /** Answers suspensions inline; without it a suspending run halts with `status: "pending"`. */
  waitFor?: (req: Request) => Answer | Promise<Answer>
  /** Interception points around each LLM request and tool call of every run (see {@link Hooks}). */
  hooks?: Hooks
  /** Called with each metric event (LLM request, tool call, run) after the client's registry records it. */
  onMetric?: (ev: MetricEvent) => void
  /** Where `ask`/`stream` with an `id` keep conversations; default a per-client MemoryStore. */
  store?: ConversationStore
  /**
   * Checked before every LLM turn; a returned limit name (e.g. "maxTokens") stops the run
   * with `status: "incomplete"` and that `limit`. The agents runtime enforces budgets with it
   * (under an executor through a promise: a check that reads the clock is a journaled step).
   */
  beforeTurn?: () => string | undefined | Promise<string | undefined>
  /**
   * OpenTelemetry tracing (GenAI semantic-convention spans). On by itself when a global
   * tracer provider is registered and `@opentelemetry/api` is installed; nothing is imported
   * otherwise.
   */
  telemetry?: TelemetryOptions
  /**
   * Context compaction before each LLM request: over `maxTokens`, the older transcript becomes
   * one summary and the working transcript is replaced by the compacted one (results and stores
   * hold it; a resume goes on from it).
   */
  compaction?: CompactionOptions
}

/**
 * Receives a run's events as they happen (see {@link StreamEvent}); with it the model is
 * asked with streaming requests, so text arrives delta by delta. Called synchronously: keep
 * it quick; a throw is ignored.
 */
export type StreamListener = (ev: StreamEvent) => void

/** Structured output: the final answer must be JSON matching this schema (see `result.output`). */
export interface OutputOption<S extends OutputSchema | undefined = OutputSchema | undefined> {
  /**
   * A Zod 4 schema (then `result.output` is typed) or a JSON Schema object. The answer is
   * parsed and validated; an invalid one gets one corrective turn, then the run ends
   * `incomplete` with `limit: "invalidOutput"`.
   */
  output?: S
}

/** Options of `run`. */
export interface RunOptions<S extends OutputSchema | undefined = OutputSchema | undefined>
  extends OutputOption<S> {
  /** The tools (and skills) the model may use in this run; without it the model gets no tools. */
  toolkit?: Toolkit
  /** Earlier messages (in the client's message shape) sent before `prompt`, copied; default none. */
  history?: Message[]
  /**
   * Aborts the run: checked before each LLM turn and after each turn's tool calls, and passed
   * to the LLM requests and tools; an abort rejects with `AbortError`.
   */
  signal?: AbortSignal
  /** Receives the run's events as they happen; with it the LLM requests stream. */
  onEvent?: StreamListener
  /**
   * Run as a workflow of a durable-execution engine: each LLM turn and tool call is a journaled
   * step, and a suspension waits through `executor.wait` (the run never halts `pending`).
   */
  executor?: DurableExecutor
}

/** Options of `ask`. */
export interface AskOptions<S extends OutputSchema | undefined = OutputSchema | undefined>
  extends OutputOption<S> {
  /** The tools (and skills) the model may use in this run; without it the model gets no tools. */
  toolkit?: Toolkit
  /** The conversation id: loaded from and saved back to the store. */
  id?: string
  /**
   * Aborts the run: checked before each LLM turn and after each turn's tool calls, and passed
   * to the LLM requests and tools; an abort rejects with `AbortError`.
   */
  signal?: AbortSignal
  /** Text deltas only; `onEvent` receives them too, with every other event. */
  onText?: (delta: string) => void
  /** Receives the run's events as they happen; with it the LLM requests stream. */
  onEvent?: StreamListener
  /** With `id`: checkpoint settled tool results before each next LLM request (see `ContinueOptions.checkpoint`). */
  checkpoint?: boolean
  /**
   * With `id`: a snapshot the run's final save writes in the same store call, built from the
   * run's result just before that save (`undefined`: a plain save). The transcript and the
   * snapshot are stored together or not at all, so what a host keeps beside a conversation
   * (a store host's run record) never disagrees with it, and costs no write of its own. The
   * client's store must have `commitResume` (a durable store); a mid-run checkpoint writes
   * no snapshot.
   *
   * @throws ConfigError, before anything runs, when the client's store has no `commitResume` or without `id`.
   */
  commitSnapshot?: (result: RunResult) => CommittedSnapshot | undefined
}

/** What every `continueRun` takes, whether it continues a given transcript or a stored one. */
export interface ContinueBaseOptions<S extends OutputSchema | undefined = OutputSchema | undefined>
  extends OutputOption<S> {
  /** The tools (and skills) the resumed run may use, the repaired halted call's tool included. */
  toolkit?: Toolkit
  /**
   * The request the transcript halted on; its halted turn is repaired with `answer` first.
   * Read from the store when omitted on a stored continue.
   */
  pending?: Request
  /**
   * The host's answer to `pending`; its `id` must echo the request's id. Omitted: the
   * transcript is continued as it is, with no halted turn repaired.
   */
  answer?: Answer
  /**
   * Aborts the run: checked before each LLM turn and after each turn's tool calls, and passed
   * to the LLM requests and tools; an abort rejects with `AbortError`.
   */
  signal?: AbortSignal
  /** Events of the resumed run, the repaired turn's tool results included. */
  onEvent?: StreamListener
}

/**
 * A stateless continue: the given transcript is continued and nothing is stored (what an
 * engine's workflow or a host keeping its own transcripts calls).
 */
export interface ContinueTranscriptOptions<S extends OutputSchema | undefined = OutputSchema | undefined>
  extends ContinueBaseOptions<S> {
  /** The transcript to continue. */
  messages: Message[]
  /**
   * The run's id, the stable half of idempotency keys. Omitted: with `pending`, the id of the
   * run that halted on it (its `data.runId`), so the retried call keeps its key; without, a
   * new `run-<uuid>`.
   */
  id?: string
  /** Continue `messages` as a workflow of a durable-execution engine (see `RunOptions.executor`). */
  executor?: DurableExecutor
}

/**
 * The context of a stored resume whose answer was accepted where its claim was decided (a
 * durable store's `claimAnswer`, which judged the answer's expiry once): core does not judge
 * it again, so an answer claimed in time is honoured even when the resume ends later.
 */
export interface ResumeContext {
  /**
   * The claim's token, given to the save that applies the answer: the save is fenced by it
   * and consumes it (see `SaveMeta.claim`). Absent on the steps of a cascade below the one
   * whose save consumes it.
   */
  claim?: string
  /** Aborts the run, e.g. when the claim could not be renewed. */
  signal?: AbortSignal
  /**
   * Save the transcript (under `claim`) each time a turn's calls have settled, before the next
   * LLM request, so a crash never re-runs a recorded tool. Default: the store's `checkpoints`
   * flag (on for durable stores).
   */
  checkpoint?: boolean
}

/**
 * A stored resume: conversation `id` of the client's store is loaded (with its pending request
 * when `pending` is omitted), continued and saved back — the one "load → repair the halted
 * turn → run → save" path that durable resumes and the agents runtime use.
 */
export interface StoredResumeOptions<S extends OutputSchema | undefined = OutputSchema | undefined>
  extends ContinueBaseOptions<S> {
  /** The conversation (or handle) id: the store key, and the stable half of idempotency keys. */
  id: string
  /** The claim the answer was accepted under, with what the resume runs under; see {@link ResumeContext}. */
  resume?: ResumeContext
  /**
   * A durable store's claim token: the save is fenced by it and consumes it.
   * @deprecated Pass `resume: { claim }`; this form is still honoured and judges expiry as before.
   */
  claim?: string
  /**
   * Checkpoint settled tool results before each next LLM request (default: the store's
   * `checkpoints` flag). Also `resume.checkpoint`.
   */
  checkpoint?: boolean
  /**
   * With `id`: a snapshot the run's final save writes in the same store call, built from the
   * run's result just before that save (`undefined`: a plain save). The transcript and the
   * snapshot are stored together or not at all, so what a host keeps beside a conversation
   * (a store host's run record) never disagrees with it, and costs no write of its own. The
   * client's store must have `commitResume` (a durable store); a mid-run checkpoint writes
   * no snapshot.
   *
   * @throws ConfigError, before anything runs, when the client's store has no `commitResume`.
   */
  commitSnapshot?: (result: RunResult) => CommittedSnapshot | undefined
}

/**
 * Options of `continueRun`: a stateless continue of `messages` ({@link ContinueTranscriptOptions})
 * or, without them, a stored resume of conversation `id` ({@link StoredResumeOptions}). Every
 * field of both is accepted here, as before the split; a stored-only option with `messages`
 * is a `ConfigError`.
 */
export interface ContinueOptions<S extends OutputSchema | undefined = OutputSchema | undefined>
  extends ContinueBaseOptions<S> {
  /** The transcript to continue; omit it to load conversation `id` from the store and save it back. */
  messages?: Message[]
  /** The store key of a stored resume, or the run id of a stateless continue (see both option types). */
  id?: string
  /** Stored resume only: see {@link StoredResumeOptions.resume}. */
  resume?: ResumeContext
  /** Stored resume only. @deprecated Pass `resume: { claim }`. */
  claim?: string
  /**
   * The answer was accepted before the request's `expiresAt`.
   * @deprecated Pass `resume` (the claim's context): `expiryChecked: true` is read as `resume: {}`.
   */
  expiryChecked?: boolean
  /** Stored resume only: see {@link StoredResumeOptions.checkpoint}. */
  checkpoint?: boolean
  /** Stored resume only: see {@link StoredResumeOptions.commitSnapshot}. */
  commitSnapshot?: (result: RunResult) => CommittedSnapshot | undefined
  /** Stateless continue only: see {@link ContinueTranscriptOptions.executor}. */
  executor?: DurableExecutor
}

/** A client of one model endpoint. */
export interface Client {
  /** Runs a prompt (after `history`) to a final answer, a halt or a limit. */
  run<S extends OutputSchema | undefined = undefined>(
    prompt: Prompt,
    opts?: RunOptions<S>,
  ): Promise<RunResult<OutputOf<S>>>
  /** Like `run`; with `id` the conversation is loaded from and saved back to the store. */
  ask<S extends OutputSchema | undefined = undefined>(
    prompt: Prompt,
    opts?: AskOptions<S>,
  ): Promise<RunResult<OutputOf<S>>>
  /** Runs with streaming requests, yielding text, refusal, tool, pending, usage and done events. */
  stream(
    prompt: Prompt,
    opts?: { toolkit?: Toolkit; id?: string; signal?: AbortSignal; output?: OutputSchema },
  ): AsyncIterable<StreamEvent>
  /**
   * Continues a transcript with no new user turn. With `pending` and `answer`, first
   * resumes the halted turn: the halted call is retried with `ctx.answer` (or declined),
   * relay calls take the host's results, recorded results are kept. Without `messages`,
   * conversation `id` is loaded from the store (its pending request too, when `pending` is
   * omitted), continued, and saved back under `claim` when one is given.
   *
   * @throws AnswerMismatchError when `answer.id` does not echo `pending.id` (nothing changed).
   * @throws UnknownRequestError on a stored continue whose conversation is unknown or waits on nothing.
   * @example
   * // resume conversation "order-42" from the client's store and save it back
   * const result = await client.continueRun({ id: "order-42", answer: { id: req.id, ok: true }, toolkit })
   */
  continueRun<S extends OutputSchema | undefined = undefined>(
    opts: ContinueOptions<S>,
  ): Promise<RunResult<OutputOf<S>>>
  /** An in-memory multi-turn conversation. */
  conversation(opts?: { toolkit?: Toolkit }): {
    /** Runs `prompt` after the transcript so far and keeps the result's `messages` as the new transcript. */
    send(prompt: Prompt): Promise<RunResult>
    /** The transcript so far (the last result's `messages`); empty at first and after `reset`. */
    messages: Message[]
    /** Forgets the transcript: the next `send` starts a new conversation. */
    reset(): void
  }
  /** The store `ask`, `stream` and `continueRun` use with an `id`: `store`, or a per-client MemoryStore. */
  conversationStore(): ConversationStore
  /** Prometheus text exposition of this client's metrics. */
  metrics(): string
  /**
   * One request in OpenAI shapes, answered in OpenAI shapes: no loop, no store, no tool runs
   * (a toolkit is only declared). Anthropic gets upstream toolnexus's inbound conversion.
   * `beforeLLM`/`afterLLM` run once; retries, request params and metrics as for `run`.
   */
  translate(req: TranslateRequest): Promise<TranslateResult>
}

/** @internal What a concrete client provides to the shared implementation. */
export interface ModelBinding {
  model: string
  dialect: Dialect
  /** What the run spans say about the endpoint. */
  endpoint: TracedEndpoint
  callModel(call: ModelCall): Promise<ModelTurn>
  /** The one request of `translate`; absent when the client has no wire format. */
  translate?(req: TranslateRequest): Promise<TranslateResult>
  /** The user's `fetch` seam, handed to tools as `ToolContext.fetch`. */
  fetch?: typeof fetch | undefined
}

/** @internal Builds the public client over a model binding. */
export function buildClient(binding: ModelBinding, opts: ClientBaseOptions): Client {
  if (opts.compaction !== undefined) assertCompactionOptions(opts.compaction)
  const maxTurns = opts.maxTurns ?? 10
  if (!Number.isInteger(maxTurns) || maxTurns < 1)
    throw new ConfigError(`maxTurns must be a positive integer, got ${opts.maxTurns}`)
  // The client's store, in a cell that `adoptConversationStore` swaps. The cell is what the
  // `adopters` map keeps for the client: a WeakMap value that reaches its key (a closure of
  // this scope does, through the loop configs' `client`) is an ephemeron cycle that every
  // collection traces again — ~100k instructions per client made, which an approval host
  // making a client per run paid on every run.
  const held: { store: ConversationStore } = { store: opts.store ?? new MemoryStore() }
  const registry = new MetricsRegistry()
  const onMetric = opts.onMetric
  const record = onMetric
    ? (ev: MetricEvent) => {
        registry.record(ev)
        onMetric(ev)
      }
    : (ev: MetricEvent) => registry.record(ev)
  const { model, dialect } = binding

  // Bound once, to the store the client was made with (as both configs always were).
  const grants = held.store.findApprovalGrant?.bind(held.store)
  // What the loop's plain turns measure with (`measuredCall`'s metric, in the loop's frame).
  const meter: LlmMeter = {
    call: (call) => binding.callModel(call),
    ok: (reply, turn, started) => recordedCall(reply, turn, started, record),
    failed: (error, turn, started) => failedCall(error, turn, started, record),
  }
  const configFor = (stream: boolean): LoopConfig => ({
    model,
    dialect,
    stream,
    hooks: opts.hooks,
    waitFor: opts.waitFor,
    maxTurns,
    beforeTurn: opts.beforeTurn,
    record,
    callModel: measuredCall,
    compaction: opts.compaction,
    fetch: binding.fetch,
    grants,
    // Set once the client exists; in the literal, so that store needs no new property slots.
    client: undefined,
    meter,
  })

  // Not async: an async function runs its continuation in its own code, so V8 compiles it on
  // its own as well as inlined in the loop (a second compile of the request path inside the
  // first thousand runs); `then` handlers are small functions of their own.
  function measuredCall(call: ModelCall, rec = record): Promise<ModelTurn> {
    const started = performance.now()
    let reply: Promise<ModelTurn>
    try {
      reply = Promise.resolve(binding.callModel(call))
    } catch (error) {
      reply = Promise.reject(error)
    }
    return reply.then(
      (turn) => {
        recordedCall(turn, call.turn, started, rec)
        return turn
      },
      (error) => failedCall(error, call.turn, started, rec),
    )
  }
  /** Records a reply's `llm` metric (of the run's turn `turn`). */
  function recordedCall(reply: ModelTurn, turn: number, started: number, rec: typeof record): void {
    try {
      rec({
        event: "llm",
        model,
        status: "ok",
        durationMs: performance.now() - started,
        promptTokens: reply.usage.promptTokens,
        completionTokens: reply.usage.completionTokens,
        turn,
      })
    } catch (error) {
      // A metric listener that throws fails the call, recorded as failed, as before.
      failedCall(error, turn, started, rec)
    }
  }
  /** Records a failed LLM call (of the run's turn `turn`), then throws its error. */
  function failedCall(error: unknown, turn: number, started: number, rec: typeof record): never {
    const httpStatus = (error as { status?: unknown }).status
    rec({
      event: "llm",
      model,
      status: "error",
      ...(typeof httpStatus === "number" ? { httpStatus } : {}),
      durationMs: performance.now() - started,
      promptTokens: 0,
      completionTokens: 0,
      turn,
    })
    throw error
  }
  /**
   * Puts a run under an executor: its turns and calls become journaled steps, and the metric
   * records they make are journaled with them.
   */
  function journaled(config: LoopConfig, input: RunInput, executor: DurableExecutor): LoopConfig {
    const journal = new RunJournal({ executor, record, waitFor: opts.waitFor, emit: input.emit })
    input.journal = journal
    return {
      ...config,
      record: journal.record,
      callModel: (call) => measuredCall(call, journal.record),
      meter: undefined,
    }
  }
  const plain = configFor(false)
  // The streaming config is made on a client's first streamed run: most clients (a host's
  // client per approval run) never stream.
  let streamingConfig: LoopConfig | undefined
  const streamed = (): LoopConfig => {
    if (streamingConfig === undefined) {
      streamingConfig = configFor(true)
      streamingConfig.client = client
    }
    return streamingConfig
  }
  const { telemetry } = opts
  const { endpoint } = binding

  /**
   * Runs one run's body with its run metric and, while tracing is on, its `invoke_agent` span.
   * (`any`: the typed `output` of a run is decided by its caller's schema, not here.)
   */
  async function measured(
    input: RunInput,
    conversationId: string | undefined,
    body: (input: RunInput) => Promise<RunResult>,
  ): Promise<RunResult<any>> {
    const started = performance.now()
    const tracing = RunTracing.start(telemetry, endpoint, conversationId)
    if (tracing !== undefined) input.tracing = await tracing
    try {
      return endRun(input, started, await body(input))
    } catch (error) {
      failedRun(input, started, error)
    }
  }
  // A run's end, in functions of their own: a resumed run's first LLM request is sent before
  // either runs, so a fresh process does not compile them before it (DESIGN §7).
  /** Records the run's metric and ends its span. */
  function endRun(input: RunInput, started: number, result: RunResult): RunResult {
    record({
      event: "run",
      model,
      status: result.status,
      turns: result.turns,
      durationMs: performance.now() - started,
    })
    input.tracing?.end(result)
    return result
  }
  /** Records the failed run's metric, ends its span, then throws its error. */
  function failedRun(input: RunInput, started: number, error: unknown): never {
    record({ event: "run", model, status: "error", turns: 0, durationMs: performance.now() - started })
    input.tracing?.end({ error })
    throw error
  }

  /** Runs a new prompt after `history`; `id` names the conversation on the run span. */
  function start(
    config: LoopConfig,
    prompt: Prompt,
    history: Message[],
    input: RunInput,
    id?: string,
  ): Promise<RunResult<any>> {
    // A fresh run's transcript is one array literal, not a copy of an empty `[]` (a copy keeps
    // the small-integer elements kind, and the push of the first message deoptimizes `start`).
    const first = dialect.userMessage(prompt)
    let messages: Message[]
    if (history.length === 0) messages = [first]
    else {
      messages = history.slice()
      messages.push(first)
    }
    return measured(input, id, (traced) => runTurns(config, traced, new RunState(messages, input.scope)))
  }

  function stored(
    config: LoopConfig,
    prompt: Prompt,
    id: string,
    input: RunInput,
    checkpoint: boolean | undefined,
    commit?: AskOptions["commitSnapshot"],
  ): Promise<RunResult<any>> {
    const { store } = held
    const opts = {
      mustExist: false,
      readPending: true,
      checkpoint: checkpoint ?? store.checkpoints === true,
      commit,
    }
    return runStoredConversation(store, id, opts, ({ messages, pending }, saveSettled) => {
      // A new prompt must not silently drop the request the conversation waits on.
      if (pending) throw new ConversationPendingError(id, pending)
      // `input` is this call's own: set, not copied (a spread-then-add object is slow on Node 20).
      input.checkpoint = saveSettled
      return start(config, prompt, messages, input, id)
    })
  }

  /**
   * Repairs the halted turn (when answered) and runs on; the one resume sequence. The answer
   * is judged here (`assertAnswerFits`: id and expiry) unless it comes with the context of the
   * claim it was accepted under, where the store judged its expiry once.
   */
  /**
   * `continueRun` with the transcript given (`messages`): its own function, so a stored resume
   * never compiles these checks.
   */
  function continueGiven(cont: ContinueOptions, claimed: ResumeContext | undefined): Promise<RunResult<any>> {
    const { messages, answer, id, executor } = cont
    const claim = claimed?.claim ?? cont.claim
    // A halted run without an id resumes under the id its request carries: the retried call
    // keeps its idempotency key.
    const carried = executor || id !== undefined || !cont.pending ? undefined : runIdOf(cont.pending)
    const runId = executor?.id ?? id ?? (cont.pending ? (carried ?? LEGACY_RUN_SCOPE) : undefined)
    const signal = joinedSignal(runSignalOf(cont), claimed?.signal)
    const input = inputOf(cont.toolkit, signal, runId, cont.onEvent, cont.output, carried !== undefined)
    if (messages === undefined)
      throw new ConfigError("continueRun: `executor` needs `messages` (the engine's journal is the store)")
    if (claim !== undefined)
      throw new ConfigError("continueRun: `claim` needs a stored continue (omit `messages`)")
    if (cont.resume !== undefined)
      throw new ConfigError("continueRun: `resume` needs a stored continue (omit `messages`)")
    if (cont.checkpoint)
      throw new ConfigError("continueRun: `checkpoint` needs a stored continue (omit `messages`)")
    if (cont.commitSnapshot !== undefined)
      throw new ConfigError("continueRun: `commitSnapshot` needs a stored continue (omit `messages`)")
    if ((cont.pending === undefined) !== (answer === undefined)) {
      throw new ConfigError("continueRun needs both `pending` and `answer`, or neither")
    }
    const config = executor ? journaled(input.emit ? streamed() : plain, input, executor) : undefined
    return finished(input, continueTranscript(input, messages, cont.pending, answer, id, undefined, config))
  }

  function continueTranscript(
    input: RunInput,
    messages: Message[],
    pending: Request | undefined,
    answer: Answer | undefined,
    id: string | undefined,
    claimed: ResumeContext | undefined,
    journaledConfig?: LoopConfig,
  ): Promise<RunResult<any>> {
    const config = journaledConfig ?? (input.emit ? streamed() : plain)
    const state = new RunState(messages.slice(), input.scope)
    return resumed(config, input, state, pending, answer, id, claimed)
  }

  /**
   * `measured` and the resume's body in one async function: one frame and one await fewer
   * per resume than `measured` around a body of its own (and no closure for the body).
   */
  async function resumed(
    config: LoopConfig,
    input: RunInput,
    state: RunState,
    pending: Request | undefined,
    answer: Answer | undefined,
    id: string | undefined,
    claimed: ResumeContext | undefined,
  ): Promise<RunResult<any>> {
    const started = performance.now()
    const tracing = RunTracing.start(telemetry, endpoint, id, pending)
    if (tracing !== undefined) input.tracing = await tracing
    try {
      if (pending && answer) {
        if (claimed === undefined) assertAnswerFits(pending, answer)
        else if (answer.id !== pending.id) throw new AnswerMismatchError(answer.id, pending.id)
        let halted = resumeHaltedTurn(config, input, state, pending, answer)
        if (isThenable(halted)) halted = await halted
        if (halted) return endRun(input, started, state.result(model, "pending", { pending: halted }))
        if (input.checkpoint) await input.checkpoint(state.messages)
      }
      // Awaited, not handed back: an async function resolving with a promise pays a thenable
      // job and two more ticks.
      return endRun(input, started, await runTurns(config, input, state))
    } catch (error) {
      failedRun(input, started, error)
    }
  }

  /** `continueRun` of a stored conversation (no `messages`): the run's id is the conversation's. */
  function continueStored(
    cont: ContinueOptions,
    claimed: ResumeContext | undefined,
  ): Promise<RunResult<any>> {
    const { id, answer } = cont
    const input = inputOf(
      cont.toolkit,
      joinedSignal(runSignalOf(cont), claimed?.signal),
      id,
      cont.onEvent,
      cont.output,
    )
    if (typeof id !== "string" || id === "") {
      throw new ConfigError("continueRun needs `messages`, or the `id` of a stored conversation")
    }
    if (cont.pending !== undefined && answer === undefined) {
      throw new ConfigError("continueRun: `pending` needs an `answer`")
    }
    const claim = claimed?.claim ?? cont.claim
    const readPending = answer !== undefined && cont.pending === undefined
    const { store } = held
    const checkpoint = claimed?.checkpoint ?? cont.checkpoint ?? store.checkpoints === true
    const stored = {
      claim,
      mustExist: true,
      requestId: answer?.id,
      readPending,
      checkpoint,
      commit: cont.commitSnapshot,
    }
    const run = runStoredConversation(store, id, stored, (loaded, saveSettled) => {
      const pending = answer ? (cont.pending ?? loaded.pending) : undefined
      if (answer && !pending) {
        throw new UnknownRequestError(answer.id, `conversation ${JSON.stringify(id)} waits on no request`)
      }
      input.checkpoint = saveSettled
      return continueTranscript(input, loaded.messages, pending, answer, id, claimed)
    })
    return finished(input, run)
  }

  const client: Client = {
    run(prompt, runOpts = {}) {
      const { executor } = runOpts
      const input = inputOf(
        runOpts.toolkit,
        runSignalOf(runOpts),
        executor?.id,
        runOpts.onEvent,
        runOpts.output,
      )
      let config = input.emit ? streamed() : plain
      if (executor) config = journaled(config, input, executor)
      return finished(input, start(config, prompt, runOpts.history ?? [], input))
    },
    ask(prompt, askOpts = {}) {
      const input = inputOf(
        askOpts.toolkit,
        runSignalOf(askOpts),
        askOpts.id,
        askOpts.onEvent,
        askOpts.output,
      )
      input.onText = askOpts.onText
      const config = askOpts.onText || input.emit ? streamed() : plain
      if (askOpts.id === undefined) {
        if (askOpts.commitSnapshot !== undefined)
          return Promise.reject(
            new ConfigError("ask: `commitSnapshot` needs `id` (a run without one saves nothing)"),
          )
        return finished(input, start(config, prompt, [], input))
      }
      return finished(
        input,
        stored(config, prompt, askOpts.id, input, askOpts.checkpoint, askOpts.commitSnapshot),
      )
    },
    stream(prompt, streamOpts = {}) {
      return streamRun(streamOpts.signal, (emit, signal) => {
        const input = inputOf(streamOpts.toolkit, signal, streamOpts.id, emit, streamOpts.output)
        return finished(
          input,
          streamOpts.id === undefined
            ? start(streamed(), prompt, [], input)
            : stored(streamed(), prompt, streamOpts.id, input, undefined),
        )
      })
    },
    // Not async: an async function resolving with the run's promise adds a promise, a thenable
    // job and two ticks to every resume (DESIGN §7's resume throughput). Its throws still reject.
    continueRun(cont) {
      try {
        if (cont.answer !== undefined) assertAnswer(cont.answer)
        // The claim's context; `expiryChecked: true` is its older spelling.
        const claimed = cont.resume ?? (cont.expiryChecked === true ? {} : undefined)
        if (cont.messages !== undefined || cont.executor !== undefined) return continueGiven(cont, claimed)
        return continueStored(cont, claimed)
      } catch (error) {
        return Promise.reject(error)
      }
    },
    conversation(convOpts = {}) {
      let messages: Message[] = []
      return {
        get messages() {
          return messages
        },
        async send(prompt) {
          const result = await client.run(prompt, { toolkit: convOpts.toolkit, history: messages })
          messages = result.messages
          return result
        },
        reset() {
          messages = []
        },
      }
    },
    conversationStore: () => held.store,
    metrics: () => registry.render(),
    async translate(req) {
      if (!binding.translate)
        throw new ConfigError("translate needs a client of an HTTP endpoint (createClient)")
      const started = performance.now()
      try {
        const result = await binding.translate(req)
        const { promptTokens, completionTokens } = result.usage
        record({
          event: "llm",
          model,
          status: "ok",
          durationMs: performance.now() - started,
          promptTokens,
          completionTokens,
          turn: 1,
        })
        return result
      } catch (error) {
        failedCall(error, 1, started, record)
      }
    },
  }
  attachMetrics(client, registry)
  if (opts.store === undefined) adopters.set(client, held)
  // Tools see the client running them (`ctx.client`), set once it exists.
  plain.client = client
  return client
}

/** How each client made without `store` swaps its default memory store (see adoptConversationStore). */
const adopters = new WeakMap<Client, { store: ConversationStore }>()

/**
 * Moves a client made without `store` onto `store` before it saved any conversation: its
 * `ask`, `continueRun` and `conversationStore()` use `store` from then on, and its former
 * default store reads and writes `store` too (for whoever kept it). A door that runs
 * over a store host (the chat handlers' shorthand) uses it to give such a client a durable
 * memory store, so its chats keep living in `client.conversationStore()`.
 *
 * @returns `true` when the client now uses `store` (or already did); `false` when it was
 *   made with a store of its own, already saved a conversation in its default one, or is not
 *   a client of `createClient` / `createInProcessClient`.
 * @example
 * const client = createClient({ baseUrl, model, apiKey })
 * adoptConversationStore(client, createMemoryStore()) // createMemoryStore: @toolnexus/durable
 */
export function adoptConversationStore(client: Client, store: ConversationStore): boolean {
  if (client.conversationStore() === store) return true
  const held = adopters.get(client)
  // Once, and only while the default store holds nothing: later it would hide what it keeps.
  if (held === undefined || !(held.store instanceof MemoryStore) || !MemoryStore.moveTo(held.store, store))
    return false
  held.store = store
  adopters.delete(client)
  return true
}

/**
 * A run's inputs. `id` is the run's (a conversation's, an executor's, one a halted request
 * carried back); without it one is generated. `carried`: `id` is a generated one read back.
 */
function inputOf(
  toolkit: Toolkit | undefined,
  signal: RunSignal | undefined,
  id: string | undefined,
  onEvent: StreamListener | undefined,
  output: OutputSchema | undefined,
  carried = false,
): RunInput {
  return {
    toolkit,
    signal,
    scope: id ?? newRunId(),
    generatedId: carried || id === undefined,
    emit: onEvent ? guarded(onEvent) : undefined,
    tracing: undefined,
    output: output === undefined ? undefined : outputSpec(output),
  }
}

/** A run's signal: the caller's, the claim's, or both joined (only when both are given). */
function joinedSignal(outer: RunSignal | undefined, claim: AbortSignal | undefined): RunSignal | undefined {
  if (outer === undefined || claim === undefined) return outer ?? claim
  return AbortSignal.any([realSignal(outer) as AbortSignal, claim])
}

/**
 * A run's `done` event comes last: after the run, and after its save for a stored run. Not
 * async: a run without listeners hands back its own promise (no wrapper promise, thenable job
 * and two ticks per run).
 */
function finished<R extends RunResult>(input: RunInput, run: Promise<R>): Promise<R> {
  const { emit } = input
  if (!emit) return run
  return run.then((result) => {
    emit({ type: "done", result })
    return result
  })
}

/** A listener's throw must not break the run it observes. */
function guarded(listener: StreamListener): StreamListener {
  return (ev) => {
    try {
      listener(ev)
    } catch {
      // Ignored by contract: observers cannot change a run.
    }
  }
}

/**
 * Bridges the loop's event callback to an async iterable. The run starts on the first pull;
 * leaving the loop early (`break`, `return`) aborts it, so no tool or request runs unseen.
 */
function streamRun(
  outer: AbortSignal | undefined,
  run: (emit: (ev: StreamEvent) => void, signal: AbortSignal) => Promise<RunResult>,
): AsyncIterable<StreamEvent> {
  return {
    [Symbol.asyncIterator]() {
      const controller = new AbortController()
      const signal = outer ? AbortSignal.any([outer, controller.signal]) : controller.signal
      const queue: StreamEvent[] = []
      let wake: (() => void) | undefined
      let finished = false
      let failure: { error: unknown } | undefined
      const push = (ev: StreamEvent) => {
        queue.push(ev)
        wake?.()
      }
      // The run itself emits `done` as its last event.
      run(push, signal).then(
        () => {
          finished = true
          wake?.()
        },
        (error) => {
          failure = { error }
          finished = true
          wake?.()
        },
      )
      return {
        async next(): Promise<IteratorResult<StreamEvent>> {
          for (;;) {
            const ev = queue.shift()
            if (ev) return { value: ev, done: false }
            if (failure) throw failure.error
            if (finished) return { value: undefined, done: true }
            await new Promise<void>((resolve) => {
              wake = resolve
            })
            wake = undefined
          }
        },
        async return(): Promise<IteratorResult<StreamEvent>> {
          if (!finished) controller.abort()
          return { value: undefined, done: true }
        },
      }
    },
  }
}
