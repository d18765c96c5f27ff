// Shared machinery of the CPU benchmarks: the forked mock endpoint, the hand-written
// floor loop, the measuring of one phase, the rounds and the printed table.
import { execFile, fork } from "node:child_process"
import { once } from "node:events"
import { cpus } from "node:os"
import { parseArgs } from "node:util"
import { Agent, request } from "undici"

/** The variant's name in a process {@link forkVariant} started, else undefined. */
export const variantOfThisProcess = process.env.TNX_BENCH_VARIANT

export const MODEL = "mock-model"
export const API_KEY = "sk-bench"

/**
 * Command-line options common to every benchmark.
 * --runs N      runs per measured phase (a phase = one variant at one concurrency); --n N is the same
 * --rounds R    measured rounds; the figures are medians over them
 * --warmup W    runs per variant before measuring
 * --only V      measure only "sdk" or "floor" (handy under `node --cpu-prof`)
 * --concurrency 1,32   the concurrency levels to measure
 * --verbose      print every phase as it is measured
 * --same-process measure every variant in this one process (default: each in its own process)
 * --gc           force a full collection before each phase (the method before 2026-12-01; see phase())
 */
export function cliOptions(defaults, { variants = ["sdk", "floor"], extra = {} } = {}) {
  const { values } = parseArgs({
    options: {
      ...extra,
      runs: { type: "string" },
      n: { type: "string" }, // an alias of --runs
      rounds: { type: "string" },
      warmup: { type: "string" },
      only: { type: "string" },
      concurrency: { type: "string" },
      verbose: { type: "boolean", default: false },
      "same-process": { type: "boolean", default: false },
      gc: { type: "boolean", default: false },
      style: { type: "string" },
    },
  })
  const int = (name, fallback) => {
    if (values[name] === undefined) return fallback
    const n = Number(values[name])
    if (!Number.isInteger(n) || n < 1)
      throw new Error(`--${name} must be a positive integer, got ${values[name]}`)
    return n
  }
  if (values.only !== undefined && !variants.includes(values.only)) {
    throw new Error(`--only must be one of ${variants.map((v) => `"${v}"`).join(", ")}, got ${values.only}`)
  }
  if (values.runs !== undefined && values.n !== undefined) throw new Error("give --runs or --n, not both")
  values.runs ??= values.n
  const concurrency = values.concurrency
    ? values.concurrency.split(",").map((c) => {
        const n = Number(c)
        if (!Number.isInteger(n) || n < 1) throw new Error(`bad --concurrency ${values.concurrency}`)
        return n
      })
    : [1, 32]
  return {
    runs: int("runs", defaults.runs),
    rounds: int("rounds", defaults.rounds),
    warmup: int("warmup", defaults.warmup),
    only: values.only,
    concurrency,
    verbose: values.verbose,
    sameProcess: values["same-process"],
    forceGc: values.gc,
    values,
  }
}

/**
 * Forks the mock endpoint and waits until it listens. In a variant's own process (see
 * {@link runBenchmark}) it is the parent's endpoint instead: the parent owns it and its counters.
 */
export async function startMockServer(args) {
  const styleAt = args.indexOf("--style")
  const style = styleAt === -1 ? "openai" : args[styleAt + 1]
  if (variantOfThisProcess !== undefined) {
    return {
      baseUrl: process.env.TNX_BENCH_BASE_URL,
      style,
      stats() {
        throw new Error("a variant's process cannot read the parent's mock counters")
      },
      close() {},
    }
  }
  const child = fork(new URL("./mock-openai-server.mjs", import.meta.url), args, {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    execArgv: [], // never profile or instrument the server along with the client
  })
  const [ready] = await once(child, "message")
  if (ready?.type !== "ready") throw new Error("the mock server did not start")
  return {
    baseUrl: `http://127.0.0.1:${ready.port}/v1`,
    style,
    /**
     * Requests, request-body bytes and (when checking was on) the bodies' digest seen since
     * the last call; `check` switches the digest on or off for what follows.
     */
    async stats(check = false) {
      const reply = once(child, "message")
      child.send({ type: "stats", check })
      const [msg] = await reply
      return msg
    },
    close() {
      child.disconnect()
    },
  }
}

/** The wire styles the mock speaks and the SDK and the floor send. */
export const STYLES = ["openai", "anthropic", "openai-responses"]

