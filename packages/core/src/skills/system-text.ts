/**
 * @internal The system text sent: `systemPrompt` and the toolkit's skill catalog, the non-empty
 * ones joined by a blank line (upstream's rule); `undefined` when both are empty.
 */
export function systemText(
  systemPrompt: string | undefined,
  skillsPrompt: string | undefined,
): string | undefined {
  if (!skillsPrompt) return systemPrompt
  return systemPrompt ? `${systemPrompt}\n\n${skillsPrompt}` : skillsPrompt
}
