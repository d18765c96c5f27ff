import { type Answer, type ConversationStore, type Request, createInProcessClient } from "@toolnexus/core"

/**
 * A scripted model: the first turn calls `tool` with `prompt`, every later turn answers
 * `final: <the last tool result>`. No network, no LLM.
 */
export function scriptedClient(
  tool: string,
  prompt: string,
  opts: { waitFor?: (req: Request) => Answer | Promise<Answer>; store?: ConversationStore } = {},
) {
  return createInProcessClient({
    model: "scripted",
    ...opts,
    async generate({ messages }) {
      const last = messages.at(-1) as { role: string; content?: unknown }
      if (last.role === "tool") return { content: `final: ${String(last.content)}` }
      return { toolCalls: [{ id: "call_1", name: tool, arguments: { prompt } }] }
    },
  })
}
