import type { Message } from "@toolnexus/core"

/**
 * Compact stored bodies for the commonest message shapes: a JSON array whose first element
 * names the shape and whose other elements are the values in a fixed order. Keys, `"type":
 * "function"` and a tool call's `content: null` are what a parked tool round trip stored most
 * of (~45 % of its message bytes). A message is packed only when it has exactly the shape's
 * keys with the shape's value types, so unpacking gives back an equal message; any other
 * message (Anthropic blocks, Responses items, extra keys) is stored as its JSON object, which
 * is also how every older row reads.
 *
 * | message | body |
 * |---|---|
 * | `{ role: "user" \| "system", content: string }` | `["u" \| "s", content]` |
 * | `{ role: "assistant", content: string \| null }` | `["a", content]` |
 * | the same with `tool_calls` (≥ 1, each `{ id, type: "function", function: { name, arguments } }`) | `["a", content, id, name, arguments, …]` |
 * | `{ role: "tool", tool_call_id: string, content: string }` | `["t", tool_call_id, content]` |
 */

type Packed = (string | null)[]

const ROLE_TAGS: Record<string, string> = { user: "u", system: "s" }
const TAG_ROLES: Record<string, "user" | "system"> = { u: "user", s: "system" }

/** @internal The compact body of `message`, or `undefined` when it has no compact shape. */
export function packMessage(message: Message): string | undefined {
  const m = message as unknown as Record<string, unknown>
  const keys = Object.keys(m)
  const role = m.role
  if (role === "tool") {
    if (keys.length !== 3 || typeof m.tool_call_id !== "string" || typeof m.content !== "string") return
    return JSON.stringify(["t", m.tool_call_id, m.content])
  }
  if (role === "assistant") return packAssistant(m, keys.length)
  const tag = typeof role === "string" ? ROLE_TAGS[role] : undefined
  if (tag === undefined || keys.length !== 2 || typeof m.content !== "string") return
  return JSON.stringify([tag, m.content])
}

/**
 * {@link packMessage} of an assistant message with `keys` own keys. Its own function: a resume's
 * checkpoint (a tool result) packs no assistant message before the first request (DESIGN §7).
 */
function packAssistant(m: Record<string, unknown>, keys: number): string | undefined {
  if (typeof m.content !== "string" && m.content !== null) return
  if (keys === 2) return JSON.stringify(["a", m.content])
  if (keys !== 3 || !Array.isArray(m.tool_calls) || m.tool_calls.length === 0) return
  const packed: Packed = ["a", m.content]
  for (const call of m.tool_calls) {
    if (!isPlainCall(call)) return
    packed.push(call.id, call.function.name, call.function.arguments)
  }
  return JSON.stringify(packed)
}

/** @internal The message of a compact body's parsed array, or `undefined` when it is not one. */
export function unpackMessage(packed: unknown[]): Message | undefined {
  const [tag, a, b] = packed
  if (tag === "t") {
    if (packed.length !== 3 || typeof a !== "string" || typeof b !== "string") return
    return { role: "tool", tool_call_id: a, content: b }
  }
  if (tag === "a") {
    if ((typeof a !== "string" && a !== null) || packed.length % 3 !== 2) return
    if (packed.length === 2) return { role: "assistant", content: a }
    const toolCalls = []
    for (let i = 2; i < packed.length; i += 3) {
      const [id, name, args] = packed.slice(i, i + 3)
      if (typeof id !== "string" || typeof name !== "string" || typeof args !== "string") return
      toolCalls.push({ id, type: "function" as const, function: { name, arguments: args } })
    }
    return { role: "assistant", content: a, tool_calls: toolCalls }
  }
  const role = typeof tag === "string" ? TAG_ROLES[tag] : undefined
  if (role === undefined || packed.length !== 2 || typeof a !== "string") return
  return { role, content: a }
}

function isPlainCall(call: unknown): call is { id: string; function: { name: string; arguments: string } } {
  const c = call as Record<string, unknown> | null
  if (typeof c !== "object" || c === null || Object.keys(c).length !== 3) return false
  const f = c.function as Record<string, unknown> | null
  return (
    typeof c.id === "string" &&
    c.type === "function" &&
    typeof f === "object" &&
    f !== null &&
    Object.keys(f).length === 2 &&
    typeof f.name === "string" &&
    typeof f.arguments === "string"
  )
}
