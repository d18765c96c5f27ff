/**
 * The conformance fixture format: plain JSON, so that any implementation of the contract (in
 * any language) can run the same files. README.md documents every field; this module holds
 * the TypeScript shape and the validator that turns a malformed file into a loud error.
 */

import type { Budget } from "@toolnexus/agents"

/** Any JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/** A JSON object. */
export type JsonObject = { [key: string]: Json }

/** The three endpoint styles every fixture runs in. */
export type Style = "openai" | "anthropic" | "openai-responses"

/** Every style, in the order the suite runs them. */
export const STYLES: readonly Style[] = ["openai", "anthropic", "openai-responses"]

/** A JSON Schema type name for a tool parameter. */
export type ParamType = "string" | "number" | "integer" | "boolean" | "object" | "array"

/** A request a tool suspends with; `prompt` and `url` are templates over the call's arguments. */
export interface SuspendSpec {
  kind: string
  prompt: string
  url?: string
  data?: JsonObject
  expiresAt?: string
}

/**
 * A tool with a declarative behaviour: exactly one of `returns`, `suspends`, `fails` and
 * `relay`. Templates (`"paid {amount}"`) are filled from the call's arguments.
 */
export interface ToolSpec {
  name: string
  description?: string
  /** Parameter name → JSON Schema type; every parameter is required. */
  params?: Record<string, ParamType>
  returns?: string
  suspends?: SuspendSpec
  /** With `suspends`: the result of the retry that carries an `ok` answer. Absent ⇒ it suspends again. */
  then?: string
  /** The tool throws an error with this message. */
  fails?: string
  /** A declaration-only tool the host executes (`relayTool`). */
  relay?: true
  /** Wait this long before answering (returns/suspends/fails). */
  delayMs?: number
}

/** The answer a `waitFor` policy gives to every request it sees; the id is filled in. */
export interface WaitForPolicy {
  answer: { ok: boolean; reason?: string; data?: JsonObject }
}

/** Budget limits: exactly those of `@toolnexus/agents`. */
export type BudgetSpec = Budget

/** An agent definition; tools are named from the fixture's `tools`. */
export interface AgentSpec {
  name: string
  does: string
  soul?: string
  model?: string
  team?: string[]
  tools?: string[]
  budget?: BudgetSpec
  waitFor?: WaitForPolicy
}

/** Options of the bare client used by `run`, `ask`, `continueRun`, `runWithAnswer`, `askWithAnswer`. */
export interface ClientSpec {
  systemPrompt?: string
  maxTurns?: number
  waitFor?: WaitForPolicy
  /** The tools of the client's toolkit; all fixture tools when absent. */
  tools?: string[]
}

/** Options of the agents runtime. */
export interface RuntimeSpec {
  inboxCap?: number
  maxConcurrentTurns?: number
  shutdownMs?: number
}

/** Conditions on an LLM request; all given ones must hold. */
export interface RuleMatch {
  /** The request comes from this agent: its system prompt equals the agent's `soul`. */
  agent?: string
  /** Substring of the system prompt. */
  system?: string
  /** Substring of the text of the last user message that has text. */
  lastUserText?: string
  /** Whether tool results follow the last assistant message. */
  toolResults?: boolean
  /** Substring of at least one of those tool results. */
  toolResult?: string
}

/** A tool call the scripted model makes. `args` as a string is sent verbatim (may be invalid JSON). */
export interface ReplyToolCall {
  id?: string
  name: string
  args?: JsonObject | string
}

/** A scripted model reply. `text` is a template over the request (see README). */
export interface ReplySpec {
  text?: string
  toolCalls?: ReplyToolCall[]
  usage?: { prompt?: number; completion?: number }
  delayMs?: number
  /** Never answer; released when the client aborts. */
  hang?: true
  /** A non-2xx HTTP status; `text` becomes the error message. */
  status?: number
  /** The model refuses with this text, in each style's own shape. */
  refusal?: string
  /** The reply is cut off by the output-token limit or a content filter. */
  cutOff?: "maxOutputTokens" | "contentFilter"
}

