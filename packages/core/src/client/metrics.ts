import { ConfigError } from "../errors.js"
import type { ToolSource } from "../types.js"

/**
 * An observation the client loop reports after an LLM request, a tool call or a whole run.
 * Durations are in milliseconds; `turn` counts from 1 within a run.
 */
export type MetricEvent =
  | {
      /** An LLM request (one turn's request, retries included, or one `translate`). */
      event: "llm"
      /** The client's model. */
      model: string
      /** `error` when the request failed after its retries. */
      status: "ok" | "error"
      /** The HTTP status of a failed request's non-2xx reply; absent otherwise. */
      httpStatus?: number
      /** From sending the request to its parsed reply or its failure, retries and backoff included. */
      durationMs: number
      /** Input tokens the provider reported; 0 for a failed request. */
      promptTokens: number
      /** Output tokens the provider reported; 0 for a failed request. */
      completionTokens: number
      /** The run's LLM turn the request belongs to (1 for `translate`). */
      turn: number
      /** The agents runtime's handle the event came from. */
      handle?: string
      /** A step an executor journaled in an earlier worker, replayed unrun (`metrics()` skips it). */
      replayed?: boolean
    }
  | {
      /** A tool call of a run. */
      event: "tool"
      /** The name of the tool the model called. */
      tool: string
      /** Where the tool comes from; `custom` for a call of a tool the toolkit does not have. */
      source: ToolSource
      /** `"pending"` means the tool suspended on a request; it is not an error. */
      outcome: "ok" | "error" | "pending"
      /** From the call's start to its final result, its hooks and `waitFor` included. */
      durationMs: number
      /** The run's LLM turn whose reply made the call. */
      turn: number
      /** The agents runtime's handle the event came from. */
      handle?: string
      /** A step an executor journaled in an earlier worker, replayed unrun (`metrics()` skips it). */
      replayed?: boolean
    }
  | {
      /** A whole run (`run`, `ask`, `stream` or `continueRun`), reported when it ends. */
      event: "run"
      /** The client's model. */
      model: string
      /** The result's `status`, or `error` when the run threw. */
      status: "done" | "pending" | "incomplete" | "error"
      /** The result's `turns`; 0 when the run threw. */
      turns: number
      /** From the run's start to its result or throw; not a stored conversation's load and final save. */
      durationMs: number
      /** The agents runtime's handle the event came from. */
      handle?: string
      /** A step an executor journaled in an earlier worker, replayed unrun (`metrics()` skips it). */
      replayed?: boolean
    }

/** Histogram upper bounds in seconds; `+Inf` is implied after the last. */
const BUCKETS: readonly number[] = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

/** Per-bucket (not yet cumulative) counts, plus the sum and count of one histogram series. */
class Histogram {
  // One slot per bound plus one for +Inf; cumulated only when rendered.
  readonly counts = new Array<number>(BUCKETS.length + 1).fill(0)
  sum = 0
  count = 0

  observe(seconds: number): void {
    // The increment runs on every call: in a loop body only a slow call reaches, it would have
    // no type feedback, and the first slow call would deoptimize every caller it is inlined in.
    let i = -1
    do i++
    while (i < BUCKETS.length && seconds > BUCKETS[i]!)
    this.counts[i]!++
    this.sum += seconds
    this.count++
  }
}

interface LlmSeries {
  ok: number
  error: number
  duration: Histogram
}

interface ToolSeries {
  ok: number
  error: number
  pending: number
}

/** A duration in ms as seconds; a bad value counts as 0 so one glitch cannot poison the sum. */
function seconds(ms: number): number {
  return Number.isFinite(ms) && ms > 0 ? ms / 1000 : 0
}

/** A token count; negative or non-finite values add nothing, since a counter never decreases. */
function tokens(n: number): number {
  return Number.isFinite(n) && n > 0 ? n : 0
}

/**
 * The client's metrics store: it accumulates {@link MetricEvent}s and renders them in the
 * Prometheus text exposition format. Recording only bumps numbers in maps keyed by the raw
 * label values; all string formatting and escaping happens in {@link MetricsRegistry.render}.
 *
 * @internal
 */
export class MetricsRegistry {
  // Keyed by model: requests by status and the duration histogram share one lookup.
  readonly #llm = new Map<string, LlmSeries>()
  #promptTokens = 0
  #completionTokens = 0
  #sawLlm = false
  // Keyed by tool then source: nested maps avoid building a composite key on every call.
  readonly #tools = new Map<string, Map<ToolSource, ToolSeries>>()
  readonly #toolDuration = new Map<string, Histogram>()
  // Made on the first failed run: most clients never have one (and S2's host makes a client per run).
  #runErrors: Map<string, number> | undefined

