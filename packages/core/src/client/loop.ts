import type { ApprovalGrant, GrantQuery } from "../host/approval-grants.js"
import type {
  Dialect,
  FinishReason,
  ModelToolCall,
  ModelTurn,
  TranscriptToolResult,
} from "../providers/model-turn.js"
import type { OutputFormat } from "../providers/wire-format.js"
import type { Toolkit } from "../tools/toolkit.js"
import type { Answer, Message, Request, Tool, ToolModel, ToolResult, Usage } from "../types.js"
import type { Hooks } from "./hooks.js"
import type { MetricEvent } from "./metrics.js"
import type { RunTracing } from "../telemetry/run-tracing.js"
import type { RunResult, StreamEvent, ToolCallRecord } from "./run-result.js"
import { type OutputSpec, correctionPrompt } from "./structured-output.js"
import { relayOutcomes, relayRequest } from "../suspension/relay-turn.js"
import { type CallEnv, type CallOutcome, executeCall } from "./tool-calls.js"
import { abortErrorOf } from "./transport.js"
import type { RunJournal } from "./executor.js"
import type { CompactionOptions } from "../compaction/compact-messages.js"
import { compactTranscript } from "../compaction/compact-transcript.js"
import type { RunSignal } from "../internal/run-abort.js"
import { isThenable } from "../internal/thenable.js"
import { stampRunId } from "./run-id.js"

/** @internal One model call as the loop sees it, whatever the transport. */
export interface ModelCall {
  messages: readonly Message[]
  tools: Toolkit | Tool[] | undefined
  turn: number
  signal: RunSignal | undefined
  onText: ((delta: string) => void) | undefined
  onRefusal: ((delta: string) => void) | undefined
  /** Reasoning deltas (thinking, reasoning summaries), streamed as `reasoning` events. */
  onReasoning?: ((delta: string) => void) | undefined
  /** Structured output: the schema the final answer must match. */
  output: OutputFormat | undefined
  /** Ask with a streaming request (someone listens to deltas). */
  stream: boolean
  /** The toolkit's skill catalog, appended to the system prompt (§16). */
  skillsPrompt?: string | undefined
}

/** @internal The client-level settings of the loop. */
export interface LoopConfig {
  model: string
  dialect: Dialect
  /** Whether model calls stream; the per-run listeners decide what they receive. */
  stream: boolean
  callModel(call: ModelCall): Promise<ModelTurn>
  hooks: Hooks | undefined
  waitFor: ((req: Request) => Answer | Promise<Answer>) | undefined
  maxTurns: number
  /** Checked before every LLM turn: a limit name stops the run as `incomplete`. */
  beforeTurn: (() => string | undefined | Promise<string | undefined>) | undefined
  record(ev: MetricEvent): void
  /** Compacts the working transcript before each LLM request (§16). */
  compaction?: CompactionOptions | undefined
  /** The client's `fetch` seam, if it was given one (tools get it as `ctx.fetch`). */
  fetch?: typeof fetch | undefined
  /** The store's approval-grant lookup, when it keeps grants (§19). */
  grants?: ((query: GrantQuery) => Promise<ApprovalGrant | undefined>) | undefined
  /** The client running the loop (tools get it as `ctx.client`). */
  client?: ToolModel | undefined
  /**
   * The model call unmeasured and the `llm` metric's two ends: a turn without hooks on the LLM
   * request, tracing or executor measures in the loop's own frame, not through `callModel`'s
   * `then` layer (its promise, reaction and closures, ~0.4 KB a turn). Absent: `callModel` measures.
   */
  meter?: LlmMeter | undefined
}

/** @internal See {@link LoopConfig.meter}. */
export interface LlmMeter {
  call(call: ModelCall): Promise<ModelTurn>
  /** Records a reply's `llm` metric; a metric listener that throws fails the call, recorded as failed. */
  ok(reply: ModelTurn, turn: number, started: number): void
  /** Records a failed request's `llm` metric, then throws `error`. */
  failed(error: unknown, turn: number, started: number): never
}

