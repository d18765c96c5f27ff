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
 * The text of the last assistant turn of a transcript in the given endpoint style (for
 * Responses, the text of that turn's message items), read through that style's dialect; ""
 * when the transcript has no assistant turn.
 *
 * @example
 * const run = await client.ask("Hi", { id: "c1" })
 * lastAssistantText((await store.get("c1")) ?? [], "openai") === run.text // true
 */
export function lastAssistantText(messages: readonly Message[], style: EndpointStyle = "openai"): string {
  const dialect = DIALECTS[style] ?? openaiDialect
  const turn = dialect.lastAssistantTurn(messages)
  let text = ""
  if (turn)
    for (let i = turn.start; i <= turn.end; i++) text += dialect.assistantText(messages[i] as Message) ?? ""
  return text
}