/**
 * `--style openai|anthropic|openai-responses|all` (default all): the styles a CPU benchmark
 * measures, one after the other.
 */
export function stylesOf(options) {
  const style = options.values.style ?? "all"
  if (style === "all") return STYLES
  if (!STYLES.includes(style))
    throw new Error(`--style must be all or one of ${STYLES.join(", ")}, got ${style}`)
  return [style]
}

/**
 * What the floor writes by hand for each style: the endpoint, the headers, the body around
 * the transcript and the tools, how a reply becomes the assistant message and its calls,
 * and how a tool result is appended. Shapes as each provider documents them.
 */
const FLOOR_WIRES = {
  openai: {
    path: "/chat/completions",
    headers: { "content-type": "application/json", authorization: `Bearer ${API_KEY}` },
    tool: (t) => ({
      type: "function",
      function: { name: t.name, description: t.description, parameters: t.inputSchema },
    }),
    body: (input, tools) => ({ model: MODEL, messages: input, tools }),
    reply(json) {
      const message = json.choices[0].message
      const calls = (message.tool_calls ?? []).map((c) => ({
        id: c.id,
        name: c.function.name,
        args: c.function.arguments,
      }))
      return { items: [message], calls, text: message.content }
    },
    results: (calls, outputs) =>
      calls.map((c, i) => ({ role: "tool", tool_call_id: c.id, content: outputs[i] })),
  },
  anthropic: {
    path: "/messages",
    headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": API_KEY },
    tool: (t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema }),
    body: (input, tools) => ({ max_tokens: 4096, model: MODEL, messages: input, tools }),
    reply(json) {
      const calls = []
      let text = ""
      for (const block of json.content) {
        if (block.type === "tool_use") calls.push({ id: block.id, name: block.name, args: block.input })
        else if (block.type === "text") text += block.text
      }
      return { items: [{ role: "assistant", content: json.content }], calls, text }
    },
    results: (calls, outputs) => [
      {
        role: "user",
        content: calls.map((c, i) => ({ type: "tool_result", tool_use_id: c.id, content: outputs[i] })),
      },
    ],
  },
  "openai-responses": {
    path: "/responses",
    headers: { "content-type": "application/json", authorization: `Bearer ${API_KEY}` },
    tool: (t) => ({ type: "function", name: t.name, description: t.description, parameters: t.inputSchema }),
    body: (input, tools) => ({
      model: MODEL,
      store: false,
      include: ["reasoning.encrypted_content"],
      input,
      tools,
    }),
    reply(json) {
      const calls = []
      let text = ""
      for (const item of json.output) {
        if (item.type === "function_call")
          calls.push({ id: item.call_id, name: item.name, args: item.arguments })
        else if (item.type === "message")
          for (const part of item.content) if (part.type === "output_text") text += part.text
      }
      return { items: json.output, calls, text }
    },
    results: (calls, outputs) =>
      calls.map((c, i) => ({ type: "function_call_output", call_id: c.id, output: outputs[i] })),
  },
}

/**
 * The floor: what a careful hand-written tool loop costs, in one wire style. undici `request`
 * on a keep-alive Agent (same settings as the SDK's), a `JSON.stringify`d body, `JSON.parse`
 * of the reply, the reply's items appended as received, the tool results appended the way the
 * style wants them, until the model answers in text. `tools` are `{name, description,
 * inputSchema}`.
 */
export function createFloor({ baseUrl, tools, execute, style = "openai" }) {
  const wire = FLOOR_WIRES[style]
  const agent = new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000, connections: 128 })
  const url = `${baseUrl}${wire.path}`
  const rendered = tools.map(wire.tool)

  async function turn(input) {
    const res = await request(url, {
      method: "POST",
      headers: wire.headers,
      body: JSON.stringify(wire.body(input, rendered)),
      dispatcher: agent,
    })
    const text = await res.body.text()
    if (res.statusCode !== 200) throw new Error(`floor: HTTP ${res.statusCode}: ${text}`)
    return wire.reply(JSON.parse(text))
  }

  return {
    /** Runs one prompt to its final text; resolves with `{text, outputs}`. */
    async run(prompt) {
      const input = [{ role: "user", content: prompt }]
      const outputs = []
      for (;;) {
        const reply = await turn(input)
        for (const item of reply.items) input.push(item)
        const { calls } = reply
        if (calls.length === 0) return { text: reply.text, outputs }
        const results = await Promise.all(
          calls.map((call) =>
            execute(call.name, typeof call.args === "string" ? JSON.parse(call.args) : call.args),
          ),
        )
        for (const r of results) outputs.push(r)
        for (const item of wire.results(calls, results)) input.push(item)
      }
    },
    close: () => agent.close(),
  }
}