/** @internal The per-run inputs. */
export interface RunInput {
  toolkit: Toolkit | undefined
  signal: RunSignal | undefined
  /** The run's id: the stable half of its calls' idempotency keys, and the result's `runId`. */
  scope: string
  /**
   * `scope` is an id the client generated for a run given none (or read back from the halted
   * request's `data.runId` on its resume): a request the run halts on carries it as `data.runId`.
   */
  generatedId: boolean
  emit: ((ev: StreamEvent) => void) | undefined
  /** Text deltas of every turn (`ask`'s `onText`), besides the `text` events of `emit`. */
  onText?: ((delta: string) => void) | undefined
  /**
   * Saves the transcript once a turn's calls have settled, before the next LLM request (the
   * stored path's tool-result checkpoint); `undefined` when checkpoints are off.
   */
  checkpoint?: ((messages: Message[]) => Promise<void>) | undefined
  /** The run's spans, while tracing is on. */
  tracing: RunTracing | undefined
  /** Structured output requested for this run. */
  output?: OutputSpec | undefined
  /** Under a durable executor: turns and calls are its journaled steps. */
  journal?: RunJournal | undefined
}

/** Finish reasons that cut a turn short, and the limit an incomplete result names. */
const CUT_OFF: Readonly<Record<string, string>> = {
  length: "maxOutputTokens",
  content_filter: "contentFilter",
}

/** @internal The mutable state of one run; becomes the RunResult. */
export class RunState {
  readonly messages: Message[]
  /** The run's id (see `RunResult.runId`). */
  readonly runId: string
  readonly toolCalls: ToolCallRecord[] = []
  readonly usage: Usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 }
  turns = 0
  text = ""
  finishReason: FinishReason | undefined
  refusal: string | undefined
  output: unknown
  /** Whether the one corrective turn for an invalid structured answer was used. */
  corrected = false

  constructor(messages: Message[], runId: string) {
    this.messages = messages
    this.runId = runId
  }

  result(
    model: string,
    status: RunResult["status"],
    extra?: { pending?: Request; limit?: string },
  ): RunResult {
    const result: RunResult = {
      status,
      text: this.text,
      // A copy of exact length: the working array's growth slack (17 slots for a 3-message
      // run) would otherwise stay allocated for as long as the caller keeps the result.
      messages: this.messages.slice(),
      toolCalls: this.toolCalls,
      toolCallCount: this.toolCalls.length,
      turns: this.turns,
      model,
      usage: { ...this.usage },
      runId: this.runId,
    }
    if (extra?.limit !== undefined) result.limit = extra.limit
    if (extra?.pending !== undefined) result.pending = extra.pending
    if (this.finishReason !== undefined) result.finishReason = this.finishReason
    if (this.refusal !== undefined) result.refusal = this.refusal
    if (this.output !== undefined) result.output = this.output
    return result
  }
}

