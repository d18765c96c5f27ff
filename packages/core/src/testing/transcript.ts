import type { Message } from "../types.js"

interface LooseItem {
  role?: string
  type?: string
  content?: unknown
  tool_calls?: { id: string }[]
  tool_call_id?: string
  call_id?: string
}

interface LooseBlock {
  type: string
  id?: string
  tool_use_id?: string
}

/** A message or item a model turn produced, in any of the three styles. */
function isTurnItem(item: LooseItem): boolean {
  if (item.role === "assistant") return true
  return item.role === undefined && typeof item.type === "string" && !item.type.endsWith("_output")
}

/**
 * Problems of a transcript in any of the three styles: a tool call without exactly one result before the
 * next assistant turn, or a result for no call. An empty list means balanced.
 */
export function transcriptProblems(messages: readonly Message[]): string[] {
  const problems: string[] = []
  let open = new Map<string, number>()
  let inTurn = false
  const closeTurn = () => {
    for (const [id, count] of open) if (count !== 1) problems.push(`call ${id} has ${count} results`)
    open = new Map()
  }
  const bump = (id: string | undefined) => {
    const count = open.get(String(id))
    if (count === undefined) problems.push(`result for unknown call ${id}`)
    else open.set(String(id), count + 1)
  }
  for (const raw of messages) {
    const msg = raw as unknown as LooseItem
    const blocks = Array.isArray(msg.content) ? (msg.content as LooseBlock[]) : []
    // A Responses turn is several items; it starts where the run of turn items starts.
    const turn = isTurnItem(msg)
    if (turn && !inTurn) closeTurn()
    inTurn = turn
    if (msg.role === "assistant") {
      for (const call of msg.tool_calls ?? []) open.set(call.id, 0)
      for (const block of blocks) if (block.type === "tool_use") open.set(String(block.id), 0)
    } else if (msg.type === "function_call") {
      open.set(String(msg.call_id), 0)
    } else if (msg.type === "function_call_output") {
      bump(msg.call_id)
    } else if (msg.role === "tool") {
      bump(msg.tool_call_id)
    } else if (msg.role === "user") {
      for (const block of blocks) if (block.type === "tool_result") bump(block.tool_use_id)
    }
  }
  closeTurn()
  return problems
}

/** User messages that carry text, as opposed to Anthropic's tool-result-only user messages. */
export function userTurns(messages: readonly Message[]): number {
  return messages.filter((raw) => {
    const msg = raw as unknown as LooseItem
    if (msg.role !== "user") return false
    if (typeof msg.content === "string") return true
    return Array.isArray(msg.content) && (msg.content as LooseBlock[]).some((b) => /text$/.test(b.type))
  }).length
}
