import type { AnthropicContentBlock, Message } from "../src/types.js"

/**
 * Checks that every tool call in the transcript has exactly one result before the next
 * assistant turn, and that no result is orphaned. Returns the problems found.
 */
export function transcriptProblems(messages: Message[]): string[] {
  const problems: string[] = []
  let open = new Map<string, number>()
  const closeTurn = () => {
    for (const [id, count] of open) if (count !== 1) problems.push(`call ${id} has ${count} results`)
    open = new Map()
  }
  for (const m of messages) {
    const msg = m as { role: string; content: unknown; tool_calls?: { id: string }[]; tool_call_id?: string }
    if (msg.role === "assistant") {
      closeTurn()
      for (const c of msg.tool_calls ?? []) open.set(c.id, 0)
      if (Array.isArray(msg.content)) {
        for (const b of msg.content as AnthropicContentBlock[]) if (b.type === "tool_use") open.set(b.id, 0)
      }
    } else if (msg.role === "tool") {
      bump(msg.tool_call_id as string)
    } else if (msg.role === "user" && Array.isArray(msg.content)) {
      for (const b of msg.content as AnthropicContentBlock[])
        if (b.type === "tool_result") bump(b.tool_use_id)
    }
  }
  closeTurn()
  return problems

  function bump(id: string) {
    const count = open.get(id)
    if (count === undefined) problems.push(`result for unknown call ${id}`)
    else open.set(id, count + 1)
  }
}

/** The number of user turns that carry text (not tool results). */
export function userTurns(messages: Message[]): number {
  return messages.filter(
    (m) => m.role === "user" && (typeof m.content === "string" || m.content.some((b) => b.type === "text")),
  ).length
}