/** @internal Asks the model and runs tools until a final answer, a halt or a limit. */
export async function runTurns(config: LoopConfig, input: RunInput, state: RunState): Promise<RunResult> {
  const { model } = config
  const emit = input.emit
  // The listeners are the same for every turn of the run.
  const onText = textListener(emit, input.onText)
  const onRefusal = emit ? (delta: string) => emit({ type: "refusal", delta }) : undefined
  const onReasoning = emit ? (delta: string) => emit({ type: "reasoning", delta }) : undefined
  for (;;) {
    if (input.signal?.aborted) throw abortErrorOf(input.signal)
    if (state.turns >= config.maxTurns) return state.result(model, "incomplete", { limit: "maxTurns" })
    let limit = config.beforeTurn?.()
    if (isThenable(limit)) limit = await limit
    if (limit !== undefined) return state.result(model, "incomplete", { limit })
    const turn = state.turns + 1
    if (config.compaction) await compactTurn(config, config.compaction, input, state, turn)
    let reply: ModelTurn
    // A journaled turn replays unasked: its hooks, request and events happened once, before.
    let replayed = false
    if (input.journal) {
      const journaled = await input.journal.llm(turn, () =>
        askModel(config, input, state, turn, onText, onRefusal, onReasoning),
      )
      reply = journaled.reply
      replayed = journaled.replayed
    } else if (
      config.meter !== undefined &&
      !input.tracing &&
      !config.hooks?.beforeLLM &&
      !config.hooks?.afterLLM
    ) {
      const meter: LlmMeter = config.meter
      const call = modelCall(
        config,
        input,
        state.messages,
        input.toolkit,
        turn,
        onText,
        onRefusal,
        onReasoning,
      )
      const started = performance.now()
      try {
        reply = await meter.call(call)
      } catch (error) {
        meter.failed(error, turn, started)
      }
      meter.ok(reply, turn, started)
    } else reply = await askModel(config, input, state, turn, onText, onRefusal, onReasoning)
    recordTurn(state, reply, turn)
    if (emit && !replayed) {
      emit({ type: "usage", usage: { ...state.usage } })
      emit({ type: "turn", turn, finishReason: reply.finishReason })
    }
    // Anthropic `pause_turn`: the turn is sent back as it is, and the model continues it.
    if (reply.finishReason === "pause") continue
    const cutOff = CUT_OFF[reply.finishReason]
    if (cutOff !== undefined) {
      skipCalls(config, state, reply.toolCalls)
      return state.result(model, "incomplete", { limit: cutOff })
    }
    if (reply.toolCalls.length === 0) {
      const answered = finalAnswer(config, input, state, reply)
      const ended = isThenable(answered) ? await answered : answered
      if (ended) return ended
      continue
    }
    if (emit && !replayed)
      for (const c of reply.toolCalls) emit({ type: "tool_call", id: c.id, name: c.name, args: c.args ?? {} })

    let halted = settleTurn(config, input, state, reply.toolCalls, turn, undefined)
    if (isThenable(halted)) halted = await halted
    if (halted) return state.result(model, "pending", { pending: halted })
    if (input.checkpoint) await input.checkpoint(state.messages)
  }
}

/** Compacts the transcript before turn `turn` (under an executor, as a journaled step). */
function compactTurn(
  config: LoopConfig,
  compaction: CompactionOptions,
  input: RunInput,
  state: RunState,
  turn: number,
): Promise<void> {
  const journal = input.journal
  return compactTranscript(
    compaction,
    config.dialect,
    state.messages,
    journal && ((decide) => journal.executor.step(`compact:${turn}`, decide)),
  )
}

/**
 * One LLM request of the run: beforeLLM, the request (traced), afterLLM. Without hooks or
 * tracing it hands back the request's own promise (no async frame of its own per turn).
 */
function askModel(
  config: LoopConfig,
  input: RunInput,
  state: RunState,
  turn: number,
  onText: ((delta: string) => void) | undefined,
  onRefusal: ((delta: string) => void) | undefined,
  onReasoning: ((delta: string) => void) | undefined,
): Promise<ModelTurn> {
  const { hooks } = config
  if (hooks?.beforeLLM || hooks?.afterLLM || input.tracing)
    return hookedAsk(config, input, state, turn, onText, onRefusal, onReasoning)
  return config.callModel(
    modelCall(config, input, state.messages, input.toolkit, turn, onText, onRefusal, onReasoning),
  )
}

async function hookedAsk(
  config: LoopConfig,
  input: RunInput,
  state: RunState,
  turn: number,
  onText: ((delta: string) => void) | undefined,
  onRefusal: ((delta: string) => void) | undefined,
  onReasoning: ((delta: string) => void) | undefined,
): Promise<ModelTurn> {
  const { model, hooks } = config
  let messages: readonly Message[] = state.messages
  let tools: Toolkit | Tool[] | undefined = input.toolkit
  if (hooks?.beforeLLM) {
    const changed = await hooks.beforeLLM({ messages, tools: input.toolkit?.tools() ?? [], model, turn })
    if (changed?.messages) messages = changed.messages
    if (changed?.tools) tools = changed.tools
  }
  const call = modelCall(config, input, messages, tools, turn, onText, onRefusal, onReasoning)
  const reply = input.tracing
    ? await input.tracing.chat(messages, () => config.callModel(call))
    : await config.callModel(call)
  if (hooks?.afterLLM) await hooks.afterLLM({ response: reply, model, turn })
  return reply
}

