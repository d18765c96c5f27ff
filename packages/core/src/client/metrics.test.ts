import { describe, expect, it } from "vitest"
import { type MetricEvent, MetricsRegistry } from "./metrics.js"

/** One parsed sample line. */
interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

interface Parsed {
  help: Map<string, string>
  type: Map<string, string>
  samples: Sample[]
}

/** A strict parser of the subset of the text exposition format the registry emits. */
function parse(text: string): Parsed {
  expect(text.endsWith("\n")).toBe(true)
  const help = new Map<string, string>()
  const type = new Map<string, string>()
  const samples: Sample[] = []
  for (const line of text.slice(0, -1).split("\n")) {
    const meta = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line)
    if (meta) {
      const target = meta[1] === "HELP" ? help : type
      expect(target.has(meta[2]!)).toBe(false)
      target.set(meta[2]!, meta[3]!)
      continue
    }
    const head = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(line)
    if (!head) throw new Error(`unparseable line: ${JSON.stringify(line)}`)
    const name = head[1]!
    let i = name.length
    const labels: Record<string, string> = {}
    if (line[i] === "{") {
      i++
      while (line[i] !== "}") {
        const key = /^([a-zA-Z_][a-zA-Z0-9_]*)="/.exec(line.slice(i))
        if (!key) throw new Error(`bad label at ${i} in ${JSON.stringify(line)}`)
        i += key[0].length
        let value = ""
        while (line[i] !== '"') {
          if (i >= line.length) throw new Error(`unterminated label in ${JSON.stringify(line)}`)
          if (line[i] === "\\") {
            const next = line[i + 1]
            if (next === "n") value += "\n"
            else if (next === "\\" || next === '"') value += next
            else throw new Error(`bad escape in ${JSON.stringify(line)}`)
            i += 2
          } else {
            value += line[i]
            i++
          }
        }
        labels[key[1]!] = value
        i++
        if (line[i] === ",") i++
      }
      i++
    }
    expect(line[i]).toBe(" ")
    const raw = line.slice(i + 1)
    samples.push({ name, labels, value: raw === "+Inf" ? Number.POSITIVE_INFINITY : Number(raw) })
    expect(Number.isNaN(samples.at(-1)!.value)).toBe(false)
  }
  return { help, type, samples }
}

/** The value of the one sample with exactly these labels; fails on none or several. */
function value(p: Parsed, name: string, labels: Record<string, string>): number {
  const found = p.samples.filter(
    (s) =>
      s.name === name &&
      Object.keys(s.labels).length === Object.keys(labels).length &&
      Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  )
  expect(found, `${name} ${JSON.stringify(labels)}`).toHaveLength(1)
  return found[0]!.value
}

function samplesOf(p: Parsed, name: string): Sample[] {
  return p.samples.filter((s) => s.name === name)
}

const FAMILIES: Record<string, string> = {
  toolnexus_llm_requests_total: "counter",
  toolnexus_llm_tokens_total: "counter",
  toolnexus_llm_request_duration_seconds: "histogram",
  toolnexus_tool_calls_total: "counter",
  toolnexus_tool_suspensions_total: "counter",
  toolnexus_tool_duration_seconds: "histogram",
  toolnexus_run_errors_total: "counter",
}

const LE = ["0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60", "+Inf"]

function llm(over: Partial<Extract<MetricEvent, { event: "llm" }>> = {}): MetricEvent {
  return {
    event: "llm",
    model: "m1",
    status: "ok",
    durationMs: 100,
    promptTokens: 0,
    completionTokens: 0,
    turn: 1,
    ...over,
  }
}

function tool(over: Partial<Extract<MetricEvent, { event: "tool" }>> = {}): MetricEvent {
  return { event: "tool", tool: "t1", source: "native", outcome: "ok", durationMs: 10, turn: 1, ...over }
}

