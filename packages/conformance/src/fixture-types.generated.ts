// Generated from fixture.schema.json by scripts/generate-fixture-types.mjs: do not edit.
// Change the schema, then run `node scripts/generate-fixture-types.mjs`.

/**
 * Any JSON value.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "Json".
 */
export type Json = null | boolean | number | string | Json[] | {[key: string]: Json}
/**
 * One step. Any string argument of the form `"$name.path"` is replaced by a value saved earlier with `as`.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "Step".
 */
export type Step =
  | RunStep
  | AskStep
  | ContinueRunStep
  | RunWithAnswerStep
  | AskWithAnswerStep
  | ListPendingStep
  | FindRequestStep
  | DeliverAnswerStep
  | SpawnStep
  | PostStep
  | WakeStep
  | WaitStep
  | InterruptStep
  | CloseStep
  | ResumeStep
  | RestartStep
  | UntilStep
  | CompactStep
  | CheckStep
  | AllStep
/**
 * An answer, or a reference to a saved value.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "StepAnswer".
 */
export type StepAnswer = Ref | AnswerSpec
/**
 * A reference to a value saved earlier with `as`: `"$name.path"`.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "Ref".
 */
export type Ref = string
/**
 * A tool or agent name.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "Name".
 */
export type Name = string

/**
 * A conformance fixture: tools, agents, a scripted model and steps with expectations, as plain JSON that any implementation of the toolnexus contract can run. README.md explains every field; cross-references (tool and agent names, placeholders) are checked by the loader.
 */
export interface FixtureFile {
  /**
   * This file, for editors: "../fixture.schema.json".
   */
  $schema?: string
  /**
   * What behaviour is pinned down and why it matters.
   */
  description: string
  /**
   * The model id sent to the endpoint; default "test-model".
   */
  model?: string
  /**
   * Where conversations, pending requests and handle transcripts live; `sqlite` is a file in a fresh temporary directory.
   */
  store?: "memory" | "sqlite"
  tools?: ToolSpec[]
  registry?: AgentSpec[]
  /**
   * Persona home folders (upstream §7E), each written to a fresh temporary folder before the steps: folder name → file name → content. An agent with `home` is `fromDir` of its folder.
   */
  homes?: {
    [k: string]: {
      [k: string]: string
    }
  }
  client?: ClientSpec
  runtime?: RuntimeSpec
  /**
   * The scripted model: rules tried in order (may be empty).
   */
  llm: LlmRule[]
  /**
   * The steps, run in order.
   *
   * @minItems 1
   */
  steps: [Step, ...Step[]]
}
/**
 * A tool with a declarative behaviour: exactly one of `returns`, `suspends`, `fails` and `relay`. Templates (`"paid {amount}"`) are filled from the call's arguments.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "ToolSpec".
 */
export interface ToolSpec {
  /**
   * Unique in the fixture.
   */
  name: string
  /**
   * Shown to the model; default `the <name> tool`.
   */
  description?: string
  /**
   * Parameter name → JSON Schema type; every parameter is required. Absent: any object.
   */
  params?: {
    [k: string]: "string" | "number" | "integer" | "boolean" | "object" | "array"
  }
  /**
   * Returns this template filled from the arguments.
   */
  returns?: string
  suspends?: SuspendSpec
  /**
   * With `suspends`: the result of the retry that carries an `ok` answer. Absent ⇒ it suspends again.
   */
  then?: string
  /**
   * The tool throws an error with this message (a template).
   */
  fails?: string
  /**
   * A declaration-only tool the host executes (`relayTool`).
   */
  relay?: true
  /**
   * Wait this long before answering (returns/suspends/fails).
   */
  delayMs?: number
}
/**
 * A request a tool suspends with; `prompt` and `url` are templates over the call's arguments.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "SuspendSpec".
 */
export interface SuspendSpec {
  /**
   * The request's kind, e.g. "approval".
   */
  kind: string
  /**
   * A template over the call's arguments.
   */
  prompt: string
  /**
   * A template over the call's arguments.
   */
  url?: string
  data?: JsonObject
  /**
   * RFC 3339.
   */
  expiresAt?: string
}
/**
 * A JSON object.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "JsonObject".
 */
export interface JsonObject {
  [k: string]: Json
}
/**
 * An agent definition; tools are named from the fixture's `tools`.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "AgentSpec".
 */