/** One rule of the scripted model: the first rule with uses left whose `when` holds answers. */
export interface LlmRule {
  when?: RuleMatch
  reply: ReplySpec
  /** How many requests the rule may answer; unlimited when absent. */
  times?: number
}

/** Expectations on a conversation transcript. */
export interface TranscriptExpect {
  /** Number of messages (a matcher such as `{"$style": {...}}` allowed). */
  messages?: Json
  /** Every tool call has exactly one result; no orphan results. */
  balanced?: boolean
  /** Number of user messages that carry text (not only tool results). */
  userTurns?: number
}

/** Expectations on a stored conversation. */
export interface StoreExpect extends TranscriptExpect {
  /** The stored pending request (partial match); `null` ⇒ none. */
  pending?: Json
  /** The conversation exists in the store. */
  exists?: boolean
}

/** Expectations on one tool's executions. */
export interface ToolExpect {
  runs?: number
  /** `ctx.answer` of each execution, in order (`null` when absent); partial match. */
  answers?: Json
  /** Every execution saw the same `ctx.idempotencyKey`. */
  sameKey?: boolean
}

/** Selects a recorded LLM request and matches its neutral view partially. */
export interface RequestExpect {
  /** Index among all requests (or among the agent's when `agent` is set); negative counts from the end. */
  index: number
  agent?: string
  [field: string]: Json | undefined
}

/** What is checked after a step (or on its own with `check`). */
export interface Expect {
  /** Partial match against the step's value (see README for matchers). */
  result?: Json
  /** The step must throw: an error name, or name plus `code`, `reason` and a `message` substring. */
  throws?: string | { name: string; code?: string; reason?: string; message?: string }
  /** On the step value's `messages`. */
  transcript?: TranscriptExpect
  /** `relayCallsOf(value.pending)`, partial match. */
  relayCalls?: Json
  /** Total LLM requests since the fixture started. */
  llmRequests?: number
  llmRequestsByAgent?: Record<string, number>
  /** Most LLM requests in flight at once, seen when a request arrived. */
  llmPeakInFlight?: number
  requests?: RequestExpect[]
  /** Handle id → partial match of its view (inspect + `transitions` + `budget`). */
  handles?: Record<string, Json>
  /** `runtime.list()`, partial match. */
  list?: Json
  trace?: { contains?: string[]; excludes?: string[]; count?: Record<string, number> }
  /** Conversation id (a handle id for agents) → expectations on the store. */
  store?: Record<string, StoreExpect>
  tools?: Record<string, ToolExpect>
  /** Requests the `waitFor` policies were asked, in order; partial match. */
  asked?: Json
  /** `onClose` calls so far, as `"<handle id>:<reason>"`, in order (or a matcher). */
  closed?: Json
}

/** The verbs a step can perform. */
export const VERBS = [
  "run",
  "ask",
  "continueRun",
  "runWithAnswer",
  "askWithAnswer",
  "listPending",
  "spawn",
  "post",
  "wake",
  "wait",
  "interrupt",
  "close",
  "resume",
  "restart",
  "until",
  "check",
  "all",
] as const

/** A step verb. */
export type Verb = (typeof VERBS)[number]

/**
 * One step. Arguments depend on the verb (see README); any string argument of the form
 * `"$name.path"` is replaced by a value saved earlier with `as`.
 */
export interface Step {
  do: Verb
  /** Saves the step's value (JSON round-tripped) under this name. */
  as?: string
  expect?: Expect
  [arg: string]: Json | Expect | Step[] | undefined
}

/** A whole fixture file. */
export interface Fixture {
  /** The file name without `.json`. */
  name: string
  /** The path the fixture was read from (for error messages). */
  file: string
  description: string
  model?: string
  /** Where conversations (and the runtime's handles) are kept; `sqlite` is a file in a temp dir. */
  store?: "memory" | "sqlite"
  tools?: ToolSpec[]
  registry?: AgentSpec[]
  client?: ClientSpec
  runtime?: RuntimeSpec
  llm: LlmRule[]
  steps: Step[]
}

