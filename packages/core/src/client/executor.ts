import { ToolnexusError } from "../errors.js"
import type { ModelToolCall, ModelTurn } from "../providers/model-turn.js"
import { pendingOf } from "../suspension/pending.js"
import type { Answer, DurableExecutor, Message, Request, ToolResult, WaitContext } from "../types.js"
import type { MetricEvent } from "./metrics.js"
import type { StreamEvent } from "./run-result.js"
import { declined, hearsDecline, stampRequest } from "../suspension/call-suspension.js"
import { relayOutcomes, relayRequest } from "../suspension/relay-turn.js"
import { type CallEnv, type CallOutcome, executeCall } from "./tool-calls.js"

/**
 * The executor a sub-agent handle's runs take: step names prefixed by `<handle id>/` (by
 * `<handle id>@<run>/` for the handle's second and later runs, so each run's `llm:1` is its
 * own), the id `<run id>/<handle id>` (idempotency keys differ per handle), and the engine's
 * wait, or `opts.wait` (the agents runtime's escalation atop that wait).
 */
export function handleExecutor(
  executor: DurableExecutor,
  handleId: string,
  opts: { run?: number; wait?: (request: Request) => Promise<Answer> } = {},
): DurableExecutor {
  const prefix = opts.run === undefined || opts.run <= 1 ? `${handleId}/` : `${handleId}@${opts.run}/`
  const wait = opts.wait ?? ((request: Request) => executor.wait(request))
  const scoped: DurableExecutor = {
    id: `${executor.id}/${handleId}`,
    step: (name, fn) => executor.step(`${prefix}${name}`, fn),
    wait,
  }
  if (executor.maxStepBytes === undefined) return scoped
  return { ...scoped, maxStepBytes: executor.maxStepBytes }
}

/** The default `maxStepBytes`: 1 MiB. */
export const DEFAULT_MAX_STEP_BYTES = 1024 * 1024

/** An LLM turn too large to be a journal step: the run cannot go on durably. */
export class StepTooLargeError extends ToolnexusError {
  /**
   * Always `"StepTooLargeError"`: lets a caller test `err.name === "StepTooLargeError"` (`code` is
   * `"TNX_STEP_TOO_LARGE"`).
   */
  override readonly name = "StepTooLargeError"
  static override readonly family = "TNX_STEP_TOO_LARGE"
  /** The step's name, e.g. `llm:3`. */
  readonly step: string
  /** The step value's size, in bytes of its JSON. */
  readonly bytes: number
  /** The executor's `maxStepBytes`. */
  readonly limit: number
  constructor(step: string, bytes: number, limit: number) {
    super(
      "TNX_STEP_TOO_LARGE",
      `step ${step} is ${bytes} bytes, over the executor's maxStepBytes of ${limit}`,
    )
    this.step = step
    this.bytes = bytes
    this.limit = limit
  }
}

/** What an LLM step journals: the turn as parsed and the metric records it produced. */
interface LlmStep {
  turn: ModelTurn
  metrics: MetricEvent[]
}

/** What a tool step journals: the arguments it ran with, its result, its metric records. */
interface ToolStep {
  args: Record<string, unknown>
  result: ToolResult
  kept?: true
  metrics: MetricEvent[]
}

/**
 * @internal One run's bridge to a {@link DurableExecutor}: journals LLM turns and tool calls as
 * steps, waits through the engine, and replays journaled steps' metric records as `replayed`.
 * Calls of a turn run one after another in call order (a journal is ordered).
 */
export class RunJournal {
  readonly executor: DurableExecutor
  readonly maxBytes: number
  readonly #record: (ev: MetricEvent) => void
  readonly #waitFor: ((req: Request) => Answer | Promise<Answer>) | undefined
  readonly #emit: ((ev: StreamEvent) => void) | undefined
  /** The metric records of the step executing now (steps of a run never overlap). */
  #capture: MetricEvent[] | undefined
  /** The conversation of the turn whose calls settle now (for the engine's wait). */
  #transcript: readonly Message[] | undefined

  constructor(opts: {
    executor: DurableExecutor
    record: (ev: MetricEvent) => void
    waitFor: ((req: Request) => Answer | Promise<Answer>) | undefined
    emit: ((ev: StreamEvent) => void) | undefined
  }) {
    this.executor = opts.executor
    this.maxBytes = opts.executor.maxStepBytes ?? DEFAULT_MAX_STEP_BYTES
    this.#record = opts.record
    this.#waitFor = opts.waitFor
    this.#emit = opts.emit
  }

  /** The run's metric sink: a record made inside a step is journaled with it. */
  readonly record = (ev: MetricEvent): void => {
    this.#capture?.push(ev)
    this.#record(ev)
  }

