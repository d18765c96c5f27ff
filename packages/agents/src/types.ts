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
  /** Tokens (prompt plus completion) of the handle's whole subtree: a pool shared down the chain. */
  maxTokens?: number
  /** Completed tool calls of the handle's whole subtree: a pool shared down the chain. */
  maxToolCalls?: number
  /** Milliseconds from the handle's spawn, on the runtime's clock; a child gets what its parent has left. */
  maxWallMs?: number
  /** Children the handle may spawn in all, closed ones included; one more is refused (`max_children`). */
  maxChildren?: number
  /** Children of the handle running at once (inline-suspended ones included); more wakes queue FIFO. */
  maxConcurrent?: number
  /** Levels allowed below the handle: at `0` it may not spawn (`max_depth`); each child gets one less. */
  maxDepth?: number
}

/** An agent the runtime can spawn. */
export interface AgentDef {
  /** Its registry key (they must be equal) and the def segment of its handle ids (`root/<name>.1`). */
  name: string
  /** One line on what the agent does: shown to parents in the `task` tool description. */
  does: string
  /** The model its handles call; default `llm.model` of the runtime (with neither, a run is an `error`). */
  model?: string
  /** The system prompt. */
  soul?: string
  /** Tools its handles may call; an agent's `asTool()` among them runs as a child handle, as `task` does. */
  tools?: Tool[]
  /** Names of agents this one may delegate to with the `task` tool. */
  team?: string[]
  /** Limits of this def's handles; `spawn`'s `budget` wins per key, and a parent's remainder caps them. */
  budget?: Budget
  /**
   * Answers, inline, a request on which a handle of this def or one of its descendants
   * suspends: the nearest `waitFor` on the chain self → root decides. With none on the
   * chain the handle parks and the root's `wait` gives `status: "pending"`.
   */
  waitFor?: (req: Request) => Answer | Promise<Answer>
  /** Called with each new handle of this def once spawned; not awaited, a throw or rejection is ignored. */
  onSpawn?: (h: Handle) => void | Promise<void>
  /** Called with a closing handle of this def and why; awaited before it is `closed`, a throw is ignored. */
  onClose?: (h: Handle, reason: CloseReason) => void | Promise<void>
  /** Hooks of this agent's runs, called with `handle` (the handle id) added; they replace the runtime's. */
  hooks?: Hooks
  /** Receives this agent's metric events with `handle` (the handle id) added; replaces the runtime's. */
  onMetric?: (ev: MetricEvent) => void
  /** Context compaction of this agent's transcript (§16); replaces the runtime's. */
  compaction?: CompactionOptions
}

/** Why a handle was closed. */
export type CloseReason = "closed" | "interrupted" | "budget" | "error"

/** A reference to a handle; everything else goes through the runtime. */
export interface Handle {
  /** Its path from the root, one `<def>.<n>` per level (`root/lead.1/explore.2`); the root's is `"root"`. */
  readonly id: string
}

import type { HandleState } from "./handle-state-name.js"

export type { HandleState }

export type { TaskResult } from "@toolnexus/core"

/** A read-only view of a handle. */
export interface HandleView {
  /** The handle's id, e.g. `root/lead.1`. */
  id: string
  /** The name of the def the handle was spawned from. */
  def: string
  /** Its current state: `idle`, `running`, `suspended` or `closed`. */
  state: HandleState
  /** The handle's own LLM turns. */
  turns: number
  /** LLM turns of the handle and all its descendants. */
  totalTurns: number
  /** Tokens of the handle and all its descendants. */
  tokens: number
  /** How many items wait in its inbox. */
  inbox: number
  /** The ids of its children in spawn order, closed ones included. */
  children: string[]
  /** The `kind` of the request it is suspended on; present only while `suspended`. */
  pendingKind?: string
  /** The request it is suspended on, with its `data.path`; present only while `suspended`. */
  pending?: Request
}

/** One inbox item. `from` is a handle id (or any sender name); absent means the host. */
export interface InboxItem {
  /** What the handle's next turn reads, after a provenance tag (`[from: …, channel: …]`). */
  text: string
  /** The sender; one outside the handle's ancestor chain (self included) is marked untrusted to the model. */
  from?: string
  /** The channel it came in on; `timer` and `tick` items are timer ticks, and repeated ones coalesce. */
  channel?: string
}

/** Time as the runtime sees it; tests pass a virtual clock. */
export interface Clock {
  /** The current time, in ms since the epoch. */
  now(): number
  /** Calls `fn` once after `ms` milliseconds; returns the timer to give `clearTimeout`. */
  setTimeout(fn: () => void, ms: number): unknown
  /** Cancels a timer `setTimeout` returned, so its `fn` is not called. */
  clearTimeout(timer: unknown): void
}

/** Where and how handles call their model. */
export interface LLMSettings {
  /** The endpoint's base URL; default a placeholder, `http://llm.invalid/v1` (for a custom `fetch`). */
  baseUrl?: string
  /** The endpoint's wire format (Chat Completions, Anthropic Messages, Responses API); default `"openai"`. */
  style?: "openai" | "anthropic" | "openai-responses"
  /** The endpoint's key; default the style's env variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, …). */
  apiKey?: string
  /** The model of every handle whose def names none. */
  model?: string
}

/** Options of `createRuntime`. */
export interface RuntimeOptions {
  /** The agents the runtime can spawn, keyed by def `name`; every `team` member must be in it. */
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
  /** Time for every timer, `wait` timeout and wall-time budget; default the system clock. */
  clock?: Clock
  /** Inbox capacity per handle; default 100. */
  inboxCap?: number
  /** Bound on concurrent LLM HTTP calls across the runtime (not whole runs). */
  maxConcurrentTurns?: number
  /** How long a graceful close waits for a running handle; default 30 s. */
  shutdownMs?: number
  /** Hooks of every handle's runs, called with `handle` (the handle id) added; a def's own replace them. */
  hooks?: Hooks
  /** Receives every handle's metric events, each with `handle` (the handle id) added; a def's own wins. */
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
