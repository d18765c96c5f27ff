/**
 * The conformance fixture format: plain JSON, so that any implementation of the contract (in
 * any language) can run the same files. Its one source is `fixture.schema.json`: the types
 * are generated from it (`fixture-types.generated.ts`) and every file is validated against
 * it with core's JSON Schema validator. What a schema cannot say — names that must refer to
 * declared tools and agents, template placeholders, rules between fields — is checked here.
 */
import { readFileSync } from "node:fs"
import { compileSchema } from "@toolnexus/core"
import type { Budget } from "@toolnexus/agents"
import type {
  AgentSpec,
  BudgetSpec,
  FixtureFile,
  LlmRule,
  Step,
  ToolSpec,
} from "./fixture-types.generated.js"

export type * from "./fixture-types.generated.js"

/** A fixture as loaded: the file's content plus its name and path. */
export interface Fixture extends FixtureFile {
  /** The file name without `.json`. */
  name: string
  /** The path the fixture was read from (for error messages). */
  file: string
}

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
// A fixture's budget is exactly the runtime's `Budget`: this stops compiling when they part.
const budgetIsTheRuntimes: Same<BudgetSpec, Budget> = true
void budgetIsTheRuntimes

/** The three endpoint styles every fixture runs in. */
export type Style = "openai" | "anthropic" | "openai-responses"

/** Every style, in the order the suite runs them. */
export const STYLES: readonly Style[] = ["openai", "anthropic", "openai-responses"]

/** A step verb. */
export type Verb = Step["do"]

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

/** The fixture format's JSON Schema (`fixture.schema.json`). */
export const FIXTURE_SCHEMA: Record<string, any> = JSON.parse(
  readFileSync(new URL("../fixture.schema.json", import.meta.url), "utf8"),
)

const validateShape = compileSchema(FIXTURE_SCHEMA)

/** The verbs a step can perform, in the schema's order. */
export const VERBS: readonly Verb[] = FIXTURE_SCHEMA.$defs.Step.oneOf.map(
  (variant: { $ref: string }) => FIXTURE_SCHEMA.$defs[variant.$ref.split("/").pop()!].properties.do.const,
)

/** Fields of the neutral view of an LLM request that `expect.requests` may check. */
export const REQUEST_VIEW_FIELDS: readonly string[] = Object.keys(
  FIXTURE_SCHEMA.$defs.RequestExpect.properties,
).filter((key) => key !== "index" && key !== "agent")

const REPLY_VARIABLES = /^(lastUserText|system|toolResults|toolResults\.\d+|toolResultIds)$/
const REPLY_VARIABLE_NAMES = "{lastUserText}, {system}, {toolResults}, {toolResults.N}, {toolResultIds}"
const BEHAVIOURS = ["returns", "suspends", "fails", "relay"] as const

/**
 * Checks a parsed fixture against the schema and the cross-references, and returns it typed.
 * Unknown fields are errors too, so a typo never turns into an assertion that silently
 * checks nothing.
 *
 * @throws FixtureError naming the file and the offending field.
 */
export function validateFixture(raw: unknown, file: string, name: string): Fixture {
  const fail = (field: string, problem: string): never => {
    throw new FixtureError(file, field, problem)
  }
  const [issue] = validateShape(raw, "")
  if (issue) fail(issue.path.replace(/^\./, "") || "(root)", issue.message)
  const fx = raw as FixtureFile

  const tools = new Set<string>()
  for (const [i, tool] of (fx.tools ?? []).entries()) {
    if (tools.has(tool.name)) fail(`tools[${i}].name`, `duplicate tool ${JSON.stringify(tool.name)}`)
    tools.add(tool.name)
    checkTool(tool, `tools[${i}]`, fail)
  }

  const agents = new Map<string, AgentSpec>()
  const souls = new Map<string, string>()
  for (const [i, def] of (fx.registry ?? []).entries()) {
    if (def.name === "root") fail(`registry[${i}].name`, '"root" is the host\'s handle, not an agent')
    if (agents.has(def.name)) fail(`registry[${i}].name`, `duplicate agent ${JSON.stringify(def.name)}`)
    agents.set(def.name, def)
    checkNames(def.tools, `registry[${i}].tools`, tools, "tool", fail)
    if (def.home !== undefined && !Object.hasOwn(fx.homes ?? {}, def.home))
      fail(`registry[${i}].home`, `unknown home ${JSON.stringify(def.home)}`)
    if (def.home !== undefined && def.soul !== undefined)
      fail(`registry[${i}].soul`, "an agent with a home has the soul its folder composes")
    if (def.soul !== undefined) {
      const other = souls.get(def.soul)
      if (other) {
        fail(
          `registry[${i}].soul`,
          `same soul as agent ${JSON.stringify(other)}; rules could not tell them apart`,
        )
      }
      souls.set(def.soul, def.name)
    }
  }
  for (const [i, def] of (fx.registry ?? []).entries()) {
    checkNames(def.team, `registry[${i}].team`, new Set(agents.keys()), "agent", fail)
  }
  checkNames(fx.client?.tools, "client.tools", tools, "tool", fail)

  for (const [i, rule] of fx.llm.entries()) checkRule(rule, `llm[${i}]`, agents, fail)
  for (const [i, step] of fx.steps.entries()) checkStep(step, `steps[${i}]`, agents, fail)
  return { ...fx, name, file }
}