function modelCall(
  config: LoopConfig,
  input: RunInput,
  messages: readonly Message[],
  tools: Toolkit | Tool[] | undefined,
  turn: number,
  onText: ((delta: string) => void) | undefined,
  onRefusal: ((delta: string) => void) | undefined,
  onReasoning: ((delta: string) => void) | undefined,
): ModelCall {
  return {
    messages,
    tools,
    turn,
    signal: input.signal,
    onText,
    onRefusal,
    onReasoning,
    skillsPrompt: input.toolkit?.skillsPrompt?.(),
    output: input.output?.format,
    stream: config.stream,
  }
}

/** The run's text listener: `text` events for `emit`, and `ask`'s `onText`, or both. */
function textListener(
  emit: ((ev: StreamEvent) => void) | undefined,
  onText: ((delta: string) => void) | undefined,
): ((delta: string) => void) | undefined {
  if (!emit) return onText
  if (!onText) return (delta) => emit({ type: "text", delta })
  return (delta) => {
    emit({ type: "text", delta })
    onText(delta)
  }
}

/** Adds a model turn to the run: usage, transcript, text (joined across a paused turn), reason. */
function recordTurn(state: RunState, reply: ModelTurn, turn: number): void {
  const continued = state.finishReason === "pause"
  state.turns = turn
  state.usage.promptTokens += reply.usage.promptTokens
  state.usage.completionTokens += reply.usage.completionTokens
  state.usage.totalTokens += reply.usage.promptTokens + reply.usage.completionTokens
  state.text = continued ? state.text + reply.text : reply.text
  state.finishReason = reply.finishReason
  state.refusal = reply.refusal
  for (const m of reply.messages) state.messages.push(m)
}

/**
 * Ends the run on a final answer, unless structured output was asked for and the answer does
 * not match: then one corrective user turn is added (undefined: go on), and a second miss
 * ends the run `incomplete` with `limit: "invalidOutput"`. A refusal is final as it is.
 * Without structured output the result comes back as it is, not in a promise: every run that
 * ends on an answer would pay an async frame and a tick for it.
 */
function finalAnswer(
  config: LoopConfig,
  input: RunInput,
  state: RunState,
  reply: ModelTurn,
): RunResult | Promise<RunResult | undefined> {
  if (!input.output || reply.refusal !== undefined) return state.result(config.model, "done")
  return checkedAnswer(config, input.output, state, reply)
}

/** `finalAnswer` with structured output: the answer is checked against the schema. */
async function checkedAnswer(
  config: LoopConfig,
  output: OutputSpec,
  state: RunState,
  reply: ModelTurn,
): Promise<RunResult | undefined> {
  const checked = await output.check(reply.text)
  if (checked.ok) {
    state.output = checked.value
    return state.result(config.model, "done")
  }
  if (state.corrected) return state.result(config.model, "incomplete", { limit: "invalidOutput" })
  state.corrected = true
  state.messages.push(config.dialect.userMessage(correctionPrompt(checked.problem)))
  return undefined
}

/**
 * The calls of a turn cut off by a limit are never run; each gets an error result so the
 * transcript stays valid for the next request and the model learns why.
 */
function skipCalls(config: LoopConfig, state: RunState, calls: ModelToolCall[]): void {
  if (calls.length === 0) return
  const output = `not executed: the reply was cut off (${state.finishReason}) before the call was complete`
  const results = calls.map((c) => ({ id: c.id, output, isError: true }))
  for (const m of config.dialect.toolResultMessages(results)) state.messages.push(m)
}