/**
 * The two variants of a loop benchmark: one run of `prompt` on the SDK client and on the
 * floor, each checked to end with `final` after a tool call that returned `output`.
 */
export function loopVariants({ client, toolkit, floor, prompt, final, output }) {
  return {
    async sdk() {
      const result = await client.run(prompt, { toolkit })
      if (result.status !== "done" || result.text !== final || result.toolCalls[0]?.output !== output) {
        throw new Error(`sdk: unexpected result ${JSON.stringify(result)}`)
      }
    },
    async floor() {
      const result = await floor.run(prompt)
      if (result.text !== final || result.outputs[0] !== output) {
        throw new Error(`floor: unexpected result ${JSON.stringify(result)}`)
      }
    },
  }
}

/**
 * Runs `runOnce` `runs` times with `concurrency` runs in flight; client CPU and wall time.
 * No forced `gc()` first: on Node 20 a forced collection throws away optimized code, and the
 * re-optimizing that follows (hundreds of µs per turn for the next thousand turns, most of
 * it on V8's compiler threads) would be charged to the phase, the more so the more code a
 * variant runs. Garbage is collected as it is in a real process. `forceGc` (`--gc`) restores
 * the collection, to reproduce figures measured that way.
 */
function phase(runOnce, runs, concurrency, forceGc = false) {
  if (forceGc) {
    if (!globalThis.gc) throw new Error("--gc needs node --expose-gc")
    globalThis.gc()
  }
  return inFlight(runs, concurrency, () => runOnce())
}

/**
 * Runs `task(i)` for i = 0 … count-1 with `concurrency` tasks in flight; client CPU and wall
 * time of the whole batch. No forced `gc()` first, for the reason given at {@link phase}; its
 * effect outlasts a thousand resumes of re-warming too (resume-throughput.mjs: 115–197 µs per
 * resume without one, 179–275 µs after one and 1,000 resumes).
 */
export async function inFlight(count, concurrency, task) {
  let next = 0
  const worker = async () => {
    while (next < count) await task(next++)
  }
  const wall0 = process.hrtime.bigint()
  const cpu0 = process.cpuUsage()
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker))
  const cpu = process.cpuUsage(cpu0)
  return { cpuUs: cpu.user + cpu.system, wallNs: Number(process.hrtime.bigint() - wall0) }
}

/** `process.memoryUsage().heapUsed` after full collections; needs `node --expose-gc`. */
export function heapUsedAfterGc() {
  if (!globalThis.gc) throw new Error("run node with --expose-gc to measure the heap")
  let used = Number.POSITIVE_INFINITY
  // A few rounds: finalizers and weak callbacks of one collection free more in the next.
  for (let i = 0; i < 4; i++) {
    globalThis.gc()
    used = Math.min(used, process.memoryUsage().heapUsed)
  }
  return used
}

/** One line naming the node version and the machine, printed under each benchmark's title. */
export function machineLine() {
  return `node ${process.version}, ${cpus().length} cores (${cpus()[0]?.model?.trim() ?? "unknown cpu"})`
}

