import type { EndpointStyle, Message } from "../types.js"
import { anthropicDialect } from "./anthropic.js"
import type { Dialect } from "./model-turn.js"
import { openaiDialect } from "./openai.js"
import { responsesDialect } from "./responses.js"

/** Every endpoint style's dialect: a new style fails to compile until it is listed here. */
const DIALECTS: Record<EndpointStyle, Dialect> = {
  openai: openaiDialect,
  anthropic: anthropicDialect,
  "openai-responses": responsesDialect,
}

/**
 * The text of the last assistant message of a transcript in the given endpoint style, read
 * through that style's dialect; "" when the transcript has no assistant message.
 *
 * @example
 * const run = await client.ask("Hi", { id: "c1" })
 * lastAssistantText((await store.get("c1")) ?? [], "openai") === run.text // true
 */
export function lastAssistantText(messages: readonly Message[], style: EndpointStyle = "openai"): string {
  const dialect = DIALECTS[style] ?? openaiDialect
  for (let i = messages.length - 1; i >= 0; i--) {
    const text = dialect.assistantText(messages[i] as Message)
    if (text !== undefined) return text
  }
  return ""
}