describe("MetricsRegistry", () => {
  it("prints HELP and TYPE for every family, and no samples, when empty", () => {
    const p = parse(new MetricsRegistry().render())
    expect(Object.fromEntries(p.type)).toEqual(FAMILIES)
    expect([...p.help.keys()].sort()).toEqual(Object.keys(FAMILIES).sort())
    expect(p.samples).toEqual([])
  })

  it("counts LLM requests by model and status, and sums tokens by type", () => {
    const r = new MetricsRegistry()
    r.record(llm({ model: "a", promptTokens: 10, completionTokens: 3 }))
    r.record(llm({ model: "a", promptTokens: 5, completionTokens: 2, turn: 2 }))
    r.record(llm({ model: "a", status: "error", httpStatus: 500, promptTokens: 0 }))
    r.record(llm({ model: "b", promptTokens: 1, completionTokens: 1 }))
    const p = parse(r.render())
    expect(value(p, "toolnexus_llm_requests_total", { model: "a", status: "ok" })).toBe(2)
    expect(value(p, "toolnexus_llm_requests_total", { model: "a", status: "error" })).toBe(1)
    expect(value(p, "toolnexus_llm_requests_total", { model: "b", status: "ok" })).toBe(1)
    expect(samplesOf(p, "toolnexus_llm_requests_total")).toHaveLength(3)
    expect(value(p, "toolnexus_llm_tokens_total", { type: "prompt" })).toBe(16)
    expect(value(p, "toolnexus_llm_tokens_total", { type: "completion" })).toBe(6)
    expect(samplesOf(p, "toolnexus_llm_tokens_total")).toHaveLength(2)
  })

  it("renders cumulative histogram buckets with sum and count", () => {
    const r = new MetricsRegistry()
    // 0.05 s lands in le="0.05" (bounds are inclusive); 120 s lands only in +Inf.
    for (const ms of [50, 75, 250, 250, 1000, 4000, 120_000]) r.record(llm({ model: "a", durationMs: ms }))
    const p = parse(r.render())
    const buckets = LE.map((le) =>
      value(p, "toolnexus_llm_request_duration_seconds_bucket", { model: "a", le }),
    )
    expect(buckets).toEqual([1, 2, 4, 4, 5, 5, 6, 6, 6, 6, 7])
    expect(value(p, "toolnexus_llm_request_duration_seconds_count", { model: "a" })).toBe(7)
    expect(value(p, "toolnexus_llm_request_duration_seconds_sum", { model: "a" })).toBeCloseTo(125.625, 9)
    // The +Inf bucket always equals the count.
    expect(samplesOf(p, "toolnexus_llm_request_duration_seconds_bucket")).toHaveLength(LE.length)
  })

  it("prints bucket lines in ascending le order", () => {
    const r = new MetricsRegistry()
    r.record(tool({ durationMs: 3000 }))
    const text = r.render()
    const les = [...text.matchAll(/toolnexus_tool_duration_seconds_bucket\{tool="t1",le="([^"]+)"\}/g)].map(
      (m) => m[1],
    )
    expect(les).toEqual(LE)
  })

  it("counts tool calls by tool, source and is_error, and times them per tool", () => {
    const r = new MetricsRegistry()
    r.record(tool({ tool: "search", source: "http", outcome: "ok", durationMs: 200 }))
    r.record(tool({ tool: "search", source: "http", outcome: "error", durationMs: 700 }))
    r.record(tool({ tool: "search", source: "relay", outcome: "ok", durationMs: 30 }))
    r.record(tool({ tool: "calc", source: "native", outcome: "ok", durationMs: 1 }))
    const p = parse(r.render())
    expect(
      value(p, "toolnexus_tool_calls_total", { tool: "search", source: "http", is_error: "false" }),
    ).toBe(1)
    expect(value(p, "toolnexus_tool_calls_total", { tool: "search", source: "http", is_error: "true" })).toBe(
      1,
    )
    expect(
      value(p, "toolnexus_tool_calls_total", { tool: "search", source: "relay", is_error: "false" }),
    ).toBe(1)
    expect(
      value(p, "toolnexus_tool_calls_total", { tool: "calc", source: "native", is_error: "false" }),
    ).toBe(1)
    expect(samplesOf(p, "toolnexus_tool_calls_total")).toHaveLength(4)
    const buckets = LE.map((le) => value(p, "toolnexus_tool_duration_seconds_bucket", { tool: "search", le }))
    expect(buckets).toEqual([1, 1, 2, 2, 3, 3, 3, 3, 3, 3, 3])
    expect(value(p, "toolnexus_tool_duration_seconds_count", { tool: "search" })).toBe(3)
    expect(value(p, "toolnexus_tool_duration_seconds_sum", { tool: "search" })).toBeCloseTo(0.93, 9)
    expect(value(p, "toolnexus_tool_duration_seconds_count", { tool: "calc" })).toBe(1)
  })

  it("counts a pending outcome as a suspension, not an error", () => {
    const r = new MetricsRegistry()
    r.record(tool({ tool: "approve", source: "custom", outcome: "pending" }))
    r.record(tool({ tool: "approve", source: "custom", outcome: "pending" }))
    r.record(tool({ tool: "approve", source: "custom", outcome: "ok" }))
    const p = parse(r.render())
    expect(
      value(p, "toolnexus_tool_calls_total", { tool: "approve", source: "custom", is_error: "false" }),
    ).toBe(3)
    expect(samplesOf(p, "toolnexus_tool_calls_total").some((s) => s.labels.is_error === "true")).toBe(false)
    expect(value(p, "toolnexus_tool_suspensions_total", { tool: "approve", source: "custom" })).toBe(2)
    expect(value(p, "toolnexus_tool_duration_seconds_count", { tool: "approve" })).toBe(3)
  })

  it("counts only runs that ended in error", () => {
    const r = new MetricsRegistry()
    const run = (model: string, status: "done" | "pending" | "incomplete" | "error"): MetricEvent => ({
      event: "run",
      model,
      status,
      turns: 2,
      durationMs: 5,
    })
    r.record(run("a", "error"))
    r.record(run("a", "error"))
    r.record(run("a", "done"))
    r.record(run("b", "pending"))
    r.record(run("b", "incomplete"))
    const p = parse(r.render())
    expect(value(p, "toolnexus_run_errors_total", { model: "a" })).toBe(2)
    expect(samplesOf(p, "toolnexus_run_errors_total")).toHaveLength(1)
    // Run events feed no other family.
    expect(p.samples.filter((s) => s.name !== "toolnexus_run_errors_total")).toEqual([])
  })

  it("escapes backslash, double quote and newline in label values", () => {
    const r = new MetricsRegistry()
    const model = 'we"ird\\model\nname'
    const toolName = 'a"b\\c\nd'
    r.record(llm({ model }))
    r.record(tool({ tool: toolName, outcome: "pending" }))
    r.record({ event: "run", model, status: "error", turns: 1, durationMs: 1 })
    const text = r.render()
    expect(text).toContain('toolnexus_llm_requests_total{model="we\\"ird\\\\model\\nname",status="ok"} 1')
    expect(text).toContain('toolnexus_tool_suspensions_total{tool="a\\"b\\\\c\\nd",source="native"} 1')
    const p = parse(text)
    expect(value(p, "toolnexus_llm_requests_total", { model, status: "ok" })).toBe(1)
    expect(value(p, "toolnexus_llm_request_duration_seconds_count", { model })).toBe(1)
    expect(value(p, "toolnexus_tool_duration_seconds_bucket", { tool: toolName, le: "+Inf" })).toBe(1)
    expect(value(p, "toolnexus_run_errors_total", { model })).toBe(1)
  })

  it("keeps counters monotonic when given bad numbers", () => {
    const r = new MetricsRegistry()
    r.record(llm({ promptTokens: 7, completionTokens: 2 }))
    r.record(llm({ promptTokens: -3, completionTokens: Number.NaN, durationMs: -1 }))
    const p = parse(r.render())
    expect(value(p, "toolnexus_llm_tokens_total", { type: "prompt" })).toBe(7)
    expect(value(p, "toolnexus_llm_tokens_total", { type: "completion" })).toBe(2)
    expect(value(p, "toolnexus_llm_request_duration_seconds_bucket", { model: "m1", le: "0.05" })).toBe(1)
    expect(value(p, "toolnexus_llm_request_duration_seconds_sum", { model: "m1" })).toBeCloseTo(0.1, 9)
  })

  it("renders the same text twice and keeps accumulating after a render", () => {
    const r = new MetricsRegistry()
    r.record(tool())
    const first = r.render()
    expect(r.render()).toBe(first)
    r.record(tool())
    expect(
      value(parse(r.render()), "toolnexus_tool_calls_total", {
        tool: "t1",
        source: "native",
        is_error: "false",
      }),
    ).toBe(2)
  })
})
