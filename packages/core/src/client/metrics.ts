import type { ToolSource } from "../types.js"

/**
 * An observation the client loop reports after an LLM request, a tool call or a whole run.
 * Durations are in milliseconds; `turn` counts from 1 within a run.
 */
export type MetricEvent =
  | {
      event: "llm"
      model: string
      status: "ok" | "error"
      httpStatus?: number
      durationMs: number
      promptTokens: number
      completionTokens: number
      turn: number
    }
  | {
      event: "tool"
      tool: string
      source: ToolSource
      /** `"pending"` means the tool suspended on a request; it is not an error. */
      outcome: "ok" | "error" | "pending"
      durationMs: number
      turn: number
    }
  | {
      event: "run"
      model: string
      status: "done" | "pending" | "incomplete" | "error"
      turns: number
      durationMs: number
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
    let i = 0
    while (i < BUCKETS.length && seconds > BUCKETS[i]!) i++
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
  readonly #runErrors = new Map<string, number>()

  /** Records one event; unknown event kinds are ignored. */
  record(ev: MetricEvent): void {
    switch (ev.event) {
      case "llm": {
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
        return
      }
      case "tool": {
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
        return
      }
      case "run": {
        if (ev.status === "error") this.#runErrors.set(ev.model, (this.#runErrors.get(ev.model) ?? 0) + 1)
        return
      }
    }
  }

  /**
   * Renders every family in the Prometheus text exposition format (version 0.0.4), series
   * sorted by label values. Families with no samples still print their HELP and TYPE lines.
   */
  render(): string {
    const out: string[] = []
    const models = sortedKeys(this.#llm)

    family(out, "toolnexus_llm_requests_total", "counter", "LLM requests by model and outcome.")
    for (const model of models) {
      const s = this.#llm.get(model)!
      if (s.ok > 0) sample(out, "toolnexus_llm_requests_total", { model, status: "ok" }, s.ok)
      if (s.error > 0) sample(out, "toolnexus_llm_requests_total", { model, status: "error" }, s.error)
    }

    family(out, "toolnexus_llm_tokens_total", "counter", "LLM tokens consumed, by type.")
    if (this.#sawLlm) {
      sample(out, "toolnexus_llm_tokens_total", { type: "prompt" }, this.#promptTokens)
      sample(out, "toolnexus_llm_tokens_total", { type: "completion" }, this.#completionTokens)
    }

    family(out, "toolnexus_llm_request_duration_seconds", "histogram", "LLM request duration in seconds.")
    for (const model of models) {
      histogram(out, "toolnexus_llm_request_duration_seconds", { model }, this.#llm.get(model)!.duration)
    }

    family(
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
        if (ok > 0) sample(out, "toolnexus_tool_calls_total", { tool, source, is_error: "false" }, ok)
        if (s.error > 0)
          sample(out, "toolnexus_tool_calls_total", { tool, source, is_error: "true" }, s.error)
      }
    }

    family(out, "toolnexus_tool_suspensions_total", "counter", "Tool calls that suspended on a request.")
    for (const tool of tools) {
      const bySource = this.#tools.get(tool)!
      for (const source of sortedKeys(bySource)) {
        const pending = bySource.get(source)!.pending
        if (pending > 0) sample(out, "toolnexus_tool_suspensions_total", { tool, source }, pending)
      }
    }

    family(out, "toolnexus_tool_duration_seconds", "histogram", "Tool call duration in seconds.")
    for (const tool of sortedKeys(this.#toolDuration)) {
      histogram(out, "toolnexus_tool_duration_seconds", { tool }, this.#toolDuration.get(tool)!)
    }

    family(out, "toolnexus_run_errors_total", "counter", "Runs that ended in an error, by model.")
    for (const model of sortedKeys(this.#runErrors)) {
      sample(out, "toolnexus_run_errors_total", { model }, this.#runErrors.get(model)!)
    }

    return `${out.join("\n")}\n`
  }
}

function sortedKeys<K extends string>(map: Map<K, unknown>): K[] {
  // Code-unit order, not locale order: the output must not depend on the host's locale.
  return [...map.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
}

function family(out: string[], name: string, type: "counter" | "histogram", help: string): void {
  out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`)
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

function sample(out: string[], name: string, labels: Record<string, string>, value: number): void {
  out.push(`${name}${labelText(labels)} ${formatValue(value)}`)
}

function histogram(out: string[], name: string, labels: Record<string, string>, h: Histogram): void {
  let cumulative = 0
  for (let i = 0; i <= BUCKETS.length; i++) {
    cumulative += h.counts[i]!
    const le = i < BUCKETS.length ? String(BUCKETS[i]) : "+Inf"
    sample(out, `${name}_bucket`, { ...labels, le }, cumulative)
  }
  sample(out, `${name}_sum`, labels, h.sum)
  sample(out, `${name}_count`, labels, h.count)
}
