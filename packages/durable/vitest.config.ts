import { defineConfig } from "vitest/config"
import { ciRetry, pollDefaults } from "../../vitest.shared.js"

// Not all of sharedTestOptions (../../vitest.shared.ts): test/root-entry.test.ts checks that the
// root entry loads no driver, which needs a module graph of its own; and most of this
// suite's CPU is its child processes, not imports (116 CPU s shared vs 118 isolated).
export default defineConfig({
  test: {
    ...ciRetry(),
    ...pollDefaults,
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
})