/** Prints a right-aligned table (first column left-aligned) under a header row. */
export function printRows(header, rows) {
  const lines = [header, ...rows.map((row) => row.map(String))]
  const widths = header.map((_, i) => Math.max(...lines.map((l) => l[i].length)))
  console.log("")
  for (const [i, line] of lines.entries()) {
    console.log(
      line.map((cell, j) => (j === 0 ? cell.padEnd(widths[j]) : cell.padStart(widths[j]))).join("  "),
    )
    if (i === 0) console.log(widths.map((w) => "-".repeat(w)).join("  "))
  }
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/**
 * Warms both variants up, checks they put the same bytes on the wire, then measures
 * `rounds` rounds. Each round measures every variant at every concurrency, alternating
 * which variant goes first, and the reported figures are medians over the rounds. Each
 * variant runs in its own process unless `--same-process` is given.
 */
export async function runBenchmark({ title, unit, turnsPerRun, server, variants, options }) {
  const { only } = options
  const names = Object.keys(variants).filter((name) => only === undefined || name === only)
  if (variantOfThisProcess !== undefined) {
    const run = variants[variantOfThisProcess]
    if (!run) throw new Error(`no variant named ${variantOfThisProcess}`)
    return serveVariant((args) => phase(run, args.runs, args.concurrency, options.forceGc))
  }
  const started = Date.now()
  const runners = {}
  for (const name of names) {
    if (options.sameProcess) {
      runners[name] = { phase: (n, c) => phase(variants[name], n, c, options.forceGc), close() {} }
      continue
    }
    const child = await forkVariant(name, server)
    runners[name] = { phase: (runs, concurrency) => child.call({ runs, concurrency }), close: child.close }
  }
  try {
    return await measureRounds({ title, unit, turnsPerRun, server, runners, options, names, started })
  } finally {
    for (const runner of Object.values(runners)) runner.close()
  }
}

async function measureRounds({ title, unit, turnsPerRun, server, runners, options, names, started }) {
  const { runs, rounds, warmup, concurrency } = options

  console.log(`${title}`)
  console.log(
    `node ${process.version}, ${cpus().length} cores (${cpus()[0]?.model?.trim() ?? "unknown cpu"}), ` +
      `${runs} runs per phase, ${rounds} rounds, ${warmup} warm-up runs, ${turnsPerRun} LLM requests per run` +
      `, ${options.sameProcess ? "all variants in this process" : "each variant in its own process"}` +
      `${options.forceGc ? ", gc() before each phase" : ""}`,
  )

  // Warm-up, and a check that every variant sends byte-identical request bodies.
  await server.stats(true) // reset the counters, digest what follows
  const seen = {}
  for (const name of names) {
    await runners[name].phase(warmup, 1)
    await runners[name].phase(warmup, 32)
    seen[name] = await server.stats(true)
    if (seen[name].requests !== warmup * 2 * turnsPerRun) {
      throw new Error(
        `${name}: expected ${warmup * 2 * turnsPerRun} requests, the mock saw ${seen[name].requests}`,
      )
    }
  }
  await server.stats(false) // no digests while measuring
  const perRequest = (name) => (seen[name].bodyBytes / seen[name].requests).toFixed(1)
  if (names.some((name) => seen[name].digest !== seen[names[0]].digest)) {
    console.warn(
      `WARNING: the request bodies differ (${names.map((n) => `${n} ${perRequest(n)} B`).join(", ")})`,
    )
  } else {
    console.log(
      `request bodies: ${perRequest(names[0])} bytes on average, byte-identical for ${names.join(" and ")}`,
    )
  }

  const samples = {}
  const ratios = {}
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse()
    for (const c of concurrency) {
      for (const name of order) {
        const m = await runners[name].phase(runs, c)
        const key = `${name}@${c}`
        samples[key] ??= { perUnitUs: [], runsPerSec: [] }
        samples[key].perUnitUs.push(unit.perRun ? m.cpuUs / runs : m.cpuUs / (runs * turnsPerRun))
        samples[key].runsPerSec.push(runs / (m.wallNs / 1e9))
        if (options.verbose) {
          console.log(
            `  round ${round + 1} ${key}: ${samples[key].perUnitUs.at(-1).toFixed(1)} µs, ${(m.wallNs / 1e6).toFixed(0)} ms`,
          )
        }
      }
      if (names.length === 2) {
        const [a, b] = names.map((name) => samples[`${name}@${c}`].perUnitUs.at(-1))
        ratios[c] ??= []
        ratios[c].push(a / b)
      }
    }
  }

  const rows = []
  for (const c of concurrency) {
    const row = { c, ratio: ratios[c] ? median(ratios[c]) : undefined }
    for (const name of names) {
      row[name] = {
        cpu: median(samples[`${name}@${c}`].perUnitUs),
        rps: median(samples[`${name}@${c}`].runsPerSec),
        spread: spread(samples[`${name}@${c}`].perUnitUs),
      }
    }
    rows.push(row)
  }
  printTable(unit.label, names, rows)
  console.log(`(${((Date.now() - started) / 1000).toFixed(1)} s)`)
  return rows
}

/**
 * Runs this script again in a child process that measures only the variant `name`, so no
 * variant shares a heap, JIT feedback or HTTP agent with another: each process is what a
 * user's process running that code alone would be. The child reaches the parent's mock
 * endpoint (see {@link startMockServer}) and serves `call(args)` with the handler it gives
 * {@link serveVariant}, so the parent still alternates the variants round by round.
 */