export interface AgentSpec {
  /**
   * As in `AgentDef`; `root` is reserved for the host's handle.
   */
  name: string
  does: string
  /**
   * The system prompt. Souls are unique: rules recognise an agent's requests by it.
   */
  soul?: string
  /**
   * The agent's own model id.
   */
  model?: string
  /**
   * Agents it may delegate to with the `task` tool; each must be in the registry.
   */
  team?: string[]
  /**
   * Names from the fixture's `tools`.
   */
  tools?: string[]
  budget?: BudgetSpec
  waitFor?: WaitForPolicy
  /**
   * A folder of `homes`: the def is `fromDir(folder, {name, does, tools})` — its soul composed from the folder's files (read again whenever the runtime is created), the `memory` tool added. Rules recognise it by `system`, not `agent`.
   */
  home?: string
}
/**
 * Budget limits: exactly those of `@toolnexus/agents`.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "BudgetSpec".
 */
export interface BudgetSpec {
  maxTurns?: number
  maxTokens?: number
  maxToolCalls?: number
  maxWallMs?: number
  maxChildren?: number
  maxConcurrent?: number
  maxDepth?: number
}
/**
 * The answer a `waitFor` policy gives to every request it sees.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "WaitForPolicy".
 */
export interface WaitForPolicy {
  answer: AnswerPolicy
}
/**
 * The answer given to every request; the id is filled in.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "AnswerPolicy".
 */
export interface AnswerPolicy {
  ok: boolean
  reason?: string
  data?: JsonObject
}
/**
 * Options of the bare client used by `run`, `ask`, `continueRun`, `runWithAnswer`, `askWithAnswer`.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "ClientSpec".
 */
export interface ClientSpec {
  systemPrompt?: string
  maxTurns?: number
  waitFor?: WaitForPolicy
  /**
   * The tools of the client's toolkit; all fixture tools when absent.
   */
  tools?: string[]
  compaction?: CompactionSpec
}
/**
 * `CompactionOptions`; `summarize` is a template over the older messages: {count} is their number.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "CompactionSpec".
 */
export interface CompactionSpec {
  maxTokens: number
  keepTail?: number
  flushToMemory?: boolean
  /**
   * Count one token per message instead of the default estimate.
   */
  countTokens?: "messages"
  summarize: string
}
/**
 * Options of the agents runtime.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "RuntimeSpec".
 */
export interface RuntimeSpec {
  inboxCap?: number
  maxConcurrentTurns?: number
  shutdownMs?: number
}
/**
 * One rule of the scripted model: the first rule with uses left whose `when` holds answers.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "LlmRule".
 */
export interface LlmRule {
  when?: RuleMatch
  reply: ReplySpec
  /**
   * How many requests the rule may answer; unlimited when absent.
   */
  times?: number
}
/**
 * Conditions on an LLM request; all given ones must hold.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "RuleMatch".
 */
export interface RuleMatch {
  /**
   * The request comes from this agent: its system prompt equals the agent's `soul`.
   */
  agent?: string
  /**
   * Substring of the system prompt.
   */
  system?: string
  /**
   * Substring of the text of the last user message that has text.
   */
  lastUserText?: string
  /**
   * Whether tool results follow the last assistant message.
   */
  toolResults?: boolean
  /**
   * Substring of at least one of those tool results.
   */
  toolResult?: string
}
/**
 * A scripted model reply.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "ReplySpec".
 */
export interface ReplySpec {
  /**
   * A template over the request: {toolResults}, {toolResults.N}, {toolResultIds}, {lastUserText}, {system}.
   */
  text?: string
  toolCalls?: ReplyToolCall[]
  /**
   * Token usage; default 10 prompt and 5 completion tokens.
   */
  usage?: {
    prompt?: number
    completion?: number
  }
  /**
   * Answer after this delay.
   */
  delayMs?: number
  /**
   * Never answer; released when the client aborts.
   */
  hang?: true
  /**
   * A non-2xx HTTP status; `text` becomes the error message.
   */
  status?: number
  /**
   * The model refuses with this text, in each style's own shape.
   */
  refusal?: string
  /**
   * The reply is cut off by the output-token limit or a content filter.
   */
  cutOff?: "maxOutputTokens" | "contentFilter"
}
/**
 * A tool call the scripted model makes.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "ReplyToolCall".
 */
