import { expect, it } from "vitest"

// vitest.shared.ts's pollDefaults: `expect.poll` waits past vitest's 1 s default, as a poll for
// a server or a claim's release on a loaded CI machine must.
it("expect.poll waits for a condition that takes longer than a second", async () => {
  const readyAt = Date.now() + 1_500
  await expect.poll(() => Date.now() >= readyAt).toBe(true)
})