export async function forkVariant(name, server) {
  const args = []
  const argv = process.argv.slice(2)
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--style") i++
    else if (!argv[i].startsWith("--style=")) args.push(argv[i])
  }
  const child = fork(process.argv[1], [...args, "--style", server.style], {
    env: { ...process.env, TNX_BENCH_VARIANT: name, TNX_BENCH_BASE_URL: server.baseUrl },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  })
  const replies = []
  const gone = new Promise((_, reject) => {
    child.once("exit", (code) => reject(new Error(`the ${name} process exited (code ${code})`)))
  })
  gone.catch(() => {})
  child.on("message", (msg) => replies.shift()?.(msg))
  const next = () => Promise.race([new Promise((resolve) => replies.push(resolve)), gone])
  const ready = await next()
  if (ready?.type !== "ready") throw new Error(`the ${name} process did not start`)
  return {
    async call(args) {
      const reply = next()
      child.send({ type: "call", args })
      const msg = await reply
      if (msg.type !== "done") throw new Error(`the ${name} process failed: ${msg.error}`)
      return msg.result
    },
    close() {
      if (child.connected) child.send({ type: "exit" })
    },
  }
}

/**
 * The child's side of {@link forkVariant}: answers each `call(args)` with `handler(args)`.
 * Never resolves: the parent ends the process.
 */
export function serveVariant(handler) {
  process.on("message", async (msg) => {
    if (msg.type === "exit") process.exit(0)
    try {
      process.send({ type: "done", result: await handler(msg.args) })
    } catch (error) {
      process.send({ type: "failed", error: error instanceof Error ? error.stack : String(error) })
    }
  })
  process.on("disconnect", () => process.exit(0)) // the parent is gone
  process.send({ type: "ready" })
  return new Promise(() => {})
}

/** (max - min) / median, in percent: how noisy the rounds were. */
function spread(values) {
  return ((Math.max(...values) - Math.min(...values)) / median(values)) * 100
}

function printTable(label, names, rows) {
  const header = ["concurrency"]
  for (const name of names) header.push(`${name} ${label}`, `${name} runs/s`)
  if (names.length === 2) header.push(`ratio ${names[0]}/${names[1]}`)
  const lines = [header]
  for (const row of rows) {
    const line = [`c=${row.c}`]
    for (const name of names) {
      line.push(`${row[name].cpu.toFixed(1)} ±${row[name].spread.toFixed(0)}%`, row[name].rps.toFixed(0))
    }
    if (names.length === 2) line.push(`${row.ratio.toFixed(2)}x`)
    lines.push(line)
  }
  const widths = header.map((_, i) => Math.max(...lines.map((l) => l[i].length)))
  console.log("")
  for (const [i, line] of lines.entries()) {
    console.log(
      line.map((cell, j) => (j === 0 ? cell.padEnd(widths[j]) : cell.padStart(widths[j]))).join("  "),
    )
    if (i === 0) console.log(widths.map((w) => "-".repeat(w)).join("  "))
  }
  console.log("(CPU and runs/s: medians of the rounds; ± = (max - min) / median of the rounds;")
  console.log(" ratio: median of the per-round ratios, each pairing two adjacent phases)")
}

/** Runs the tasks (functions returning promises) with at most `jobs` at a time; their results in order. */
export async function pool(tasks, jobs) {
  const results = new Array(tasks.length)
  let next = 0
  const worker = async () => {
    while (next < tasks.length) {
      const i = next++
      results[i] = await tasks[i]()
    }
  }
  await Promise.all(Array.from({ length: jobs }, worker))
  return results
}

/**
 * The instructions valgrind's callgrind counts for `node --single-threaded <script> <args>` (the
 * child's whole run); rejects with valgrind's output when it fails.
 */
export function callgrindCount(script, args) {
  const argv = [
    "--tool=callgrind",
    "--callgrind-out-file=/dev/null",
    process.execPath,
    "--single-threaded",
    script,
    ...args,
  ]
  return new Promise((resolve, reject) => {
    execFile("valgrind", argv, { maxBuffer: 64 << 20 }, (error, _stdout, stderr) => {
      const found = /Collected : (\d+)/.exec(stderr)
      if (error || !found) reject(new Error(`valgrind ${args.join(" ")}: ${error?.message ?? stderr}`))
      else resolve(Number(found[1]))
    })
  })
}