export interface ReplyToolCall {
  id?: string
  name: string
  /**
   * An object, or a string sent verbatim (may be invalid JSON).
   */
  args?: JsonObject | string
}
/**
 * `client.run(prompt)`; the value is the `RunResult`.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "RunStep".
 */
export interface RunStep {
  do: "run"
  /**
   * Saves the step's value (JSON round-tripped) under this name.
   */
  as?: string
  expect?: Expect
  /**
   * A comment.
   */
  note?: string
  prompt: string
  /**
   * Use a new client (as a new process would).
   */
  fresh?: boolean
}
/**
 * What is checked after a step (or on its own with `check`).
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "Expect".
 */
export interface Expect {
  /**
   * Any JSON value.
   */
  result?: null | boolean | number | string | Json[] | {[key: string]: Json}
  /**
   * The step must throw: an error name, or name plus `code`, `reason` and a `message` substring.
   */
  throws?: string | ThrowsExpect
  transcript?: TranscriptExpect
  /**
   * Any JSON value.
   */
  relayCalls?: null | boolean | number | string | Json[] | {[key: string]: Json}
  /**
   * Total LLM requests since the fixture started.
   */
  llmRequests?: number
  /**
   * Agent → requests counted by soul.
   */
  llmRequestsByAgent?: {
    [k: string]: number
  }
  /**
   * Most LLM requests in flight at once, seen when a request arrived.
   */
  llmPeakInFlight?: number
  requests?: RequestExpect[]
  /**
   * Handle id → partial match of its view (inspect + `transitions` + `budget`).
   */
  handles?: {
    [k: string]: Json
  }
  /**
   * Any JSON value.
   */
  list?: null | boolean | number | string | Json[] | {[key: string]: Json}
  trace?: {
    contains?: string[]
    excludes?: string[]
    count?: {
      [k: string]: number
    }
  }
  /**
   * Conversation id (a handle id for agents) → expectations on the store.
   */
  store?: {
    [k: string]: StoreExpect
  }
  tools?: {
    [k: string]: ToolExpect
  }
  /**
   * Any JSON value.
   */
  asked?: null | boolean | number | string | Json[] | {[key: string]: Json}
  /**
   * `onClose` calls so far, as `"<handle id>:<reason>"`, in order (or a matcher).
   */
  closed?: string[] | JsonObject
  /**
   * Folder of `homes` → file name → its content now (exact; `null` ⇒ absent).
   */
  files?: {
    [k: string]: {
      [k: string]: Json
    }
  }
}
/**
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "ThrowsExpect".
 */
export interface ThrowsExpect {
  name: string
  code?: string
  /**
   * The error's `reason` field.
   */
  reason?: string
  /**
   * A substring of the message.
   */
  message?: string
}
/**
 * Expectations on a conversation transcript.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "TranscriptExpect".
 */
export interface TranscriptExpect {
  /**
   * Any JSON value.
   */
  messages?: null | boolean | number | string | Json[] | {[key: string]: Json}
  /**
   * Every tool call has exactly one result; no orphan results.
   */
  balanced?: boolean
  /**
   * Number of user messages that carry text (not only tool results).
   */
  userTurns?: number
}
/**
 * Selects a recorded LLM request and matches its neutral view partially.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "RequestExpect".
 */
export interface RequestExpect {
  /**
   * Index among all requests (or among the agent's when `agent` is set); negative counts from the end.
   */
  index: number
  agent?: string
  system?: Json
  lastUserText?: Json
  toolResults?: Json
  toolResultIds?: Json
  toolNames?: Json
  toolDescriptions?: Json
  messageCount?: Json
  model?: Json
  /**
   * Any JSON value.
   */
  messages?: null | boolean | number | string | Json[] | {[key: string]: Json}
}
/**
 * Expectations on a stored conversation.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "StoreExpect".
 */
export interface StoreExpect {
  /**
   * Any JSON value.
   */
  messages?: null | boolean | number | string | Json[] | {[key: string]: Json}
  /**
   * Every tool call has exactly one result; no orphan results.
   */
  balanced?: boolean
  /**
   * Number of user messages that carry text (not only tool results).
   */
  userTurns?: number
  /**
   * Any JSON value.
   */
  pending?: null | boolean | number | string | Json[] | {[key: string]: Json}
  /**
   * The conversation exists in the store.
   */
  exists?: boolean
}
/**
 * Expectations on one tool's executions.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "ToolExpect".
 */
