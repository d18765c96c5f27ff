import type { Dialect } from "../providers/model-turn.js"
import { anthropicDialect } from "../providers/anthropic.js"
import type { Message } from "../types.js"
import { type CompactionOptions, compactMessages } from "./compact-messages.js"

/**
 * @internal How compaction changed a transcript: `remove` messages at `at` gave way to `insert`
 * (the summary, and the reminder). Small, so an executor journals it instead of the transcript.
 */
export interface CompactionEdit {
  at: number
  remove: number
  insert: Message[]
}

/**
 * @internal The `compaction` option's step before an LLM request: replaces the run's working
 * transcript in place with its compacted form, so the result, checkpoints and the final save all
 * hold it. A throwing `summarize` leaves this request uncompacted: the run goes on. Under an
 * executor, `journaled` runs the decision as a step (`compact:<n>`), so a replay applies the
 * journaled edit and never calls `summarize` again.
 */
export async function compactTranscript(
  opts: CompactionOptions,
  dialect: Dialect,
  messages: Message[],
  journaled?: (decide: () => Promise<CompactionEdit | null>) => Promise<CompactionEdit | null>,
): Promise<void> {
  const decide = async (): Promise<CompactionEdit | null> => {
    let compacted: Message[] | undefined
    try {
      compacted = await compactMessages(messages, {
        ...opts,
        style: dialect === anthropicDialect ? "anthropic" : "openai",
      })
    } catch {
      return null
    }
    return compacted ? editOf(messages, compacted) : null
  }
  const edit = await (journaled ? journaled(decide) : decide())
  if (edit) messages.splice(edit.at, edit.remove, ...edit.insert)
}

/** The edit that turns `before` into `after`: what lies between their shared head and tail. */
function editOf(before: readonly Message[], after: readonly Message[]): CompactionEdit {
  const most = Math.min(before.length, after.length)
  let head = 0
  while (head < most && before[head] === after[head]) head++
  let tail = 0
  while (tail < most - head && before[before.length - 1 - tail] === after[after.length - 1 - tail]) tail++
  return {
    at: head,
    remove: before.length - head - tail,
    insert: after.slice(head, after.length - tail),
  }
}
