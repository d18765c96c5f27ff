import type { EndpointStyle, Message } from "../types.js"
import { anthropicDialect } from "./anthropic.js"
import { openaiDialect } from "./openai.js"
import { responsesDialect } from "./responses.js"

/**
 * The text of the last assistant message of a transcript in the given endpoint style, read
 * through that style's dialect; "" when the transcript has no assistant message.
 *
 * @example
 * const run = await client.ask("Hi", { id: "c1" })
 * lastAssistantText((await store.get("c1")) ?? [], "openai") === run.text // true
 */
export function lastAssistantText(messages: readonly Message[], style: EndpointStyle = "openai"): string {
  const dialect =
    style === "anthropic" ? anthropicDialect : style === "openai-responses" ? responsesDialect : openaiDialect
  for (let i = messages.length - 1; i >= 0; i--) {
    const text = dialect.assistantText(messages[i] as Message)
    if (text !== undefined) return text
  }
  return ""
}