  /**
   * Asks the model (beforeLLM, the request, afterLLM: `ask`) once per turn number; a replayed
   * turn comes from the journal and `replayed` is true.
   *
   * @throws StepTooLargeError when the turn's JSON is over `maxStepBytes`.
   */
  async llm(turn: number, ask: () => Promise<ModelTurn>): Promise<{ reply: ModelTurn; replayed: boolean }> {
    const name = `llm:${turn}`
    let replayed = true
    const value = await this.executor.step<LlmStep>(name, async () => {
      replayed = false
      const metrics = await this.#captured(ask)
      const step: LlmStep = { turn: metrics.value, metrics: metrics.records }
      const bytes = jsonBytes(step)
      if (bytes === undefined || bytes > this.maxBytes)
        throw new StepTooLargeError(name, bytes ?? -1, this.maxBytes)
      return step
    })
    if (replayed) this.#replay(value.metrics)
    return { reply: value.turn, replayed }
  }

  /**
   * Settles the calls of one turn, each a step in call order; a suspension waits through the
   * engine and its retry is a step of its own. Relay calls ride one request (`relay:<n>`).
   * Agent-source calls are not steps: their child's turns and calls are.
   */
  async settle(
    env: CallEnv,
    calls: readonly ModelToolCall[],
    presets: (((env: CallEnv) => Promise<CallOutcome> | CallOutcome) | undefined)[] | undefined,
    transcript?: readonly Message[],
  ): Promise<CallOutcome[]> {
    this.#transcript = transcript
    // Inside a step the suspension rule never waits (a step cannot hold a wait); `ctx.resolve`
    // still asks the client's own `waitFor`, whose answer is journaled with the step.
    const stepEnv: CallEnv = { ...env, waitFor: undefined, resolveWith: this.#waitFor, record: this.record }
    const outcomes: CallOutcome[] = new Array(calls.length)
    const relay: number[] = []
    for (let i = 0; i < calls.length; i++) {
      const call = calls[i] as ModelToolCall
      const preset = presets?.[i]
      const source = env.toolkit?.get(call.name)?.source
      if (source === "agent") {
        const waitFor = (req: Request) => this.answer(req)
        // The sub-agent's own runtime (asTool) journals under this call's name.
        const executor = handleExecutor(this.executor, `tool:${env.turn}:${call.id}`, { wait: waitFor })
        const agentEnv: CallEnv = { ...env, waitFor, record: this.record, executor }
        outcomes[i] = await (preset ? preset(agentEnv) : executeCall(agentEnv, call))
      } else if (preset) {
        const name = `tool:${env.turn}:${call.id}:answer`
        outcomes[i] = await this.#call(stepEnv, call, name, () => preset(stepEnv))
      } else if (!call.argumentsError && source === "relay") relay.push(i)
      else {
        const name = `tool:${env.turn}:${call.id}`
        outcomes[i] = await this.#call(stepEnv, call, name, () => executeCall(stepEnv, call))
      }
    }
    if (relay.length > 0) {
      const relayCalls = relay.map((i) => calls[i] as ModelToolCall)
      const settled = await this.#relay(stepEnv, relayCalls)
      relay.forEach((at, k) => {
        outcomes[at] = settled[k] as CallOutcome
      })
    }
    return outcomes
  }

  /**
   * The decision on `request`: the client's own `waitFor` as a step, else the engine's wait,
   * told the conversation so far.
   */
  answer(request: Request): Promise<Answer> {
    this.#emit?.({ type: "pending", request })
    const waitFor = this.#waitFor
    if (!waitFor)
      return this.#transcript === undefined
        ? this.executor.wait(request)
        : this.executor.wait(request, { messages: this.#transcript.slice() })
    return this.executor.step(`answer:${request.id}`, async () => waitFor(request))
  }

  /** One call: its first execution, then, while it suspends, the wait and the retry. */
  async #call(
    env: CallEnv,
    call: ModelToolCall,
    name: string,
    first: () => Promise<CallOutcome> | CallOutcome,
  ): Promise<CallOutcome> {
    let outcome = await this.#toolStep(call, name, first)
    while (outcome.request) {
      const request = outcome.request
      const answer = await this.answer(request)
      const args = outcome.args
      name = `${name}:answer`
      if (answer.ok || hearsDecline(env.toolkit?.get(call.name)?.source ?? "custom")) {
        const retried: ModelToolCall = { id: call.id, name: call.name, arguments: call.arguments, args }
        // A declined call needs the request to know which remote work to end.
        const told = answer.ok ? undefined : request
        outcome = await this.#toolStep(call, name, () => executeCall(env, retried, answer, told))
      } else outcome = await this.#toolStep(call, name, () => declinedCall(env, call, args, request, answer))
    }
    return outcome
  }

  async #toolStep(
    call: ModelToolCall,
    name: string,
    run: () => Promise<CallOutcome> | CallOutcome,
  ): Promise<CallOutcome> {
    let replayed = true
    const value = await this.executor.step<ToolStep>(name, async () => {
      replayed = false
      const { value: outcome, records } = await this.#captured(async () => run())
      const step: ToolStep = { args: outcome.args, result: outcome.result, metrics: records }
      if (outcome.kept) step.kept = true
      return this.#bounded(step, name)
    })
    if (replayed) this.#replay(value.metrics)
    const outcome: CallOutcome = { call, args: value.args, result: value.result }
    if (value.kept) outcome.kept = true
    if (replayed) outcome.replayed = true
    // The request is the tool's, stamped as the loop always stamps it: a replay rebuilds it.
    const suspended = pendingOf(value.result)
    if (suspended) outcome.request = stampRequest(suspended, call.id, call.name, value.args)
    return outcome
  }

  async #relay(env: CallEnv, calls: ModelToolCall[]): Promise<CallOutcome[]> {
    const request = await this.executor.step(`relay:${env.turn}`, async () => relayRequest(calls))
    const answer = await this.answer(request)
    let replayed = true
    const value = await this.executor.step(`relay:${env.turn}:answer`, async () => {
      replayed = false
      const { value: outcomes, records } = await this.#captured(async () =>
        relayOutcomes(env, request, calls, answer),
      )
      return { results: outcomes.map((o) => o.result), metrics: records }
    })
    if (replayed) this.#replay(value.metrics)
    return calls.map((call, k) => {
      const outcome: CallOutcome = { call, args: call.args ?? {}, result: value.results[k] as ToolResult }
      if (replayed) outcome.replayed = true
      return outcome
    })
  }

  /** A tool step over the limit, or not plain JSON, journals an error result that says why. */
  #bounded(step: ToolStep, name: string): ToolStep {
    const problem = notPlainJson(step.result, "result") ?? notPlainJson(step.args, "args")
    if (problem !== undefined) {
      return {
        ...step,
        result: { output: `tool result of ${name} is not plain JSON: ${problem}`, isError: true },
      }
    }
    const bytes = jsonBytes(step) as number
    if (bytes <= this.maxBytes) return step
    return {
      ...step,
      result: {
        output: `tool result of ${name} is ${bytes} bytes, over the executor's maxStepBytes of ${this.maxBytes}`,
        isError: true,
      },
    }
  }

  async #captured<T>(fn: () => Promise<T>): Promise<{ value: T; records: MetricEvent[] }> {
    const records: MetricEvent[] = []
    this.#capture = records
    try {
      return { value: await fn(), records }
    } finally {
      this.#capture = undefined
    }
  }

  /** A journaled step's records go to `onMetric` marked `replayed` (the registry skips them). */
  #replay(records: readonly MetricEvent[]): void {
    for (const ev of records) this.#record({ ...ev, replayed: true })
  }
}