type Fail = (field: string, problem: string) => never

function checkNames(names: string[] | undefined, path: string, known: Set<string>, what: string, fail: Fail) {
  for (const [i, name] of (names ?? []).entries()) {
    if (!known.has(name)) fail(`${path}[${i}]`, `unknown ${what} ${JSON.stringify(name)}`)
  }
}

function checkTool(tool: ToolSpec, path: string, fail: Fail): void {
  const behaviours = BEHAVIOURS.filter((b) => tool[b] !== undefined)
  if (behaviours.length !== 1) {
    fail(
      path,
      "a tool needs exactly one behaviour of returns, suspends, fails, relay; " +
        `got ${behaviours.join(", ") || "none"}`,
    )
  }
  const params = tool.params ? Object.keys(tool.params) : undefined
  const template = (text: string | undefined, field: string) => {
    for (const name of placeholders(text ?? "")) {
      if (params && !params.includes(name)) {
        fail(field, `placeholder {${name}} is not a parameter (params: ${params.join(", ")})`)
      }
    }
  }
  template(tool.returns, `${path}.returns`)
  template(tool.fails, `${path}.fails`)
  template(tool.suspends?.prompt, `${path}.suspends.prompt`)
  template(tool.suspends?.url, `${path}.suspends.url`)
  if (tool.then !== undefined) {
    if (tool.suspends === undefined) fail(`${path}.then`, "only a suspending tool has `then`")
    template(tool.then, `${path}.then`)
  }
  if (tool.delayMs !== undefined && tool.relay) fail(`${path}.delayMs`, "a relay tool never runs locally")
}

function checkRule(rule: LlmRule, path: string, agents: Map<string, AgentSpec>, fail: Fail): void {
  const agent = rule.when?.agent
  if (agent !== undefined) {
    const def = agents.get(agent)
    if (!def) fail(`${path}.when.agent`, `unknown agent ${JSON.stringify(agent)}`)
    if (def.soul === undefined) {
      fail(
        `${path}.when.agent`,
        `agent ${JSON.stringify(agent)} has no soul; requests are told apart by soul`,
      )
    }
  }
  const { reply } = rule
  for (const name of placeholders(reply.text ?? "")) {
    if (!REPLY_VARIABLES.test(name)) {
      fail(`${path}.reply.text`, `unknown placeholder {${name}}; use ${REPLY_VARIABLE_NAMES}`)
    }
  }
  if (
    reply.text === undefined &&
    reply.toolCalls === undefined &&
    reply.refusal === undefined &&
    !reply.hang &&
    reply.status === undefined
  ) {
    fail(`${path}.reply`, "a reply needs text, toolCalls, refusal, hang or status")
  }
}

function checkStep(step: Step, path: string, agents: Map<string, AgentSpec>, fail: Fail): void {
  if (step.as === "asked") fail(`${path}.as`, '"asked" is built in (the requests waitFor was asked)')
  const answer = "answer" in step ? step.answer : undefined
  if (typeof answer === "object") {
    if (answer.relay === undefined && answer.ok === undefined) {
      fail(`${path}.answer.ok`, "is required (or give `relay` results)")
    }
    if (answer.relay !== undefined && (answer.ok ?? answer.reason ?? answer.data) !== undefined) {
      fail(`${path}.answer`, "a `relay` answer is built by relayAnswer(); give only `id` and `relay`")
    }
  }
  switch (step.do) {
    case "spawn": {
      if (!step.agent.startsWith("$") && !agents.has(step.agent)) {
        // Unknown agents are allowed only to test the unknown_agent error.
        const throws = step.expect?.throws
        const name = typeof throws === "string" ? throws : throws?.name
        if (name !== "RuntimeError") fail(`${path}.agent`, `unknown agent ${JSON.stringify(step.agent)}`)
      }
      break
    }
    case "wait":
      if ((step.handle === undefined) === (step.handles === undefined)) {
        fail(path, "wait needs exactly one of `handle` and `handles`")
      }
      break
    case "restart":
      if (step.schemaVersion !== undefined && step.via === "store") {
        fail(`${path}.schemaVersion`, 'only with "via": "json"')
      }
      break
    case "until":
      if (step.llmInFlight === undefined && step.llmRequests === undefined && step.state === undefined) {
        fail(path, "until needs llmInFlight, llmRequests or state")
      }
      break
    case "all":
      for (const [i, sub] of step.steps.entries()) {
        const at = `${path}.steps[${i}]`
        checkStep(sub, at, agents, fail)
        // Concurrent outcomes are checked together on the `all` step, never one by one.
        for (const key of ["as", "expect"] as const) {
          if (sub[key] !== undefined)
            fail(`${at}.${key}`, "not allowed inside `all`; check the outcomes on the `all` step")
        }
      }
      break
    default:
      break
  }
}

/** The `{name}` placeholders of a template. */
export function placeholders(template: string): string[] {
  return [...template.matchAll(/\{([^{}\s]+)\}/g)].map((m) => m[1] as string)
}

const REF = new RegExp(FIXTURE_SCHEMA.$defs.Ref.pattern)

/** True for a `"$name.path"` reference to a saved value. */
export function isRef(value: unknown): value is string {
  return typeof value === "string" && REF.test(value)
}
