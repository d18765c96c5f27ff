import { ConfigError } from "../errors.js"
import type { Hooks } from "../client/hooks.js"
import type { EndpointStyle, Message } from "../types.js"

/** Options of context compaction (`ClientOptions.compaction`, {@link compactMessages}, {@link compactor}). */
export interface CompactionOptions {
  /** Compact when the transcript's tokens exceed this; at or below it nothing changes. */
  maxTokens: number
  /** Tokens of recent messages kept verbatim; default `floor(maxTokens / 2)`. */
  keepTail?: number
  /** Summarises the older messages; may call a model. */
  summarize(older: Message[]): string | Promise<string>
  /** Counts tokens; default {@link estimateTokens}. */
  countTokens?(messages: Message[]): number
  /** Adds upstream's reminder to save facts with the memory tool before the tail. */
  flushToMemory?: boolean
}

import { SUMMARY_PREFIX, isCompactionSummary } from "./summary-message.js"

export { SUMMARY_PREFIX }

// Upstream's reminder text, verbatim.
const FLUSH_TO_MEMORY_REMINDER =
  "Before continuing: if anything from earlier is worth keeping, save it with the memory tool now — the earlier transcript is about to be summarized."

/**
 * A cheap, deterministic token estimate: Σ ceil(JSON.stringify(message).length / 4) (upstream's).
 *
 * @example
 * estimateTokens([{ role: "user", content: "hi" }]) // 8
 */
export function estimateTokens(messages: readonly Message[]): number {
  let total = 0
  for (const m of messages) total += Math.ceil(JSON.stringify(m).length / 4)
  return total
}

/**
 * @internal Refuses malformed compaction options, naming the field.
 * @throws ConfigError
 */
export function assertCompactionOptions(
  opts: unknown,
  field = "compaction",
): asserts opts is CompactionOptions {
  if (typeof opts !== "object" || opts === null) throw new ConfigError(`${field} must be an options object`)
  const o = opts as Record<string, unknown>
  if (typeof o.maxTokens !== "number" || !Number.isInteger(o.maxTokens) || o.maxTokens <= 0) {
    throw new ConfigError(`${field}.maxTokens must be a positive integer, got ${JSON.stringify(o.maxTokens)}`)
  }
  if (
    o.keepTail !== undefined &&
    (typeof o.keepTail !== "number" ||
      !Number.isInteger(o.keepTail) ||
      o.keepTail < 0 ||
      o.keepTail >= o.maxTokens)
  ) {
    throw new ConfigError(
      `${field}.keepTail must be an integer in [0, maxTokens), got ${JSON.stringify(o.keepTail)}`,
    )
  }
  if (typeof o.summarize !== "function") throw new ConfigError(`${field}.summarize must be a function`)
  if (o.countTokens !== undefined && typeof o.countTokens !== "function") {
    throw new ConfigError(`${field}.countTokens must be a function`)
  }
}

/**
 * Compacts a transcript over budget: `[system?, summary, reminder?, ...tail]`, or `undefined` when
 * it is within `maxTokens` (or nothing can be compacted). A leading system message is kept
 * verbatim unless it is an earlier summary, which is summarised again with the older messages so
 * summaries fold in rather than stack. The tail starts at a user turn that carries no tool result,
 * so no tool result loses its call. The summary is a `system` message (`user` for Anthropic, whose
 * transcripts have no system role).
 *
 * @throws ConfigError for malformed options; whatever `summarize` throws.
 * @example
 * const shorter = await compactMessages(messages, { maxTokens: 100_000, summarize })
 */
export async function compactMessages(
  messages: readonly Message[],
  opts: CompactionOptions & { style?: EndpointStyle },
): Promise<Message[] | undefined> {
  assertCompactionOptions(opts)
  const count = opts.countTokens ?? estimateTokens
  if (count(messages as Message[]) <= opts.maxTokens) return undefined
  const keepTail = opts.keepTail ?? Math.floor(opts.maxTokens / 2)
  const first = messages[0] as { role?: unknown } | undefined
  const head = first?.role === "system" && !isCompactionSummary(messages[0]) ? 1 : 0
  const split = tailStart(messages, head, keepTail, opts.countTokens)
  if (split <= head) return undefined
  const older = messages.slice(head, split) as Message[]
  const role = opts.style === "anthropic" ? "user" : "system"
  const summary = { role, content: `${SUMMARY_PREFIX}${await opts.summarize(older)}` } as Message
  const reminder = opts.flushToMemory ? [{ role, content: FLUSH_TO_MEMORY_REMINDER } as Message] : []
  return [...messages.slice(0, head), summary, ...reminder, ...messages.slice(split)]
}

/**
 * Compaction as a `beforeLLM` hook: it shortens what that one request sends, and the run's
 * transcript stays as it was (the `compaction` client option replaces the transcript instead).
 *
 * @throws ConfigError for malformed options, at once.
 * @example
 * const client = createClient({ ...llm, hooks: { beforeLLM: compactor({ maxTokens: 100_000, summarize }) } })
 */
export function compactor(
  opts: CompactionOptions & { style?: EndpointStyle },
): NonNullable<Hooks["beforeLLM"]> {
  assertCompactionOptions(opts)
  return async ({ messages }) => {
    const compacted = await compactMessages(messages, opts)
    return compacted ? { messages: compacted } : undefined
  }
}

function isBoundary(message: Message): boolean {
  const m = message as { role?: unknown; content?: unknown }
  if (m.role !== "user") return false
  if (Array.isArray(m.content)) {
    return !m.content.some((b) => (b as { type?: unknown } | null)?.type === "tool_result")
  }
  return true
}

/**
 * Where the kept tail starts: the earliest boundary whose tail fits `keepTail`; else the last
 * boundary; else `messages.length` (the whole body is summarised, nothing can be orphaned).
 */
function tailStart(
  messages: readonly Message[],
  head: number,
  keepTail: number,
  count: ((messages: Message[]) => number) | undefined,
): number {
  // The default estimate is a sum per message: a running suffix sum gives each tail's tokens
  // without re-counting it (quadratic on a long transcript). A custom counter sees each tail.
  let suffix = 0
  const tailTokens = count
    ? (i: number) => count(messages.slice(i) as Message[])
    : (i: number) => {
        suffix += Math.ceil(JSON.stringify(messages[i]).length / 4)
        return suffix
      }
  let split = messages.length
  for (let i = messages.length - 1; i > head; i--) {
    if (tailTokens(i) > keepTail) break
    if (isBoundary(messages[i] as Message)) split = i
  }
  if (split !== messages.length) return split
  for (let i = messages.length - 1; i > head; i--) if (isBoundary(messages[i] as Message)) return i
  return messages.length
}
