import type { InboxItem } from "./types.js"

/** Items on this channel are timer ticks: repeated ones coalesce into one line. */
export const TIMER_CHANNEL = "timer"

/** An alias of {@link TIMER_CHANNEL}: its items are timer ticks too. */
export const TICK_CHANNEL = "tick"

/**
 * @internal Renders drained inbox items as one input block. Each line shows where the item
 * came from; items from outside the handle's ancestor chain are marked untrusted, so the
 * model can weigh them accordingly. Timer ticks (channel `timer` or `tick`) that repeat —
 * same sender, same text — coalesce into the line of the first, with a count.
 */
export function renderInbox(
  items: readonly InboxItem[],
  trusted: (from: string | undefined) => boolean,
): string {
  const lines: string[] = []
  const ticks = new Map<string, { line: string; count: number; index: number }>()
  for (const item of items) {
    const isTrusted = trusted(item.from)
    const line = `${provenance(item, isTrusted)} ${item.text}`
    if (item.channel !== TIMER_CHANNEL && item.channel !== TICK_CHANNEL) {
      lines.push(line)
      continue
    }
    // The two channel names are one channel, so the key leaves the name out.
    const key = JSON.stringify([item.from ?? "host", isTrusted, item.text])
    const seen = ticks.get(key)
    if (seen) {
      seen.count++
      lines[seen.index] = `${seen.line} (×${seen.count})`
    } else {
      ticks.set(key, { line, count: 1, index: lines.length })
      lines.push(line)
    }
  }
  return lines.join("\n")
}

function provenance(item: InboxItem, trusted: boolean): string {
  const parts = [`from: ${item.from ?? "host"}`]
  if (item.channel) parts.push(`channel: ${item.channel}`)
  if (!trusted) parts.push("untrusted")
  return `[${parts.join(", ")}]`
}
