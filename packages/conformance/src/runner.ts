import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  type AgentDef,
  type Handle,
  type Runtime,
  type RuntimeOptions,
  createRuntime,
  fromDir,
  restoreRuntime,
} from "@toolnexus/agents"
import {
  type Answer,
  type Client,
  type ConversationStore,
  type Message,
  type CompactionOptions,
  MemoryStore,
  type Request,
  type Tool,
  type Toolkit,
  createClient,
  createToolkit,
  compactMessages,
  relayAnswer,
  relayCallsOf,
} from "@toolnexus/core"
import {
  type FakeLLMServer,
  createFakeLLMServer,
  transcriptProblems,
  userTurns,
} from "@toolnexus/core/testing"
import {
  type DurableStore,
  askWithAnswer,
  deliverAnswer,
  loadRuntime,
  openStore,
  runWithAnswer,
  saveRuntime,
} from "@toolnexus/durable"
import { SqliteStore } from "@toolnexus/durable/sqlite"
import type {
  CompactionSpec,
  Expect,
  Fixture,
  Json,
  Step,
  Style,
  TranscriptExpect,
  WaitForPolicy,
} from "./fixture.js"
import { type LlmObservations, requestView, scriptRules } from "./llm-script.js"
import { match, show } from "./match.js"
import { type ToolRun, buildTools } from "./tools.js"
import { DanglingReferenceError, resolveRefs, roundTrip } from "./values.js"

/** How long one step may take before the fixture fails instead of hanging the suite. */
const STEP_TIMEOUT_MS = 5_000
/** The key under which `restart` with `via: "store"` saves the runtime. */
const RUNTIME_KEY = "conformance-runtime"
const MODEL = "test-model"

/** A step of any verb, read generically: its arguments are all fields but do, as, expect, note and steps. */
type AnyStep = Step & { steps?: Step[] }

/** A fixture that ran but did not behave as expected; the message names fixture, style and step. */
export class ConformanceFailure extends Error {
  override readonly name = "ConformanceFailure"
}

/**
 * Runs one fixture against the real packages in one endpoint style, through a fresh fake LLM
 * server. Resolves when every step behaved as its `expect` says.
 *
 * @throws ConformanceFailure at the first step whose expectations fail.
 */
export async function runFixture(fixture: Fixture, style: Style): Promise<void> {
  const run = new FixtureRun(fixture, style)
  try {
    await run.start()
    for (const [i, step] of fixture.steps.entries()) await run.step(step, `steps[${i}]`)
  } finally {
    await run.stop()
  }
}

/** An error a step threw, as saved with `as` and matched by `throws`. */
interface ErrorInfo {
  name: string
  code?: string
  reason?: string
  message: string
}

class FixtureRun {
  readonly env = new Map<string, unknown>()
  readonly toolLog: ToolRun[] = []
  readonly asked: Request[] = []
  readonly closed: string[] = []
  readonly seen: LlmObservations = { unmatched: [], peakInFlight: 0 }
  readonly tools: Map<string, Tool>
  server!: FakeLLMServer
  store!: ConversationStore
  dir: string | undefined
  /** Where the fixture's `homes` were written. */
  homesDir: string | undefined
  client: { client: Client; toolkit: Toolkit } | undefined
  runtime: Runtime | undefined
  reportedUnmatched = 0

  constructor(
    readonly fx: Fixture,
    readonly style: Style,
  ) {
    this.tools = buildTools(fx.tools ?? [], this.toolLog)
    // Built-in, live: what the waitFor policies were asked, so answers can echo their ids.
    this.env.set("asked", this.asked)
  }

  async start(): Promise<void> {
    if (this.fx.homes) {
      this.homesDir = mkdtempSync(join(tmpdir(), "tnx-conformance-homes-"))
      for (const [home, files] of Object.entries(this.fx.homes)) {
        mkdirSync(join(this.homesDir, home))
        for (const [file, text] of Object.entries(files)) writeFileSync(join(this.homesDir, home, file), text)
      }
    }
    this.server = await createFakeLLMServer()
    // The observing rule reads the live server's in-flight count, so rules go in once it exists.
    for (const rule of scriptRules(this.server, this.fx.llm, this.fx.registry ?? [], this.seen)) {
      this.server.addRule(rule)
    }
    if (this.fx.store === "sqlite") {
      this.dir = mkdtempSync(join(tmpdir(), "tnx-conformance-"))
      this.store = new SqliteStore({ path: join(this.dir, "runs.db") })
    } else this.store = new MemoryStore()
  }