export interface ToolExpect {
  runs?: number
  /**
   * Any JSON value.
   */
  answers?: null | boolean | number | string | Json[] | {[key: string]: Json}
  /**
   * Every execution saw the same `ctx.idempotencyKey`.
   */
  sameKey?: boolean
}
/**
 * `client.ask(prompt, {id})`; the value is the `RunResult`.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "AskStep".
 */
export interface AskStep {
  do: "ask"
  /**
   * Saves the step's value (JSON round-tripped) under this name.
   */
  as?: string
  expect?: Expect
  /**
   * A comment.
   */
  note?: string
  prompt: string
  id: Json
  fresh?: boolean
}
/**
 * `client.continueRun(...)`; the value is the `RunResult`. Without `messages`, conversation `id` is loaded from the store and saved back.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "ContinueRunStep".
 */
export interface ContinueRunStep {
  do: "continueRun"
  /**
   * Saves the step's value (JSON round-tripped) under this name.
   */
  as?: string
  expect?: Expect
  /**
   * A comment.
   */
  note?: string
  messages?: Json
  pending?: Json
  answer?: StepAnswer
  fresh?: boolean
  id?: Json
}
/**
 * An answer: `ok` (with `reason`, `data`), or `relay` results.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "AnswerSpec".
 */
export interface AnswerSpec {
  /**
   * Any JSON value.
   */
  id: null | boolean | number | string | Json[] | {[key: string]: Json}
  ok?: boolean
  reason?: string
  data?: JsonObject
  /**
   * Instead of `ok`, `reason` and `data`: the results of relay calls, built into an answer with `relayAnswer(id, relay)`.
   */
  relay?: RelayResult[]
}
/**
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "RelayResult".
 */
export interface RelayResult {
  id: Json
  output: Json
  isError?: Json
}
/**
 * `runWithAnswer` of `@toolnexus/durable`.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "RunWithAnswerStep".
 */
export interface RunWithAnswerStep {
  do: "runWithAnswer"
  /**
   * Saves the step's value (JSON round-tripped) under this name.
   */
  as?: string
  expect?: Expect
  /**
   * A comment.
   */
  note?: string
  history: Json
  pending: Json
  answer: StepAnswer
  fresh?: boolean
}
/**
 * `askWithAnswer` of `@toolnexus/durable`.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "AskWithAnswerStep".
 */
export interface AskWithAnswerStep {
  do: "askWithAnswer"
  /**
   * Saves the step's value (JSON round-tripped) under this name.
   */
  as?: string
  expect?: Expect
  /**
   * A comment.
   */
  note?: string
  id: Json
  answer: StepAnswer
  pending?: Json
  fresh?: boolean
}
/**
 * `store.listPending(...)`: one entry per open request id (needs `"store": "sqlite"`).
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "ListPendingStep".
 */
export interface ListPendingStep {
  do: "listPending"
  /**
   * Saves the step's value (JSON round-tripped) under this name.
   */
  as?: string
  expect?: Expect
  /**
   * A comment.
   */
  note?: string
  kind?: Json
  limit?: Json
  after?: Json
}
/**
 * `store.findRequest(requestId)`: the request's entry, or `null` (needs `"store": "sqlite"`).
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "FindRequestStep".
 */
export interface FindRequestStep {
  do: "findRequest"
  /**
   * Saves the step's value (JSON round-tripped) under this name.
   */
  as?: string
  expect?: Expect
  /**
   * A comment.
   */
  note?: string
  requestId: Json
}
/**
 * `deliverAnswer(store, answer, {client, toolkit, runtime})` of `@toolnexus/durable`: `{kind, id | key, result}`; a runtime delivery reloads the saved runtime (needs `"store": "sqlite"`).
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "DeliverAnswerStep".
 */
export interface DeliverAnswerStep {
  do: "deliverAnswer"
  /**
   * Saves the step's value (JSON round-tripped) under this name.
   */
  as?: string
  expect?: Expect
  /**
   * A comment.
   */
  note?: string
  answer: StepAnswer
  fresh?: boolean
}
/**
 * `runtime.spawn`; the value is the new handle's id.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "SpawnStep".
 */
