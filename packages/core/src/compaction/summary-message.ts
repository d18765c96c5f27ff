/** The start of a compaction summary's text: how an earlier summary is recognised (upstream's prefix). */
export const SUMMARY_PREFIX = "[Summary of earlier conversation]\n"

/** @internal True for a message compaction wrote as its summary. */
export function isCompactionSummary(message: unknown): boolean {
  const content = (message as { content?: unknown } | undefined)?.content
  return typeof content === "string" && content.startsWith(SUMMARY_PREFIX)
}
