/** Polls `condition` until it holds; fails after `timeoutMs` instead of guessing a delay. */
export async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms: ${condition}`)
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
}
