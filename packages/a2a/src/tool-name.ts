/**
 * @internal A card's name made a valid tool name (§3: `^[a-zA-Z0-9_-]{1,64}$`): every other
 * character becomes `_`, runs collapse, and an empty result falls back to `a2a_agent`.
 */
export function toolNameFor(cardName: string): string {
  const name = cardName
    .replace(/[^a-zA-Z0-9_-]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .slice(0, 64)
  return name || "a2a_agent"
}