/** @internal An outcome decided before the turn is settled: a kept result, or the answer's retry. */
export type Preset = (env: CallEnv) => Promise<CallOutcome> | CallOutcome

/** @internal The presets of a turn's calls, by call index (no `Map` per resumed turn). */
export type Presets = (Preset | undefined)[]

/** @internal The environment tool calls of one turn run in. */
export function callEnv(config: LoopConfig, input: RunInput, turn: number): CallEnv {
  return {
    toolkit: input.toolkit,
    hooks: config.hooks,
    // The run's own waitFor first, then the toolkit's (§16).
    waitFor: config.waitFor ?? input.toolkit?.waitFor,
    record: config.record,
    signal: input.signal,
    scope: input.scope,
    turn,
    tracing: input.tracing,
    fetch: config.fetch,
    grants: config.grants,
    client: config.client,
  }
}

/**
 * @internal Settles every call of one assistant turn and writes their results into the
 * transcript in call order. Calls run concurrently; relay calls ride one request. Returns
 * the request the run halts on, if any: the first suspension in call order. Not async: a turn
 * whose calls settle synchronously (no hooks, synchronous tools, no relay, no executor) is
 * recorded at once, with no promise, async frame or await for the caller (~0.4 KB a turn);
 * the caller awaits only a thenable. A failure there is thrown, not returned as a rejection.
 */
export function settleTurn(
  config: LoopConfig,
  input: RunInput,
  state: RunState,
  calls: ModelToolCall[],
  turn: number,
  presets: Presets | undefined,
): Request | undefined | Promise<Request | undefined> {
  const env = callEnv(config, input, turn)
  if (input.journal) return settleJournaled(config, input, state, calls, presets, env, input.journal)
  const running: (Promise<CallOutcome> | CallOutcome | undefined)[] = []
  let relayCalls: ModelToolCall[] | undefined
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i] as ModelToolCall
    const preset = presets?.[i]
    if (preset) running.push(preset(env))
    else if (!call.argumentsError && input.toolkit?.get(call.name)?.source === "relay") {
      running.push(undefined) // settled below, all relay calls on one request
      if (relayCalls === undefined) relayCalls = [call]
      else relayCalls.push(call)
    } else running.push(executeCall(env, call))
  }
  if (relayCalls !== undefined || running.some(isThenable))
    return settleLater(config, input, state, calls, running, env, relayCalls, turn)
  // Synchronous tools settled already: no Promise.all, no tick.
  if (input.signal?.aborted) throw abortErrorOf(input.signal)
  return recordOutcomes(config, input, state, calls, running as (CallOutcome | undefined)[], undefined)
}

/** `settleTurn` under an executor: the calls are journaled steps, run in call order; they never halt. */
async function settleJournaled(
  config: LoopConfig,
  input: RunInput,
  state: RunState,
  calls: ModelToolCall[],
  presets: Presets | undefined,
  env: CallEnv,
  journal: RunJournal,
): Promise<Request | undefined> {
  const outcomes = await journal.settle(env, calls, presets, state.messages)
  if (input.signal?.aborted) throw abortErrorOf(input.signal)
  return recordOutcomes(config, input, state, calls, outcomes, undefined)
}

/** `settleTurn` when a call settles later (an async tool or hook) or relay calls ride a request. */
async function settleLater(
  config: LoopConfig,
  input: RunInput,
  state: RunState,
  calls: ModelToolCall[],
  running: (Promise<CallOutcome> | CallOutcome | undefined)[],
  env: CallEnv,
  relayCalls: ModelToolCall[] | undefined,
  turn: number,
): Promise<Request | undefined> {
  let relay: { request: Request; outcomes?: Map<string, CallOutcome> } | undefined
  if (relayCalls !== undefined) {
    relay = env.waitFor ? await relayAnswered(env, input, relayCalls) : relayParked(config, relayCalls, turn)
  }
  // A turn of one call (an approval's) awaits it alone: Promise.all's result array and
  // per-element closures are ~400 B a turn.
  const outcomes = !running.some(isThenable)
    ? (running as (CallOutcome | undefined)[])
    : running.length === 1
      ? [await running[0]]
      : await Promise.all(running)
  if (input.signal?.aborted) throw abortErrorOf(input.signal)
  return recordOutcomes(config, input, state, calls, outcomes, relay)
}