/** A malformed fixture: the message names the file and the field. */
export class FixtureError extends Error {
  override readonly name = "FixtureError"
  constructor(
    readonly file: string,
    readonly field: string,
    problem: string,
  ) {
    super(`${file}: ${field}: ${problem}`)
  }
}

// ---- validation ----------------------------------------------------------------------------

type Check = (value: unknown, path: string) => void

const NAME = /^[a-zA-Z0-9_-]{1,64}$/
const PARAM_TYPES: readonly string[] = ["string", "number", "integer", "boolean", "object", "array"]
const BUDGET_FIELDS = [
  "maxTurns",
  "maxTokens",
  "maxToolCalls",
  "maxWallMs",
  "maxChildren",
  "maxConcurrent",
  "maxDepth",
] as const

/** Argument fields of each verb: name → required. `as`, `expect` and `note` are always allowed. */
const VERB_ARGS: Record<Verb, Record<string, boolean>> = {
  run: { prompt: true, fresh: false },
  ask: { prompt: true, id: true, fresh: false },
  continueRun: { messages: true, pending: false, answer: false, fresh: false },
  runWithAnswer: { history: true, pending: true, answer: true, fresh: false },
  askWithAnswer: { id: true, answer: true, pending: false, fresh: false },
  listPending: { kind: false, limit: false },
  spawn: { parent: true, agent: true, budget: false },
  post: { handle: true, text: true, from: false, channel: false },
  wake: { handle: true, prompt: false },
  wait: { handle: false, handles: false, timeoutMs: false },
  interrupt: { handle: true },
  close: { handle: true, force: false },
  resume: { answer: true },
  restart: { via: false, schemaVersion: false },
  until: { llmInFlight: false, llmRequests: false, state: false },
  check: {},
  all: { steps: true },
}

/**
 * Checks a parsed fixture and returns it typed. Unknown fields are errors too, so a typo never
 * turns into an assertion that silently checks nothing.
 *
 * @throws FixtureError naming the file and the offending field.
 */
export function validateFixture(raw: unknown, file: string, name: string): Fixture {
  const fail = (field: string, problem: string): never => {
    throw new FixtureError(file, field, problem)
  }
  const v = new Validator(fail)
  v.object(raw, "(root)", {
    $schema: false,
    description: true,
    model: false,
    store: false,
    tools: false,
    registry: false,
    client: false,
    runtime: false,
    llm: true,
    steps: true,
  })
  const fx = raw as Omit<Fixture, "name" | "file">
  v.string(fx.description, "description")
  if (fx.model !== undefined) v.string(fx.model, "model")
  if (fx.store !== undefined) v.oneOf(fx.store, "store", ["memory", "sqlite"])

  const tools = new Set<string>()
  v.array(fx.tools ?? [], "tools", (tool, path) => {
    v.tool(tool, path)
    const toolName = (tool as ToolSpec).name
    if (tools.has(toolName)) fail(`${path}.name`, `duplicate tool ${JSON.stringify(toolName)}`)
    tools.add(toolName)
  })

  const agents = new Map<string, AgentSpec>()
  v.array(fx.registry ?? [], "registry", (def, path) => {
    v.agent(def, path, tools)
    const spec = def as AgentSpec
    if (agents.has(spec.name)) fail(`${path}.name`, `duplicate agent ${JSON.stringify(spec.name)}`)
    agents.set(spec.name, spec)
  })
  const souls = new Map<string, string>()
  for (const [i, def] of (fx.registry ?? []).entries()) {
    for (const [j, member] of (def.team ?? []).entries()) {
      if (!agents.has(member)) fail(`registry[${i}].team[${j}]`, `unknown agent ${JSON.stringify(member)}`)
    }
    if (def.soul !== undefined) {
      const other = souls.get(def.soul)
      if (other)
        fail(
          `registry[${i}].soul`,
          `same soul as agent ${JSON.stringify(other)}; rules could not tell them apart`,
        )
      souls.set(def.soul, def.name)
    }
  }

  if (fx.client !== undefined) {
    v.object(fx.client, "client", { systemPrompt: false, maxTurns: false, waitFor: false, tools: false })
    if (fx.client.systemPrompt !== undefined) v.string(fx.client.systemPrompt, "client.systemPrompt")
    if (fx.client.maxTurns !== undefined) v.positiveInt(fx.client.maxTurns, "client.maxTurns")
    if (fx.client.waitFor !== undefined) v.waitFor(fx.client.waitFor, "client.waitFor")
    if (fx.client.tools !== undefined) v.names(fx.client.tools, "client.tools", tools, "tool")
  }
  if (fx.runtime !== undefined) {
    v.object(fx.runtime, "runtime", { inboxCap: false, maxConcurrentTurns: false, shutdownMs: false })
    for (const key of ["inboxCap", "maxConcurrentTurns", "shutdownMs"] as const) {
      if (fx.runtime[key] !== undefined) v.positiveInt(fx.runtime[key], `runtime.${key}`)
    }
  }

  v.array(fx.llm, "llm", (rule, path) => v.rule(rule, path, agents))
  v.array(fx.steps, "steps", (step, path) => v.step(step, path, agents))
  if (fx.steps.length === 0) fail("steps", "a fixture needs at least one step")
  return { ...fx, name, file }
}