  /** Records one event; unknown event kinds are ignored. */
  record(ev: MetricEvent): void {
    if (ev.replayed === true) return
    // One method per kind: a process compiles only the kinds it records (a cold resume records
    // a tool call before its first LLM request).
    if (ev.event === "tool") this.#tool(ev)
    else if (ev.event === "llm") this.#llmRequest(ev)
    else if (ev.event === "run" && ev.status === "error") {
      this.#runErrors ??= new Map()
      this.#runErrors.set(ev.model, (this.#runErrors.get(ev.model) ?? 0) + 1)
    }
  }

  #llmRequest(ev: Extract<MetricEvent, { event: "llm" }>): void {
    let s = this.#llm.get(ev.model)
    if (s === undefined) {
      s = { ok: 0, error: 0, duration: new Histogram() }
      this.#llm.set(ev.model, s)
    }
    if (ev.status === "ok") s.ok++
    else s.error++
    s.duration.observe(seconds(ev.durationMs))
    this.#promptTokens += tokens(ev.promptTokens)
    this.#completionTokens += tokens(ev.completionTokens)
    this.#sawLlm = true
  }

  #tool(ev: Extract<MetricEvent, { event: "tool" }>): void {
    let bySource = this.#tools.get(ev.tool)
    if (bySource === undefined) {
      bySource = new Map()
      this.#tools.set(ev.tool, bySource)
    }
    let s = bySource.get(ev.source)
    if (s === undefined) {
      s = { ok: 0, error: 0, pending: 0 }
      bySource.set(ev.source, s)
    }
    if (ev.outcome === "error") s.error++
    else if (ev.outcome === "pending") s.pending++
    else s.ok++
    let h = this.#toolDuration.get(ev.tool)
    if (h === undefined) {
      h = new Histogram()
      this.#toolDuration.set(ev.tool, h)
    }
    h.observe(seconds(ev.durationMs))
  }

  /**
   * Every family with its samples, series sorted by label values. Families with no samples
   * are still listed (their HELP and TYPE lines are always rendered).
   */
  families(): MetricFamily[] {
    const out: MetricFamily[] = []
    const models = sortedKeys(this.#llm)

    const requests = family(
      out,
      "toolnexus_llm_requests_total",
      "counter",
      "LLM requests by model and outcome.",
    )
    for (const model of models) {
      const s = this.#llm.get(model)!
      if (s.ok > 0) requests.push({ labels: { model, status: "ok" }, value: s.ok })
      if (s.error > 0) requests.push({ labels: { model, status: "error" }, value: s.error })
    }

    const tokenSamples = family(out, "toolnexus_llm_tokens_total", "counter", "LLM tokens consumed, by type.")
    if (this.#sawLlm) {
      tokenSamples.push({ labels: { type: "prompt" }, value: this.#promptTokens })
      tokenSamples.push({ labels: { type: "completion" }, value: this.#completionTokens })
    }

    const llmDuration = "toolnexus_llm_request_duration_seconds"
    const llmBuckets = family(out, llmDuration, "histogram", "LLM request duration in seconds.")
    for (const model of models) histogram(llmBuckets, llmDuration, { model }, this.#llm.get(model)!.duration)

    const calls = family(
      out,
      "toolnexus_tool_calls_total",
      "counter",
      "Tool calls by tool, source and whether they failed; a suspension is not a failure.",
    )
    const tools = sortedKeys(this.#tools)
    for (const tool of tools) {
      const bySource = this.#tools.get(tool)!
      for (const source of sortedKeys(bySource)) {
        const s = bySource.get(source)!
        const ok = s.ok + s.pending
        if (ok > 0) calls.push({ labels: { tool, source, is_error: "false" }, value: ok })
        if (s.error > 0) calls.push({ labels: { tool, source, is_error: "true" }, value: s.error })
      }
    }

    const suspensions = family(
      out,
      "toolnexus_tool_suspensions_total",
      "counter",
      "Tool calls that suspended on a request.",
    )
    for (const tool of tools) {
      const bySource = this.#tools.get(tool)!
      for (const source of sortedKeys(bySource)) {
        const pending = bySource.get(source)!.pending
        if (pending > 0) suspensions.push({ labels: { tool, source }, value: pending })
      }
    }

    const toolDuration = "toolnexus_tool_duration_seconds"
    const toolBuckets = family(out, toolDuration, "histogram", "Tool call duration in seconds.")
    for (const tool of sortedKeys(this.#toolDuration)) {
      histogram(toolBuckets, toolDuration, { tool }, this.#toolDuration.get(tool)!)
    }

    const errors = family(
      out,
      "toolnexus_run_errors_total",
      "counter",
      "Runs that ended in an error, by model.",
    )
    const runErrors = this.#runErrors
    if (runErrors !== undefined)
      for (const model of sortedKeys(runErrors))
        errors.push({ labels: { model }, value: runErrors.get(model)! })
    return out
  }

  /** Renders every family in the Prometheus text exposition format (version 0.0.4). */
  render(): string {
    const lines: string[] = []
    for (const f of this.families()) {
      lines.push(`# HELP ${f.name} ${f.help}`, `# TYPE ${f.name} ${f.type}`)
      for (const v of f.values)
        lines.push(`${v.metricName ?? f.name}${labelText(v.labels)} ${formatValue(v.value)}`)
    }
    return `${lines.join("\n")}\n`
  }
}

/** One sample as prom-client's registry reads it. */
interface MetricSample {
  labels: Record<string, string>
  value: number
  /** Set for histogram series: `<name>_bucket`, `<name>_sum`, `<name>_count`. */
  metricName?: string
}

/** @internal One metric family: the shape prom-client's `Registry` reads from `metric.get()`. */
export interface MetricFamily {
  name: string
  help: string
  type: "counter" | "histogram"
  values: MetricSample[]
  aggregator: "sum"
}

/**
 * The part of a prom-client `Registry` (v13 to v15) toolnexus uses: it registers collector
 * objects of its own, so prom-client stays the host's dependency only.
 */
export interface PromRegistryLike {
  /** prom-client's `Registry.registerMetric`: adds one collector; throws when its name is taken. */
  registerMetric(metric: never): void
}

const registries = new WeakMap<object, MetricsRegistry>()

/** @internal Lets {@link registerMetrics} find a client's metrics without widening `Client`. */
export function attachMetrics(owner: object, registry: MetricsRegistry): void {
  registries.set(owner, registry)
}

/**
 * Registers a client's `toolnexus_*` metric families in a prom-client `Registry`, so the host's
 * `/metrics` endpoint serves them beside its own. Values are read at scrape time; the text of
 * `client.metrics()` keeps working as before.
 *
 * @throws ConfigError when `client` was not made by `createClient`/`createInProcessClient`.
 * @throws Error (prom-client's) when the registry already holds a family of the same name.
 * @example
 * import { Registry } from "prom-client"
 * const registry = new Registry()
 * registerMetrics(registry, client)
 */
export function registerMetrics(registry: PromRegistryLike, client: object): void {
  const metrics = registries.get(client)
  if (!metrics)
    throw new ConfigError("registerMetrics needs a client made by createClient or createInProcessClient")
  for (const f of metrics.families()) {
    const { name, help, type } = f
    const collector = {
      name,
      help,
      type,
      aggregator: "sum" as const,
      get: async () => metrics.families().find((x) => x.name === name) as MetricFamily,
      reset: () => {},
    }
    registry.registerMetric(collector as never)
  }
}

function sortedKeys<K extends string>(map: Map<K, unknown>): K[] {
  // Code-unit order, not locale order: the output must not depend on the host's locale.
  return [...map.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
}

function family(
  out: MetricFamily[],
  name: string,
  type: "counter" | "histogram",
  help: string,
): MetricSample[] {
  const values: MetricSample[] = []
  out.push({ name, help, type, values, aggregator: "sum" })
  return values
}

/** Escapes a label value as the exposition format requires: backslash, double quote, newline. */
function escapeLabel(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => (c === "\\" ? "\\\\" : c === '"' ? '\\"' : "\\n"))
}

function labelText(labels: Record<string, string>): string {
  const parts: string[] = []
  for (const [k, v] of Object.entries(labels)) parts.push(`${k}="${escapeLabel(v)}"`)
  return parts.length === 0 ? "" : `{${parts.join(",")}}`
}

function formatValue(n: number): string {
  if (n === Number.POSITIVE_INFINITY) return "+Inf"
  if (n === Number.NEGATIVE_INFINITY) return "-Inf"
  return Number.isNaN(n) ? "NaN" : String(n)
}

function histogram(out: MetricSample[], name: string, labels: Record<string, string>, h: Histogram): void {
  let cumulative = 0
  for (let i = 0; i <= BUCKETS.length; i++) {
    cumulative += h.counts[i]!
    const le = i < BUCKETS.length ? String(BUCKETS[i]) : "+Inf"
    out.push({ metricName: `${name}_bucket`, labels: { ...labels, le }, value: cumulative })
  }
  out.push({ metricName: `${name}_sum`, labels, value: h.sum })
  out.push({ metricName: `${name}_count`, labels, value: h.count })
}
