import type { Message } from "../src/types.js"

interface LooseItem {
  role?: string
  type?: string
  content?: unknown
  tool_calls?: { id: string }[]
  tool_call_id?: string
  call_id?: string
}

/** A message or item a model turn produced, in any of the three styles. */
function isTurnItem(item: LooseItem): boolean {
  if (item.role === "assistant") return true
  return item.role === undefined && typeof item.type === "string" && !item.type.endsWith("_output")
}

/**
 * Checks that every tool call in the transcript has exactly one result before the next
 * assistant turn, and that no result is orphaned. Returns the problems found.
 */
export function transcriptProblems(messages: Message[]): string[] {
  const problems: string[] = []
  let open = new Map<string, number>()
  let inTurn = false
  const closeTurn = () => {
    for (const [id, count] of open) if (count !== 1) problems.push(`call ${id} has ${count} results`)
    open = new Map()
  }
  for (const m of messages) {
    const msg = m as LooseItem
    const blocks = Array.isArray(msg.content)
      ? (msg.content as { type: string; id?: string; tool_use_id?: string }[])
      : []
    const turn = isTurnItem(msg)
    if (turn && !inTurn) closeTurn()
    inTurn = turn
    if (msg.role === "assistant") {
      for (const c of msg.tool_calls ?? []) open.set(c.id, 0)
      for (const b of blocks) if (b.type === "tool_use") open.set(String(b.id), 0)
    } else if (msg.type === "function_call") {
      open.set(String(msg.call_id), 0)
    } else if (msg.type === "function_call_output") {
      bump(String(msg.call_id))
    } else if (msg.role === "tool") {
      bump(msg.tool_call_id as string)
    } else if (msg.role === "user") {
      for (const b of blocks) if (b.type === "tool_result") bump(String(b.tool_use_id))
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
  return messages.filter((m) => {
    const msg = m as LooseItem
    if (msg.role !== "user") return false
    if (typeof msg.content === "string") return true
    return Array.isArray(msg.content) && msg.content.some((b: { type?: string }) => /text/.test(b.type ?? ""))
  }).length
}