class Validator {
  constructor(readonly fail: (field: string, problem: string) => never) {}

  object(value: unknown, path: string, fields: Record<string, boolean>): void {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      this.fail(path, `expected an object, got ${describe(value)}`)
    }
    const obj = value as Record<string, unknown>
    for (const key of Object.keys(obj)) {
      if (!(key in fields)) {
        const allowed = Object.keys(fields).filter((k) => k !== "$schema")
        this.fail(join(path, key), `unknown field; allowed here: ${allowed.join(", ") || "(none)"}`)
      }
    }
    for (const [key, required] of Object.entries(fields)) {
      if (required && obj[key] === undefined) this.fail(join(path, key), "is required")
    }
  }

  string(value: unknown, path: string): void {
    if (typeof value !== "string") this.fail(path, `expected a string, got ${describe(value)}`)
  }

  boolean(value: unknown, path: string): void {
    if (typeof value !== "boolean") this.fail(path, `expected true or false, got ${describe(value)}`)
  }

  positiveInt(value: unknown, path: string): void {
    if (typeof value !== "number" || !Number.isInteger(value) || value < 1)
      this.fail(path, `expected a positive integer, got ${describe(value)}`)
  }

  nonNegative(value: unknown, path: string): void {
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0)
      this.fail(path, `expected a number >= 0, got ${describe(value)}`)
  }

  oneOf(value: unknown, path: string, options: readonly string[]): void {
    if (typeof value !== "string" || !options.includes(value))
      this.fail(
        path,
        `expected one of ${options.map((o) => JSON.stringify(o)).join(", ")}, got ${describe(value)}`,
      )
  }

  array(value: unknown, path: string, each: Check): void {
    if (!Array.isArray(value)) this.fail(path, `expected an array, got ${describe(value)}`)
    for (const [i, item] of (value as unknown[]).entries()) each(item, `${path}[${i}]`)
  }

  jsonObject(value: unknown, path: string): void {
    if (typeof value !== "object" || value === null || Array.isArray(value))
      this.fail(path, `expected an object, got ${describe(value)}`)
  }

  names(value: unknown, path: string, known: Set<string>, what: string): void {
    this.array(value, path, (item, itemPath) => {
      this.string(item, itemPath)
      if (!known.has(item as string)) this.fail(itemPath, `unknown ${what} ${JSON.stringify(item)}`)
    })
  }

  tool(value: unknown, path: string): void {
    this.object(value, path, {
      name: true,
      description: false,
      params: false,
      returns: false,
      suspends: false,
      // biome-ignore lint/suspicious/noThenProperty: a field name of the fixture format, never awaited
      then: false,
      fails: false,
      relay: false,
      delayMs: false,
    })
    const tool = value as ToolSpec
    this.string(tool.name, `${path}.name`)
    if (!NAME.test(tool.name)) this.fail(`${path}.name`, "must match ^[a-zA-Z0-9_-]{1,64}$")
    if (tool.description !== undefined) this.string(tool.description, `${path}.description`)
    if (tool.params !== undefined) {
      this.jsonObject(tool.params, `${path}.params`)
      for (const [param, type] of Object.entries(tool.params)) {
        this.oneOf(type, `${path}.params.${param}`, PARAM_TYPES)
      }
    }
    const behaviours = (["returns", "suspends", "fails", "relay"] as const).filter(
      (b) => tool[b] !== undefined,
    )
    if (behaviours.length !== 1) {
      this.fail(
        path,
        "a tool needs exactly one behaviour of returns, suspends, fails, relay; " +
          `got ${behaviours.join(", ") || "none"}`,
      )
    }
    const known = tool.params ? Object.keys(tool.params) : undefined
    const template = (text: unknown, field: string) => {
      this.string(text, field)
      for (const name of placeholders(text as string)) {
        if (known && !known.includes(name))
          this.fail(field, `placeholder {${name}} is not a parameter (params: ${known.join(", ")})`)
      }
    }
    if (tool.returns !== undefined) template(tool.returns, `${path}.returns`)
    if (tool.fails !== undefined) template(tool.fails, `${path}.fails`)
    if (tool.relay !== undefined && tool.relay !== true) this.fail(`${path}.relay`, "must be true")
    if (tool.suspends !== undefined) {
      const s = `${path}.suspends`
      this.object(tool.suspends, s, { kind: true, prompt: true, url: false, data: false, expiresAt: false })
      this.string(tool.suspends.kind, `${s}.kind`)
      template(tool.suspends.prompt, `${s}.prompt`)
      if (tool.suspends.url !== undefined) template(tool.suspends.url, `${s}.url`)
      if (tool.suspends.data !== undefined) this.jsonObject(tool.suspends.data, `${s}.data`)
      if (tool.suspends.expiresAt !== undefined) this.string(tool.suspends.expiresAt, `${s}.expiresAt`)
    }
    if (tool.then !== undefined) {
      if (tool.suspends === undefined) this.fail(`${path}.then`, "only a suspending tool has `then`")
      template(tool.then, `${path}.then`)
    }
    if (tool.delayMs !== undefined) {
      if (tool.relay) this.fail(`${path}.delayMs`, "a relay tool never runs locally")
      this.nonNegative(tool.delayMs, `${path}.delayMs`)
    }
  }

  waitFor(value: unknown, path: string): void {
    this.object(value, path, { answer: true })
    const answer = (value as WaitForPolicy).answer
    this.object(answer, `${path}.answer`, { ok: true, reason: false, data: false })
    this.boolean(answer.ok, `${path}.answer.ok`)
    if (answer.reason !== undefined) this.string(answer.reason, `${path}.answer.reason`)
    if (answer.data !== undefined) this.jsonObject(answer.data, `${path}.answer.data`)
  }

  budget(value: unknown, path: string): void {
    this.object(value, path, Object.fromEntries(BUDGET_FIELDS.map((f) => [f, false])))
    for (const [field, n] of Object.entries(value as BudgetSpec)) this.nonNegative(n, `${path}.${field}`)
  }

  agent(value: unknown, path: string, tools: Set<string>): void {
    this.object(value, path, {
      name: true,
      does: true,
      soul: false,
      model: false,
      team: false,
      tools: false,
      budget: false,
      waitFor: false,
    })
    const def = value as AgentSpec
    this.string(def.name, `${path}.name`)
    if (!NAME.test(def.name)) this.fail(`${path}.name`, "must match ^[a-zA-Z0-9_-]{1,64}$")
    if (def.name === "root") this.fail(`${path}.name`, '"root" is the host\'s handle, not an agent')
    this.string(def.does, `${path}.does`)
    if (def.soul !== undefined) this.string(def.soul, `${path}.soul`)
    if (def.model !== undefined) this.string(def.model, `${path}.model`)
    if (def.team !== undefined) this.array(def.team, `${path}.team`, (m, p) => this.string(m, p))
    if (def.tools !== undefined) this.names(def.tools, `${path}.tools`, tools, "tool")
    if (def.budget !== undefined) this.budget(def.budget, `${path}.budget`)
    if (def.waitFor !== undefined) this.waitFor(def.waitFor, `${path}.waitFor`)
  }

  rule(value: unknown, path: string, agents: Map<string, AgentSpec>): void {
    this.object(value, path, { when: false, reply: true, times: false })
    const rule = value as LlmRule
    if (rule.times !== undefined) this.positiveInt(rule.times, `${path}.times`)
    if (rule.when !== undefined) {
      const w = `${path}.when`
      this.object(rule.when, w, {
        agent: false,
        system: false,
        lastUserText: false,
        toolResults: false,
        toolResult: false,
      })
      const { agent, system, lastUserText, toolResults, toolResult } = rule.when
      if (agent !== undefined) {
        this.string(agent, `${w}.agent`)
        const def = agents.get(agent)
        if (!def) this.fail(`${w}.agent`, `unknown agent ${JSON.stringify(agent)}`)
        if (def.soul === undefined)
          this.fail(
            `${w}.agent`,
            `agent ${JSON.stringify(agent)} has no soul; requests are told apart by soul`,
          )
      }
      if (system !== undefined) this.string(system, `${w}.system`)
      if (lastUserText !== undefined) this.string(lastUserText, `${w}.lastUserText`)
      if (toolResults !== undefined) this.boolean(toolResults, `${w}.toolResults`)
      if (toolResult !== undefined) this.string(toolResult, `${w}.toolResult`)
    }
    const r = `${path}.reply`
    this.object(rule.reply, r, {
      text: false,
      toolCalls: false,
      usage: false,
      delayMs: false,
      hang: false,
      status: false,
      refusal: false,
      cutOff: false,
    })
    const reply = rule.reply
    if (reply.refusal !== undefined) this.string(reply.refusal, `${r}.refusal`)
    if (reply.cutOff !== undefined && reply.cutOff !== "maxOutputTokens" && reply.cutOff !== "contentFilter")
      this.fail(`${r}.cutOff`, `expected "maxOutputTokens" or "contentFilter", got ${describe(reply.cutOff)}`)
    if (reply.text !== undefined) {
      this.string(reply.text, `${r}.text`)
      for (const name of placeholders(reply.text)) {
        if (!REPLY_VARIABLES.test(name))
          this.fail(`${r}.text`, `unknown placeholder {${name}}; use ${REPLY_VARIABLE_NAMES}`)
      }
    }
    if (reply.toolCalls !== undefined) {
      this.array(reply.toolCalls, `${r}.toolCalls`, (call, p) => {
        this.object(call, p, { id: false, name: true, args: false })
        const c = call as ReplyToolCall
        if (c.id !== undefined) this.string(c.id, `${p}.id`)
        this.string(c.name, `${p}.name`)
        if (c.args !== undefined && typeof c.args !== "string") this.jsonObject(c.args, `${p}.args`)
      })
    }
    if (reply.usage !== undefined) {
      this.object(reply.usage, `${r}.usage`, { prompt: false, completion: false })
      if (reply.usage.prompt !== undefined) this.nonNegative(reply.usage.prompt, `${r}.usage.prompt`)
      if (reply.usage.completion !== undefined)
        this.nonNegative(reply.usage.completion, `${r}.usage.completion`)
    }
    if (reply.delayMs !== undefined) this.nonNegative(reply.delayMs, `${r}.delayMs`)
    if (reply.hang !== undefined && reply.hang !== true) this.fail(`${r}.hang`, "must be true")
    if (reply.status !== undefined) {
      if (
        typeof reply.status !== "number" ||
        !Number.isInteger(reply.status) ||
        reply.status < 200 ||
        reply.status > 599
      )
        this.fail(`${r}.status`, `expected an HTTP status, got ${describe(reply.status)}`)
    }
    if (
      reply.text === undefined &&
      reply.toolCalls === undefined &&
      reply.refusal === undefined &&
      !reply.hang &&
      reply.status === undefined
    )
      this.fail(r, "a reply needs text, toolCalls, refusal, hang or status")
  }

  step(value: unknown, path: string, agents: Map<string, AgentSpec>): void {
    if (typeof value !== "object" || value === null || Array.isArray(value))
      this.fail(path, `expected a step object, got ${describe(value)}`)
    const verb = (value as { do?: unknown }).do
    if (typeof verb !== "string" || !(VERBS as readonly string[]).includes(verb)) {
      this.fail(`${path}.do`, `expected one of ${VERBS.join(", ")}, got ${describe(verb)}`)
    }
    const args = VERB_ARGS[verb as Verb]
    this.object(value, path, { do: true, as: false, expect: false, note: false, ...args })
    const step = value as Step
    if (step.as !== undefined) {
      this.string(step.as, `${path}.as`)
      if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(step.as)) this.fail(`${path}.as`, "must be an identifier")
      if (step.as === "asked") this.fail(`${path}.as`, '"asked" is built in (the requests waitFor was asked)')
    }
    if (step.note !== undefined) this.string(step.note, `${path}.note`)
    switch (step.do) {
      case "run":
      case "ask":
        this.string(step.prompt, `${path}.prompt`)
        break
      case "spawn": {
        this.string(step.agent, `${path}.agent`)
        const agent = step.agent as string
        if (!agent.startsWith("$") && !agents.has(agent)) {
          // Unknown agents are allowed only to test the unknown_agent error.
          const throws = step.expect?.throws
          const name = typeof throws === "string" ? throws : throws?.name
          if (name !== "RuntimeError") this.fail(`${path}.agent`, `unknown agent ${JSON.stringify(agent)}`)
        }
        if (step.budget !== undefined) this.budget(step.budget, `${path}.budget`)
        break
      }
      case "wait":
        if ((step.handle === undefined) === (step.handles === undefined))
          this.fail(path, "wait needs exactly one of `handle` and `handles`")
        if (step.timeoutMs !== undefined) this.nonNegative(step.timeoutMs, `${path}.timeoutMs`)
        break
      case "restart":
        if (step.via !== undefined) this.oneOf(step.via, `${path}.via`, ["json", "store"])
        if (step.schemaVersion !== undefined) {
          this.nonNegative(step.schemaVersion, `${path}.schemaVersion`)
          if (step.via === "store") this.fail(`${path}.schemaVersion`, 'only with "via": "json"')
        }
        break
      case "until":
        if (step.llmInFlight === undefined && step.llmRequests === undefined && step.state === undefined)
          this.fail(path, "until needs llmInFlight, llmRequests or state")
        if (step.state !== undefined) {
          this.object(step.state, `${path}.state`, { handle: true, is: true })
        }
        break
      case "all":
        this.array(step.steps, `${path}.steps`, (sub, p) => {
          this.step(sub, p, agents)
          // Concurrent outcomes are checked together on the `all` step, never one by one.
          for (const key of ["as", "expect"]) {
            if ((sub as Record<string, unknown>)[key] !== undefined)
              this.fail(`${p}.${key}`, "not allowed inside `all`; check the outcomes on the `all` step")
          }
        })
        break
      default:
        break
    }
    for (const key of ["answer"] as const) {
      if (step[key] !== undefined) this.answer(step[key], `${path}.${key}`)
    }
    if (step.fresh !== undefined) this.boolean(step.fresh, `${path}.fresh`)
    if (step.expect !== undefined) this.expect(step.expect, `${path}.expect`)
  }

  answer(value: unknown, path: string): void {
    if (isRef(value)) return
    this.object(value, path, { id: true, ok: false, reason: false, data: false, relay: false })
    const a = value as { ok?: unknown; relay?: unknown; reason?: unknown; data?: unknown }
    if (a.relay !== undefined) {
      if (a.ok !== undefined || a.data !== undefined || a.reason !== undefined)
        this.fail(path, "a `relay` answer is built by relayAnswer(); give only `id` and `relay`")
      this.array(a.relay, `${path}.relay`, (r, p) =>
        this.object(r, p, { id: true, output: true, isError: false }),
      )
    } else {
      if (a.ok === undefined) this.fail(`${path}.ok`, "is required (or give `relay` results)")
      this.boolean(a.ok, `${path}.ok`)
    }
  }

  expect(value: unknown, path: string): void {
    this.object(value, path, {
      result: false,
      throws: false,
      transcript: false,
      relayCalls: false,
      llmRequests: false,
      llmRequestsByAgent: false,
      llmPeakInFlight: false,
      requests: false,
      handles: false,
      list: false,
      trace: false,
      store: false,
      tools: false,
      asked: false,
      closed: false,
    })
    const e = value as Expect
    if (e.throws !== undefined && typeof e.throws !== "string") {
      this.object(e.throws, `${path}.throws`, { name: true, code: false, reason: false, message: false })
    }
    if (e.transcript !== undefined)
      this.object(e.transcript, `${path}.transcript`, { messages: false, balanced: false, userTurns: false })
    if (e.llmRequests !== undefined) this.nonNegative(e.llmRequests, `${path}.llmRequests`)
    if (e.llmPeakInFlight !== undefined) this.nonNegative(e.llmPeakInFlight, `${path}.llmPeakInFlight`)
    if (e.llmRequestsByAgent !== undefined)
      this.jsonObject(e.llmRequestsByAgent, `${path}.llmRequestsByAgent`)
    if (e.requests !== undefined) {
      this.array(e.requests, `${path}.requests`, (req, p) => {
        this.jsonObject(req, p)
        const r = req as RequestExpect
        if (typeof r.index !== "number" || !Number.isInteger(r.index))
          this.fail(`${p}.index`, "is required (an integer)")
        for (const key of Object.keys(r)) {
          if (!["index", "agent", ...REQUEST_VIEW_FIELDS].includes(key))
            this.fail(
              `${p}.${key}`,
              `unknown field; allowed here: index, agent, ${REQUEST_VIEW_FIELDS.join(", ")}`,
            )
        }
      })
    }
    if (e.handles !== undefined) this.jsonObject(e.handles, `${path}.handles`)
    if (e.trace !== undefined)
      this.object(e.trace, `${path}.trace`, { contains: false, excludes: false, count: false })
    if (e.store !== undefined) {
      this.jsonObject(e.store, `${path}.store`)
      for (const [id, s] of Object.entries(e.store)) {
        this.object(s, `${path}.store.${id}`, {
          messages: false,
          balanced: false,
          userTurns: false,
          pending: false,
          exists: false,
        })
      }
    }
    if (e.tools !== undefined) {
      this.jsonObject(e.tools, `${path}.tools`)
      for (const [tool, t] of Object.entries(e.tools)) {
        this.object(t, `${path}.tools.${tool}`, { runs: false, answers: false, sameKey: false })
      }
    }
    if (Array.isArray(e.closed)) this.array(e.closed, `${path}.closed`, (c, p) => this.string(c, p))
    else if (e.closed !== undefined) this.jsonObject(e.closed, `${path}.closed`)
  }
}

