import type {
  Answer,
  CompactionOptions,
  ConversationStore,
  DurableExecutor,
  Hooks,
  MetricEvent,
  Request,
  TelemetryOptions,
  Tool,
} from "@toolnexus/core"
import type { RuntimeEvent } from "./runtime-events.js"

/**
 * Limits of a handle. `maxTurns` counts the handle's own LLM turns (a parent's never caps
 * it); the token, tool-call and `maxTotalTurns` pools and wall time are shared down the
 * chain: a child gets `min(own, parent's remaining)`. A refusal or an `incomplete` result
 * names the key that stopped it (`limit: "maxTurns"`, a spawn refused for `maxChildren`, …).
 */
export interface Budget {
  /** The handle's own LLM turns (its children's turns do not count, and a parent's limit does not cap it). */
  maxTurns?: number
  /** LLM turns of the handle's whole subtree (its own and every descendant's): a pool shared down the chain. */
  maxTotalTurns?: number
  maxTokens?: number
  maxToolCalls?: number
  maxWallMs?: number
  maxChildren?: number
  maxConcurrent?: number
  maxDepth?: number
}

/** An agent the runtime can spawn. */
export interface AgentDef {
  name: string
  /** One line on what the agent does: shown to parents in the `task` tool description. */
  does: string
  model?: string
  /** The system prompt. */
  soul?: string
  tools?: Tool[]
  /** Names of agents this one may delegate to with the `task` tool. */
  team?: string[]
  budget?: Budget
  waitFor?: (req: Request) => Answer | Promise<Answer>
  onSpawn?: (h: Handle) => void | Promise<void>
  onClose?: (h: Handle, reason: CloseReason) => void | Promise<void>
  hooks?: Hooks
  onMetric?: (ev: MetricEvent) => void
  /** Context compaction of this agent's transcript (§16); replaces the runtime's. */
  compaction?: CompactionOptions
}

/** Why a handle was closed. */
export type CloseReason = "closed" | "interrupted" | "budget" | "error"

/** A reference to a handle; everything else goes through the runtime. */
export interface Handle {
  readonly id: string
}

import type { HandleState } from "./handle-state-name.js"

export type { HandleState }

/** The outcome of a handle's run, as `wait` reports it. */
export interface TaskResult {
  status: "done" | "pending" | "incomplete" | "interrupted" | "closed" | "timeout" | "error"
  text: string
  isError: boolean
  pending?: Request
  limit?: string
  /** The handle's own LLM turns. */
  turns: number
  /** LLM turns of the handle and all its descendants. */
  totalTurns: number
  /** Tokens of the handle and all its descendants. */
  totalTokens: number
}

/** A read-only view of a handle. */
export interface HandleView {
  id: string
  def: string
  state: HandleState
  /** The handle's own LLM turns. */
  turns: number
  /** LLM turns of the handle and all its descendants. */
  totalTurns: number
  /** Tokens of the handle and all its descendants. */
  tokens: number
  inbox: number
  children: string[]
  pendingKind?: string
  pending?: Request
}

/** One inbox item. `from` is a handle id (or any sender name); absent means the host. */
export interface InboxItem {
  text: string
  from?: string
  channel?: string
}

/** Time as the runtime sees it; tests pass a virtual clock. */
export interface Clock {
  now(): number
  setTimeout(fn: () => void, ms: number): unknown
  clearTimeout(timer: unknown): void
}

/** Where and how handles call their model. */
export interface LLMSettings {
  baseUrl?: string
  style?: "openai" | "anthropic" | "openai-responses"
  apiKey?: string
  model?: string
}

/** Options of `createRuntime`. */
export interface RuntimeOptions {
  registry: Record<string, AgentDef>
  /** Absent ⇒ openai style and a placeholder URL, for runtimes driven through `fetch`. */
  llm?: LLMSettings
  /** The single transport seam, used for every handle's LLM calls. */
  fetch?: typeof fetch
  /** One store for all handles; the conversation id is the handle id. */
  store?: ConversationStore
  /**
   * Scopes every conversation id of the tree in the store: `<namespace>/<handle id>` (e.g.
   * `ticket-42/root/lead.1`; no `/` is added after a namespace that ends with `/` or `:`).
   * Handle ids such as `root/lead.1` repeat between runtimes, so without one each runtime
   * gets a unique namespace at creation (`rt-<uuid>`). Kept in snapshots.
   */
  namespace?: string
  clock?: Clock
  /** Inbox capacity per handle; default 100. */
  inboxCap?: number
  /** Bound on concurrent LLM HTTP calls across the runtime (not whole runs). */
  maxConcurrentTurns?: number
  /** How long a graceful close waits for a running handle; default 30 s. */
  shutdownMs?: number
  hooks?: Hooks
  onMetric?: (ev: MetricEvent) => void
  /** Context compaction of every handle's transcript (§16); a def's own wins. */
  compaction?: CompactionOptions
  /**
   * Receives every handle's events and state changes, tagged with the handle, synchronously
   * as they happen (see `Runtime.events()` for an async iterable). A throw is ignored.
   */
  onEvent?: (ev: RuntimeEvent) => void
  /**
   * OpenTelemetry settings for every handle's runs: each run is an `invoke_agent <def>` span,
   * a child's nested under its parent's `execute_tool task` span.
   */
  telemetry?: TelemetryOptions
  /**
   * Run the whole tree as one workflow of a durable-execution engine: every handle's LLM turns
   * and tool calls are journaled steps named `<handle id>/…`, and a suspension anywhere that no
   * def's `waitFor` answers is one `executor.wait` for the deepest handle (never a park).
   */
  executor?: DurableExecutor
}