  async stop(): Promise<void> {
    const rt = this.runtime
    this.runtime = undefined
    if (rt)
      await withTimeout(rt.close(rt.root, { force: true }), 2_000, "closing the runtime").catch(() => {})
    await (this.store as Partial<DurableStore>).close?.().catch(() => {})
    await this.server?.close()
    if (this.dir) rmSync(this.dir, { recursive: true, force: true })
    if (this.homesDir) rmSync(this.homesDir, { recursive: true, force: true })
  }

  // ---- steps ---------------------------------------------------------------------------------

  async step(step: AnyStep, path: string): Promise<void> {
    const where = `${this.fx.name} [${this.style}] ${path} (${step.do})`
    const { do: verb, as, expect, note: _note, steps: _steps, ...rawArgs } = step
    const args = this.resolve(rawArgs, path, where) as Record<string, any>
    let value: unknown
    let error: unknown
    let thrown = false
    try {
      value = await withTimeout(this.perform(verb, args, step, path), STEP_TIMEOUT_MS, where)
    } catch (e) {
      if (e instanceof ConformanceFailure) throw e
      error = e
      thrown = true
    }
    const problems: string[] = []
    if (thrown) {
      const info = errorInfo(error)
      if (expect?.throws === undefined) {
        throw new ConformanceFailure(`${where}: threw ${info.name}: ${info.message}`, { cause: error })
      }
      problems.push(...this.checkThrows(expect.throws, info, `${path}.expect.throws`))
      value = info
    } else {
      value = roundTrip(value)
      if (expect?.throws !== undefined) {
        const name = typeof expect.throws === "string" ? expect.throws : expect.throws.name
        problems.push(`${path}.expect.throws: expected ${name}, but the step returned ${show(value)}`)
      }
    }
    if (as !== undefined) this.env.set(as, value)
    if (expect)
      problems.push(...(await this.check(this.resolve(expect, `${path}.expect`, where), value, path)))
    for (const req of this.seen.unmatched.slice(this.reportedUnmatched)) {
      problems.push(
        `LLM request #${req.index} matched no rule (system ${show(req.system)}, ` +
          `lastUserText ${show(req.lastUserText)}, ${req.toolResults.length} tool results)`,
      )
    }
    this.reportedUnmatched = this.seen.unmatched.length
    if (problems.length > 0) throw new ConformanceFailure(`${where}:\n  ${problems.join("\n  ")}`)
  }

  async perform(verb: Step["do"], args: Record<string, any>, step: AnyStep, path: string): Promise<unknown> {
    switch (verb) {
      case "run": {
        const { client, toolkit } = await this.clientFor(args.fresh)
        return client.run(args.prompt, { toolkit })
      }
      case "ask": {
        const { client, toolkit } = await this.clientFor(args.fresh)
        return client.ask(args.prompt, { toolkit, id: args.id })
      }
      case "continueRun": {
        const { client, toolkit } = await this.clientFor(args.fresh)
        return client.continueRun({
          toolkit,
          ...(args.messages === undefined ? {} : { messages: args.messages as Message[] }),
          ...(args.id === undefined ? {} : { id: args.id }),
          ...(args.pending === undefined ? {} : { pending: args.pending as Request }),
          ...(args.answer === undefined ? {} : { answer: toAnswer(args.answer) }),
        })
      }
      case "runWithAnswer": {
        const { client, toolkit } = await this.clientFor(args.fresh)
        return runWithAnswer(client, {
          toolkit,
          history: args.history as Message[],
          pending: args.pending as Request,
          answer: toAnswer(args.answer),
        })
      }
      case "askWithAnswer": {
        const { client, toolkit } = await this.clientFor(args.fresh)
        return askWithAnswer(client, {
          toolkit,
          id: args.id,
          answer: toAnswer(args.answer),
          ...(args.pending === undefined ? {} : { pending: args.pending as Request }),
        })
      }
      case "listPending":
        return this.durable("listPending").listPending({
          ...(args.kind === undefined ? {} : { kind: args.kind }),
          ...(args.limit === undefined ? {} : { limit: args.limit }),
          ...(args.after === undefined ? {} : { after: args.after }),
        })
      case "findRequest":
        return (await this.durable("findRequest").findRequest(args.requestId)) ?? null
      case "deliverAnswer": {
        const store = this.durable("deliverAnswer")
        const { client, toolkit } = await this.clientFor(args.fresh)
        const runtime = this.fx.registry === undefined ? undefined : this.runtimeOptions()
        const delivered = await deliverAnswer(store, toAnswer(args.answer), {
          client,
          toolkit,
          ...(runtime ? { runtime } : {}),
        })
        // The saved runtime moved on: later steps see it as a new process would.
        if (delivered.kind === "runtime" && runtime)
          this.runtime = await loadRuntime(store, delivered.key, runtime)
        return delivered
      }
      case "spawn":
        return this.rt().spawn(this.handle(args.parent), args.agent, args.budget).id
      case "post":
        return this.rt().post(this.handle(args.handle), {
          text: args.text,
          ...(args.from === undefined ? {} : { from: args.from }),
          ...(args.channel === undefined ? {} : { channel: args.channel }),
        })
      case "wake":
        return this.rt().wake(this.handle(args.handle), args.prompt)
      case "wait": {
        const opts = args.timeoutMs === undefined ? {} : { timeoutMs: args.timeoutMs as number }
        if (args.handles !== undefined) {
          const ids = args.handles as string[]
          return Promise.all(ids.map((id) => this.rt().wait(this.handle(id), opts)))
        }
        return this.rt().wait(this.handle(args.handle), opts)
      }
      case "interrupt":
        return this.rt().interrupt(this.handle(args.handle))
      case "close":
        return this.rt().close(
          this.handle(args.handle),
          args.force === undefined ? {} : { force: args.force },
        )
      case "resume":
        return this.rt().resume(toAnswer(args.answer))
      case "restart":
        return this.restart(args.via ?? "json", args.schemaVersion)
      case "until":
        return this.until(args)
      case "compact": {
        const style = this.style === "anthropic" ? { style: "anthropic" as const } : {}
        const compacted = await compactMessages(args.messages, { ...compactionOf(args.options), ...style })
        return compacted ?? null
      }
      case "check":
        return undefined
      case "all":
        return this.all(step.steps as Step[], path)
    }
  }