export interface SpawnStep {
  do: "spawn"
  /**
   * Saves the step's value (JSON round-tripped) under this name.
   */
  as?: string
  expect?: Expect
  /**
   * A comment.
   */
  note?: string
  parent: Json
  agent: string
  budget?: BudgetSpec
}
/**
 * `runtime.post`.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "PostStep".
 */
export interface PostStep {
  do: "post"
  /**
   * Saves the step's value (JSON round-tripped) under this name.
   */
  as?: string
  expect?: Expect
  /**
   * A comment.
   */
  note?: string
  handle: Json
  text: Json
  from?: Json
  channel?: Json
}
/**
 * `runtime.wake`.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "WakeStep".
 */
export interface WakeStep {
  do: "wake"
  /**
   * Saves the step's value (JSON round-tripped) under this name.
   */
  as?: string
  expect?: Expect
  /**
   * A comment.
   */
  note?: string
  handle: Json
  prompt?: Json
}
/**
 * `runtime.wait` on `handle`, or on every one of `handles` concurrently.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "WaitStep".
 */
export interface WaitStep {
  do: "wait"
  /**
   * Saves the step's value (JSON round-tripped) under this name.
   */
  as?: string
  expect?: Expect
  /**
   * A comment.
   */
  note?: string
  handle?: Json
  handles?: Json
  timeoutMs?: number
}
/**
 * `runtime.interrupt`.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "InterruptStep".
 */
export interface InterruptStep {
  do: "interrupt"
  /**
   * Saves the step's value (JSON round-tripped) under this name.
   */
  as?: string
  expect?: Expect
  /**
   * A comment.
   */
  note?: string
  handle: Json
}
/**
 * `runtime.close`.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "CloseStep".
 */
export interface CloseStep {
  do: "close"
  /**
   * Saves the step's value (JSON round-tripped) under this name.
   */
  as?: string
  expect?: Expect
  /**
   * A comment.
   */
  note?: string
  handle: Json
  force?: Json
}
/**
 * `runtime.resume(answer)`; resolves when the cascade has settled.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "ResumeStep".
 */
export interface ResumeStep {
  do: "resume"
  /**
   * Saves the step's value (JSON round-tripped) under this name.
   */
  as?: string
  expect?: Expect
  /**
   * A comment.
   */
  note?: string
  answer: StepAnswer
}
/**
 * "Restarts the process" from the runtime's snapshot, through JSON or the durable store.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "RestartStep".
 */
export interface RestartStep {
  do: "restart"
  /**
   * Saves the step's value (JSON round-tripped) under this name.
   */
  as?: string
  expect?: Expect
  /**
   * A comment.
   */
  note?: string
  via?: "json" | "store"
  /**
   * Only with `via: "json"`: the snapshot's schema version is rewritten to this.
   */
  schemaVersion?: number
}
/**
 * Polls until the fake server and a handle reach the given state.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "UntilStep".
 */
export interface UntilStep {
  do: "until"
  /**
   * Saves the step's value (JSON round-tripped) under this name.
   */
  as?: string
  expect?: Expect
  /**
   * A comment.
   */
  note?: string
  llmInFlight?: Json
  llmRequests?: Json
  state?: {
    handle: Json
    is: Json
  }
}
/**
 * `compactMessages(messages, options)` in this style (Anthropic's summary is a user message); the value is the compacted transcript, or `null` when it is left as it is.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "CompactStep".
 */
export interface CompactStep {
  do: "compact"
  /**
   * Saves the step's value (JSON round-tripped) under this name.
   */
  as?: string
  expect?: Expect
  /**
   * A comment.
   */
  note?: string
  messages: Json
  options: CompactionSpec
}
/**
 * Nothing; only its `expect` runs.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "CheckStep".
 */
export interface CheckStep {
  do: "check"
  /**
   * Saves the step's value (JSON round-tripped) under this name.
   */
  as?: string
  expect?: Expect
  /**
   * A comment.
   */
  note?: string
}
/**
 * Runs the sub-steps concurrently; they may not have `as` or `expect`.
 *
 * This interface was referenced by `FixtureFile`'s JSON-Schema
 * via the `definition` "AllStep".
 */
export interface AllStep {
  do: "all"
  /**
   * Saves the step's value (JSON round-tripped) under this name.
   */
  as?: string
  expect?: Expect
  /**
   * A comment.
   */
  note?: string
  steps: Step[]
}
