import {
  type Client,
  type ConversationStore,
  createInProcessClient,
  type GenerateRequest,
  type GenerateReply,
} from "@toolnexus/core"

/**
 * One turn of the scripted support agent: asked to refund, it calls `refund`; asked the time,
 * `browser_time`; asked about the receipt or e-mail, `ask_email`; given tool results, it
 * reports them. A real model follows the same tools by their descriptions.
 */
export async function scriptedTurn({ messages }: GenerateRequest): Promise<GenerateReply> {
  const lastAssistant = messages.findLastIndex((m) => (m as { role: string }).role === "assistant")
  const results = messages
    .slice(lastAssistant + 1)
    .filter((m) => (m as { role: string }).role === "tool")
    .map((m) => String((m as { content: unknown }).content))
  if (results.length > 0) {
    const text = results
      .map((r) => (r.startsWith("declined:") ? `I did not do it: it was ${r}` : r))
      .join(" ")
    return { content: text }
  }
  const user = messages.findLast((m) => (m as { role: string }).role === "user") as
    | { content: unknown }
    | undefined
  const prompt = typeof user?.content === "string" ? user.content : ""
  if (/refund/i.test(prompt)) {
    const orderId = /\d+/.exec(prompt)?.[0] ?? "42"
    return { toolCalls: [{ name: "refund", arguments: { orderId, amount: 30 } }] }
  }
  if (/time|clock/i.test(prompt)) return { toolCalls: [{ name: "browser_time", arguments: {} }] }
  if (/mail|receipt/i.test(prompt)) return { toolCalls: [{ name: "ask_email", arguments: {} }] }
  return {
    content: "Hello! Ask me to refund an order, what time it is where you are, or where to send the receipt.",
  }
}

/** The scripted model's client, keeping its chats in `store`. */
export function scriptedClient(store: ConversationStore): Client {
  return createInProcessClient({ model: "scripted-support-agent", generate: scriptedTurn, store })
}
