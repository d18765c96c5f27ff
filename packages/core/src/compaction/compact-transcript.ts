import type { Dialect } from "../providers/model-turn.js"
import { anthropicDialect } from "../providers/anthropic.js"
import type { Message } from "../types.js"
import { type CompactionOptions, compactMessages } from "./compact-messages.js"

/**
 * @internal The `compaction` option's step before an LLM request: replaces the run's working
 * transcript in place with its compacted form, so the result, checkpoints and the final save all
 * hold it. A throwing `summarize` leaves this request uncompacted: the run goes on.
 */
export async function compactTranscript(
  opts: CompactionOptions,
  dialect: Dialect,
  messages: Message[],
): Promise<void> {
  let compacted: Message[] | undefined
  try {
    compacted = await compactMessages(messages, {
      ...opts,
      style: dialect === anthropicDialect ? "anthropic" : "openai",
    })
  } catch {
    return
  }
  if (compacted) messages.splice(0, messages.length, ...compacted)
}
