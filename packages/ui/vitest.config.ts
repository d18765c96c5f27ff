import { defineConfig } from "vitest/config"
import { sharedTestOptions } from "../../vitest.shared.js"

export default defineConfig({
  test: {
    ...sharedTestOptions,
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 20_000,
    // Type tests (`*.test-d.ts`) pin the hand-copied protocol types against `ai` and
    // `@ag-ui/core`; `vitest run` (the package's `test`) checks them with tsc.
    typecheck: { enabled: true, include: ["src/**/*.test-d.ts"], tsconfig: "./tsconfig.json" },
  },
})