  /** Sub-steps run concurrently; their outcomes (values or errors) form the step's value. */
  async all(steps: AnyStep[], path: string): Promise<unknown> {
    type Outcome = { value: unknown; error?: undefined } | { value?: undefined; error: ErrorInfo }
    const resolved = steps.map((sub, i) => {
      const { do: _verb, as: _as, expect: _expect, note: _note, steps: _nested, ...rawArgs } = sub
      const at = `${path}.steps[${i}]`
      return this.resolve(rawArgs, at, `${this.fx.name} [${this.style}] ${at} (${sub.do})`) as Record<
        string,
        any
      >
    })
    const outcomes = await Promise.all(
      steps.map(async (sub, i): Promise<Outcome> => {
        const { do: verb } = sub
        const args = resolved[i] as Record<string, any>
        try {
          return { value: roundTrip(await this.perform(verb, args, sub, path)) ?? null }
        } catch (error) {
          return { error: errorInfo(error) }
        }
      }),
    )
    const errors = outcomes.flatMap((o) => (o.error ? [o.error.name] : [])).sort()
    return { outcomes, errors, values: outcomes.filter((o) => !o.error).length }
  }

  /**
   * "Restart the process": the runtime's snapshot goes through JSON (or through the durable
   * store), every client, toolkit and runtime object is dropped, the SQLite store is reopened,
   * and a new runtime is restored from the snapshot with the re-supplied registry.
   * `schemaVersion` overwrites the snapshot's version before restoring.
   */
  async restart(via: "json" | "store", schemaVersion?: number): Promise<unknown> {
    const old = this.runtime
    let snapshot: unknown
    if (old) {
      if (via === "store") {
        await saveRuntime(this.durable("restart via store"), RUNTIME_KEY, old)
        snapshot = await this.durable("restart via store").getSnapshot(RUNTIME_KEY)
      } else snapshot = JSON.parse(JSON.stringify(old.snapshot()))
      // A tampered version checks that a reader refuses snapshots it does not know.
      if (schemaVersion !== undefined) (snapshot as { schemaVersion: number }).schemaVersion = schemaVersion
    }
    this.runtime = undefined
    this.client = undefined
    if (this.fx.store === "sqlite" && this.dir) {
      await (this.store as DurableStore).close()
      this.store = await openStore(`sqlite:${join(this.dir, "runs.db")}`)
    }
    if (old) {
      this.runtime =
        via === "store"
          ? await loadRuntime(this.durable("restart via store"), RUNTIME_KEY, this.runtimeOptions())
          : restoreRuntime(snapshot as Parameters<typeof restoreRuntime>[0], this.runtimeOptions())
    }
    return snapshot ?? null
  }

