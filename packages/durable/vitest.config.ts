import { defineConfig } from "vitest/config"

// Not sharedTestOptions (../../vitest.shared.ts): test/root-entry.test.ts checks that the
// root entry loads no driver, which needs a module graph of its own; and most of this
// suite's CPU is its child processes, not imports (116 CPU s shared vs 118 isolated).
export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
})
