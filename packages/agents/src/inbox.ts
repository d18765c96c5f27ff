import type { InboxItem } from "./types.js"

/** Items on this channel are timer ticks: repeated ones coalesce into one line. */
export const TICK_CHANNEL = "tick"

/**
 * @internal Renders drained inbox items as one input block. Each line shows where the item
 * came from; items from outside the handle's ancestor chain are marked untrusted, so the
 * model can weigh them accordingly.
 */
export function renderInbox(
  items: readonly InboxItem[],
  trusted: (from: string | undefined) => boolean,
): string {
  const lines: string[] = []
  let lastTick: { key: string; count: number; index: number } | undefined
  for (const item of items) {
    const label = provenance(item, trusted(item.from))
    if (item.channel === TICK_CHANNEL) {
      const key = `${label}\u0000${item.text}`
      if (lastTick?.key === key) {
        lastTick.count++
        lines[lastTick.index] = `${label} ${item.text} (×${lastTick.count})`
        continue
      }
      lastTick = { key, count: 1, index: lines.length }
    }
    lines.push(`${label} ${item.text}`)
  }
  return lines.join("\n")
}

function provenance(item: InboxItem, trusted: boolean): string {
  const parts = [`from: ${item.from ?? "host"}`]
  if (item.channel) parts.push(`channel: ${item.channel}`)
  if (!trusted) parts.push("untrusted")
  return `[${parts.join(", ")}]`
}