/** A declined suspension's result, with its afterTool hook and metric record. */
async function declinedCall(
  env: CallEnv,
  call: ModelToolCall,
  args: Record<string, unknown>,
  request: Request,
  answer: Answer,
): Promise<CallOutcome> {
  let result = declined(request, answer)
  const tool = env.toolkit?.get(call.name)
  if (tool && env.hooks?.afterTool) {
    const after = await env.hooks.afterTool({ name: call.name, args, result, id: call.id, turn: env.turn })
    if (after?.result) result = after.result
  }
  const source = tool?.source ?? "custom"
  env.record({ event: "tool", tool: call.name, source, outcome: "error", durationMs: 0, turn: env.turn })
  return { call, args, result }
}

/** The size of `value`'s JSON in UTF-8 bytes; `undefined` when it does not serialize. */
function jsonBytes(value: unknown): number | undefined {
  try {
    const json = JSON.stringify(value)
    return json === undefined ? undefined : Buffer.byteLength(json)
  } catch {
    return undefined
  }
}

/**
 * The path of the first value in `value` that JSON would not carry unchanged (a function, a
 * class instance, a non-finite number, a bigint, a cycle), or `undefined` when it is plain JSON.
 * Absent (`undefined`) object members are allowed: JSON drops them and so does a deep-equal.
 */
export function notPlainJson(
  value: unknown,
  path: string,
  seen: Set<object> = new Set(),
): string | undefined {
  if (value === null) return undefined
  switch (typeof value) {
    case "string":
    case "boolean":
      return undefined
    case "number":
      return Number.isFinite(value) ? undefined : `${path} is ${value}`
    case "object": {
      if (seen.has(value)) return `${path} is a cycle`
      seen.add(value)
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          const problem = notPlainJson(value[i], `${path}[${i}]`, seen)
          if (problem !== undefined) return problem
        }
      } else {
        const proto = Object.getPrototypeOf(value)
        if (proto !== Object.prototype && proto !== null)
          return `${path} is a ${proto?.constructor?.name ?? "object"}`
        for (const [key, member] of Object.entries(value)) {
          if (member === undefined) continue
          const problem = notPlainJson(member, `${path}.${key}`, seen)
          if (problem !== undefined) return problem
        }
      }
      seen.delete(value)
      return undefined
    }
    default:
      return `${path} is a ${typeof value}`
  }
}

export type { DurableExecutor, WaitContext }