/** Fields of the neutral view of an LLM request that `expect.requests` may check. */
export const REQUEST_VIEW_FIELDS = [
  "system",
  "lastUserText",
  "toolResults",
  "toolResultIds",
  "toolNames",
  "toolDescriptions",
  "messageCount",
  "model",
]

const REPLY_VARIABLES = /^(lastUserText|system|toolResults|toolResults\.\d+|toolResultIds)$/
const REPLY_VARIABLE_NAMES = "{lastUserText}, {system}, {toolResults}, {toolResults.N}, {toolResultIds}"

/** The `{name}` placeholders of a template. */
export function placeholders(template: string): string[] {
  return [...template.matchAll(/\{([^{}\s]+)\}/g)].map((m) => m[1] as string)
}

/** True for a `"$name.path"` reference to a saved value. */
export function isRef(value: unknown): value is string {
  return typeof value === "string" && /^\$[a-zA-Z_][a-zA-Z0-9_]*(\.[^.]+)*$/.test(value)
}

function join(path: string, key: string): string {
  return path === "(root)" ? key : `${path}.${key}`
}

function describe(value: unknown): string {
  if (value === undefined) return "nothing"
  if (value === null) return "null"
  if (Array.isArray(value)) return "an array"
  if (typeof value === "object") return "an object"
  return `${typeof value} ${JSON.stringify(value)}`
}