/**
 * Writes the settled calls of a turn into the run: results in call order, call records, events.
 * (Apart from `settleTurn`: V8 optimizes a function once the bytecode it has run adds up, and
 * the two halves, run once per turn each, get there each at half the pace.)
 */
function recordOutcomes(
  config: LoopConfig,
  input: RunInput,
  state: RunState,
  calls: ModelToolCall[],
  outcomes: (CallOutcome | undefined)[],
  relay: { request: Request; outcomes?: Map<string, CallOutcome> } | undefined,
): Request | undefined {
  let halted: Request | undefined
  const results: TranscriptToolResult[] = []
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i] as ModelToolCall
    const outcome = outcomes[i] ?? relay?.outcomes?.get(call.id)
    let result: ToolResult
    let suspended = false
    if (outcome && !outcome.request) result = outcome.result
    else if (halted)
      continue // only the first suspension in call order gets a result
    else {
      halted = haltedOn(input, (outcome?.request ?? relay?.request) as Request)
      suspended = true
      result = suspendedResult(outcome, halted)
    }
    results.push({ id: call.id, output: result.output, isError: result.isError })
    if (outcome?.kept) continue
    const record: ToolCallRecord = {
      id: call.id,
      name: call.name,
      args: outcome?.args ?? call.args ?? {},
      output: result.output,
      isError: result.isError,
    }
    if (result.metadata !== undefined) record.metadata = result.metadata
    state.toolCalls.push(record)
    // A suspension streams as `pending` alone: it is not a failed tool call.
    if (!suspended && !outcome?.replayed)
      input.emit?.({
        type: "tool_result",
        id: call.id,
        name: call.name,
        output: result.output,
        isError: result.isError,
      })
  }
  if (halted) input.emit?.({ type: "pending", request: halted })
  for (const m of config.dialect.toolResultMessages(results)) state.messages.push(m)
  return halted
}

// The suspension's two steps, out of `recordOutcomes`: a resumed turn that settles (a cold
// resume's, before its first request) compiles neither.

/** The request a turn halts on, stamped with the run's generated id and traced. */
function haltedOn(input: RunInput, request: Request): Request {
  let halted = request
  if (input.generatedId) halted = stampRunId(halted, input.scope)
  if (input.tracing) halted = input.tracing.suspend(halted)
  return halted
}

/** The result of the call a turn halts on: the tool's output (or the prompt) with the request. */
function suspendedResult(outcome: CallOutcome | undefined, halted: Request): ToolResult {
  return {
    output: outcome?.result.output ?? halted.prompt,
    isError: true,
    metadata: { ...outcome?.result.metadata, pending: halted },
  }
}

/** The relay calls of a turn answered in process (`waitFor`): one request for all of them. */
async function relayAnswered(
  env: CallEnv,
  input: RunInput,
  relayCalls: ModelToolCall[],
): Promise<{ request: Request; outcomes: Map<string, CallOutcome> }> {
  const request = relayRequest(relayCalls)
  input.tracing?.asked(request)
  const answer = await (env.waitFor as NonNullable<CallEnv["waitFor"]>)(request)
  const outcomes = relayOutcomes(env, request, relayCalls, answer)
  return { request, outcomes: new Map(outcomes.map((o) => [o.call.id, o])) }
}

/** The relay calls of a turn that parks on their request (no `waitFor`), each metered as pending. */
function relayParked(config: LoopConfig, relayCalls: ModelToolCall[], turn: number): { request: Request } {
  for (const c of relayCalls) {
    config.record({ event: "tool", tool: c.name, source: "relay", outcome: "pending", durationMs: 0, turn })
  }
  return { request: relayRequest(relayCalls) }
}