  async until(args: Record<string, any>): Promise<void> {
    const deadline = Date.now() + 3_000
    const done = () => {
      if (args.llmInFlight !== undefined && this.server.inFlight !== args.llmInFlight) return false
      if (args.llmRequests !== undefined && this.server.requests.length < args.llmRequests) return false
      if (args.state !== undefined && this.rt().stateOf(this.handle(args.state.handle)) !== args.state.is)
        return false
      return true
    }
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`until: ${JSON.stringify(args)} did not happen within 3 s`)
      await new Promise((resolve) => setTimeout(resolve, 2))
    }
  }

  /** Resolves `$name.path` references; one that points at nothing fails the fixture, not the step. */
  resolve<T>(value: T, field: string, where: string): T {
    try {
      return resolveRefs(value, this.env, field) as T
    } catch (error) {
      if (error instanceof DanglingReferenceError) throw new ConformanceFailure(`${where}: ${error.message}`)
      throw error
    }
  }

  // ---- building the packages' objects --------------------------------------------------------

  async clientFor(fresh: boolean | undefined): Promise<{ client: Client; toolkit: Toolkit }> {
    if (this.client && !fresh) return this.client
    const spec = this.fx.client ?? {}
    const names = spec.tools ?? [...this.tools.keys()]
    const client = createClient({
      baseUrl: this.baseUrl(),
      style: this.style,
      model: this.fx.model ?? MODEL,
      apiKey: "test-key",
      retryBaseMs: 1,
      store: this.store,
      ...(spec.systemPrompt === undefined ? {} : { systemPrompt: spec.systemPrompt }),
      ...(spec.maxTurns === undefined ? {} : { maxTurns: spec.maxTurns }),
      ...(spec.waitFor === undefined ? {} : { waitFor: this.policy(spec.waitFor) }),
      ...(spec.compaction === undefined ? {} : { compaction: compactionOf(spec.compaction) }),
    })
    const toolkit = await createToolkit({ extraTools: names.map((n) => this.tools.get(n) as Tool) })
    this.client = { client, toolkit }
    return this.client
  }

  rt(): Runtime {
    this.runtime ??= createRuntime(this.runtimeOptions())
    return this.runtime
  }

  runtimeOptions(): RuntimeOptions {
    const registry: Record<string, AgentDef> = {}
    for (const spec of this.fx.registry ?? []) {
      const tools = (spec.tools ?? []).map((n) => this.tools.get(n) as Tool)
      const def: AgentDef = {
        // A home's files are read now: a new runtime (a new session) sees what memory wrote.
        ...(spec.home === undefined
          ? {}
          : fromDir(this.homePath(spec.home), { name: spec.name, does: spec.does, tools }).def),
        name: spec.name,
        does: spec.does,
        onClose: (h, reason) => {
          this.closed.push(`${h.id}:${reason}`)
        },
      }
      if (spec.home === undefined) def.tools = tools
      if (spec.soul !== undefined) def.soul = spec.soul
      if (spec.model !== undefined) def.model = spec.model
      if (spec.team !== undefined) def.team = spec.team
      if (spec.budget !== undefined) def.budget = spec.budget
      if (spec.waitFor !== undefined) def.waitFor = this.policy(spec.waitFor)
      registry[spec.name] = def
    }
    const opts: RuntimeOptions = {
      registry,
      llm: { baseUrl: this.baseUrl(), style: this.style, model: this.fx.model ?? MODEL, apiKey: "test-key" },
      store: this.store,
    }
    const rt = this.fx.runtime ?? {}
    if (rt.inboxCap !== undefined) opts.inboxCap = rt.inboxCap
    if (rt.maxConcurrentTurns !== undefined) opts.maxConcurrentTurns = rt.maxConcurrentTurns
    if (rt.shutdownMs !== undefined) opts.shutdownMs = rt.shutdownMs
    return opts
  }

  policy(spec: WaitForPolicy): (req: Request) => Answer {
    return (req) => {
      this.asked.push(roundTrip(req))
      return { id: req.id, ...roundTrip(spec.answer) } as Answer
    }
  }

  homePath(home: string): string {
    if (!this.homesDir || !this.fx.homes?.[home])
      throw new Error(`no home ${show(home)} in the fixture's homes`)
    return join(this.homesDir, home)
  }

  baseUrl(): string {
    return this.style === "anthropic" ? this.server.url : `${this.server.url}/v1`
  }

  handle(id: unknown): Handle {
    if (typeof id !== "string") throw new Error(`a handle is named by its id string, got ${show(id)}`)
    const rt = this.rt()
    if (id === "root") return rt.root
    // An unknown id is passed on as is, so the runtime's own error is what the fixture sees.
    return rt.handle(id) ?? { id }
  }

  durable(what: string): DurableStore {
    if (this.fx.store !== "sqlite") throw new Error(`${what} needs "store": "sqlite"`)
    return this.store as DurableStore
  }

  // ---- expectations --------------------------------------------------------------------------

  checkThrows(spec: NonNullable<Expect["throws"]>, info: ErrorInfo, path: string): string[] {
    const want = typeof spec === "string" ? { name: spec } : spec
    const problems: string[] = []
    if (info.name !== want.name)
      problems.push(`${path}: expected ${want.name}, got ${info.name}: ${info.message}`)
    if (want.code !== undefined && info.code !== want.code)
      problems.push(`${path}.code: expected ${show(want.code)}, got ${show(info.code)}`)
    if (want.reason !== undefined && info.reason !== want.reason)
      problems.push(`${path}.reason: expected ${show(want.reason)}, got ${show(info.reason)}`)
    if (want.message !== undefined && !info.message.includes(want.message))
      problems.push(
        `${path}.message: expected it to contain ${show(want.message)}, got ${show(info.message)}`,
      )
    return problems
  }

  /** Checks a step's (already resolved) expectations; returns the mismatches. */
  async check(e: Expect, value: unknown, path: string): Promise<string[]> {
    const at = `${path}.expect`
    const out: string[] = []
    const m = (expected: Json | undefined, actual: unknown, field: string) => {
      if (expected !== undefined) out.push(...match(expected, actual, `${at}.${field}`, this.style))
    }
    m(e.result, value, "result")
    if (e.transcript) {
      const messages = (value as { messages?: Message[] } | undefined)?.messages
      out.push(...this.checkTranscript(e.transcript, messages, `${at}.transcript`))
    }
    if (e.relayCalls !== undefined) {
      const pending = (value as { pending?: Request } | undefined)?.pending
      m(e.relayCalls, pending ? relayCallsOf(pending) : undefined, "relayCalls")
    }
    const requests = this.server.requests
    m(e.llmRequests, requests.length, "llmRequests")
    m(e.llmPeakInFlight, this.seen.peakInFlight, "llmPeakInFlight")
    for (const [agent, count] of Object.entries(e.llmRequestsByAgent ?? {})) {
      m(count, this.requestsOf(agent).length, `llmRequestsByAgent.${agent}`)
    }
    for (const [i, { index, agent, ...fields }] of (e.requests ?? []).entries()) {
      const pool = agent === undefined ? [...requests] : this.requestsOf(String(agent))
      const req = pool.at(index)
      const field = `requests[${i}]`
      if (!req) out.push(`${at}.${field}: no LLM request at index ${index} (${pool.length} recorded)`)
      else m(fields as Json, requestView(req), field)
    }
    if (e.handles || e.list || e.trace || e.closed) {
      const rt = this.rt()
      const snapshot = rt.snapshot()
      for (const [id, expected] of Object.entries(e.handles ?? {})) {
        const h = this.handle(id)
        let view: unknown
        try {
          const budget = snapshot.handles.find((s) => s.id === id)?.budget
          view = { ...rt.inspect(h), transitions: rt.transitions(h), budget }
        } catch (error) {
          out.push(`${at}.handles.${id}: ${errorInfo(error).message}`)
          continue
        }
        m(expected, roundTrip(view), `handles.${id}`)
      }
      m(e.list, roundTrip(rt.list()), "list")
      if (e.trace) {
        const trace = rt.trace()
        for (const line of e.trace.contains ?? []) {
          if (!trace.includes(line)) out.push(`${at}.trace.contains: no line ${show(line)} in ${show(trace)}`)
        }
        for (const text of e.trace.excludes ?? []) {
          const hit = trace.find((l) => l.includes(text))
          if (hit !== undefined) out.push(`${at}.trace.excludes: line ${show(hit)} contains ${show(text)}`)
        }
        for (const [text, count] of Object.entries(e.trace.count ?? {})) {
          const n = trace.filter((l) => l.includes(text)).length
          if (n !== count) out.push(`${at}.trace.count: ${n} lines contain ${show(text)}, expected ${count}`)
        }
      }
      m(e.closed, this.closed, "closed")
    }
    for (const [key, expected] of Object.entries(e.store ?? {})) {
      const field = `${at}.store.${key}`
      // A handle id names that handle's conversation, in the runtime's namespace; any other key
      // is a conversation id as it is.
      const handle = this.runtime?.handle(key)
      const id = handle && this.runtime ? this.runtime.conversationId(handle) : key
      const messages = await this.store.get(id)
      const { pending, exists, ...transcript } = expected
      if (exists !== undefined && (messages !== undefined) !== exists)
        out.push(`${field}.exists: expected ${exists}, got ${messages !== undefined}`)
      if (pending !== undefined) {
        if (!this.store.getPending) out.push(`${field}.pending: this store cannot report pending requests`)
        else m(pending, roundTrip(await this.store.getPending(id)), `store.${key}.pending`)
      }
      out.push(...this.checkTranscript(transcript, messages, field))
    }
    for (const [home, files] of Object.entries(e.files ?? {})) {
      for (const [file, expected] of Object.entries(files)) {
        let text: string | null = null
        try {
          text = readFileSync(join(this.homePath(home), file), "utf8")
        } catch {
          text = null
        }
        m(expected, text, `files.${home}.${file}`)
      }
    }
    for (const [tool, expected] of Object.entries(e.tools ?? {})) {
      const runs = this.toolLog.filter((r) => r.tool === tool)
      m(expected.runs, runs.length, `tools.${tool}.runs`)
      m(expected.answers, roundTrip(runs.map((r) => r.answer)), `tools.${tool}.answers`)
      if (expected.sameKey !== undefined) {
        const keys = new Set(runs.map((r) => r.idempotencyKey))
        const same = runs.length > 0 && keys.size === 1 && !keys.has(undefined)
        if (same !== expected.sameKey)
          out.push(`${at}.tools.${tool}.sameKey: expected ${expected.sameKey}, keys were ${show([...keys])}`)
      }
    }
    m(e.asked, this.asked, "asked")
    return out
  }

  checkTranscript(e: TranscriptExpect, messages: Message[] | undefined, field: string): string[] {
    const out: string[] = []
    if (e.messages === undefined && e.balanced === undefined && e.userTurns === undefined) return out
    if (!messages) return [`${field}: there is no transcript to check`]
    if (e.messages !== undefined)
      out.push(...match(e.messages, messages.length, `${field}.messages`, this.style))
    if (e.balanced !== undefined) {
      const problems = transcriptProblems(messages)
      if ((problems.length === 0) !== e.balanced)
        out.push(`${field}.balanced: expected ${e.balanced}; problems: ${show(problems)}`)
    }
    if (e.userTurns !== undefined && userTurns(messages) !== e.userTurns)
      out.push(`${field}.userTurns: expected ${e.userTurns}, got ${userTurns(messages)}`)
    return out
  }

  requestsOf(agent: string) {
    const soul = this.fx.registry?.find((d) => d.name === agent)?.soul
    return this.server.requests.filter((r) => soul !== undefined && r.system === soul)
  }
}

/** Builds the answer of a step: plain, or through `relayAnswer` for `{id, relay: [...]}`. */
function toAnswer(spec: unknown): Answer {
  const a = spec as { id: string; relay?: { id: string; output: string; isError?: boolean }[] } & Answer
  if (a.relay !== undefined) return relayAnswer(a.id, a.relay)
  return a
}

function errorInfo(error: unknown): ErrorInfo {
  if (error instanceof Error) {
    const { code, reason } = error as { code?: unknown; reason?: unknown }
    const info: ErrorInfo = { name: error.name, message: error.message }
    if (typeof code === "string") info.code = code
    if (typeof reason === "string") info.reason = reason
    return info
  }
  return { name: typeof error, message: String(error) }
}

function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ConformanceFailure(`${what}: did not settle within ${ms} ms`)), ms)
    timer.unref()
  })
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer))
}

/** A fixture's compaction options: `summarize` from its template, `countTokens` by name. */
function compactionOf(spec: CompactionSpec): CompactionOptions {
  const { summarize, countTokens, ...rest } = spec
  return {
    ...rest,
    summarize: (older) => summarize.replaceAll("{count}", String(older.length)),
    ...(countTokens === "messages" ? { countTokens: (messages: Message[]) => messages.length } : {}),
  }
}
